package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/functiongit/gittest"
)

// sdkVersion is the published client that proves the wire: an existing client of the API must
// work against Switchboard unchanged.
const sdkVersion = "0.57.0"

// installSDK installs @zavudev/sdk from the npm registry once, in a cache outside the
// repository, and returns the directory whose node_modules holds it.
func installSDK(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: the published client's tests need Node.js 20 and npm (apt-get install nodejs npm)", tool)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "switchboard", "e2e-sdk", sdkVersion)
	manifest := filepath.Join(dir, "node_modules", "@zavudev", "sdk", "package.json")
	if b, err := os.ReadFile(manifest); err == nil {
		var p struct{ Version string }
		if json.Unmarshal(b, &p) == nil && p.Version == sdkVersion {
			return dir
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	install := exec.Command("npm", "install", "--no-audit", "--no-fund", "--save-exact", "@zavudev/sdk@"+sdkVersion)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install @zavudev/sdk@%s: %v\n%s", sdkVersion, err, out)
	}
	return dir
}

// runSDK runs the script test/e2e/sdk/<name> with node against the API at url with key; the
// script throws (and the test fails with its output) when the API answers other than the
// client expects.
func runSDK(t *testing.T, name, url, key string, env ...string) string {
	t.Helper()
	dir := installSDK(t)
	script, err := filepath.Abs(filepath.Join("sdk", name))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), append([]string{"SDK_DIR=" + dir, "API_URL=" + url, "API_KEY=" + key}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", name, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestAgentsThroughThePublishedClient drives every agent operation of @zavudev/sdk against the
// built binary (`switchboard dev`, its seeded sender and test key), and an inbound message
// answered by the agent through the sandbox model: `make run` shows an agent answering with no
// provider account.
func TestAgentsThroughThePublishedClient(t *testing.T) {
	runDevScript(t, "agents.cjs")
}

// TestKnowledgeAndFlowsThroughThePublishedClient drives every knowledge-base, document and flow
// operation of @zavudev/sdk against the built binary: an agent answers from a document and runs
// a flow over several messages, through the sandbox.
func TestKnowledgeAndFlowsThroughThePublishedClient(t *testing.T) {
	runDevScript(t, "knowledge.cjs")
}

// TestCallsThroughThePublishedClient drives every call operation of @zavudev/sdk against the
// built binary: a test key's call through the sandbox's scripted caller, answered by the
// sender's agent through the sandbox model, from create to completed with its transcript.
func TestCallsThroughThePublishedClient(t *testing.T) {
	runDevScript(t, "calls.cjs")
}

// TestNumbersThroughThePublishedClient drives the phone-number operations of @zavudev/sdk built
// so far against the built binary with a test key: the sandbox's numbers for sale, bought, listed,
// read, renamed, assigned and released.
func TestNumbersThroughThePublishedClient(t *testing.T) {
	runDevScript(t, "numbers.cjs")
}

// TestRegulatoryThroughThePublishedClient drives @zavudev/sdk's addresses, regulatory documents
// (the file uploaded to the upload URL it asks for) and URL verification against the built
// binary, with a test key.
func TestRegulatoryThroughThePublishedClient(t *testing.T) {
	runDevScript(t, "regulatory.cjs")
}

// TestRecipientListsThroughThePublishedClient lists one recipient's messages through
// @zavudev/sdk's messages.list({ to }) against the built binary, with a test key, and deletes a
// contact (contacts.delete): the person is erased, and their address lists nothing.
func TestRecipientListsThroughThePublishedClient(t *testing.T) {
	runDevScript(t, "recipients.cjs")
}

// TestWhatsAppSyncThroughThePublishedClient drives @zavudev/sdk's WhatsApp coexistence sync
// against the built binary, with a test key: the dev system's sandbox WhatsApp number is a
// coexistence one.
func TestWhatsAppSyncThroughThePublishedClient(t *testing.T) {
	runDevScript(t, "whatsapp-sync.cjs")
}

// TestFunctionsThroughThePublishedClient drives every functions operation of @zavudev/sdk against
// the built binary with a test key: the client's example function, grown to reply, deployed,
// answering an inbound message through the sandbox and HTTP on its public URL with a secret,
// triggers, logs, a second version and a rollback; then linked to a repository on a loopback
// Git server (`switchboard dev --git-base-url`) and deployed from its branch; v2's list and
// pause, and delete.
func TestFunctionsThroughThePublishedClient(t *testing.T) {
	git := gittest.NewServer(t)
	sha := git.Commit(t, "acme/order-bot", "main", map[string]string{
		"index.ts": "import { defineFunction } from '@zavudev/functions';\n" +
			"export default defineFunction(async (event) => {\n" +
			"  if (event.type === 'http') return { statusCode: 200, body: { from: 'git' } };\n" +
			"});\n",
	}, "from git")
	d := startDev(t, "--git-base-url", git.BaseURL)
	out := runSDK(t, "functions.cjs", d.env["SWITCHBOARD_URL"], d.env["SWITCHBOARD_API_KEY"], "GIT_SHA="+sha)
	t.Log(out)
	if !strings.Contains(out, "ok") {
		t.Fatalf("the script ended without ok:\n%s", out)
	}
}

// runDevScript runs a script of test/e2e/sdk against `switchboard dev` (its seeded sender and
// test key) and fails unless it ends with ok.
func runDevScript(t *testing.T, script string) {
	t.Helper()
	d := startDev(t)
	out := runSDK(t, script, d.env["SWITCHBOARD_URL"], d.env["SWITCHBOARD_API_KEY"])
	t.Log(out)
	if !strings.Contains(out, "ok") {
		t.Fatalf("the script ended without ok:\n%s", out)
	}
}

// TestWebhookDeliveryLogThroughThePublishedClient reads the webhook delivery log, replays a
// delivery, and reads and enables its endpoint through @zavudev/sdk's generic get and post against
// the built binary (the routes are Switchboard's own).
func TestWebhookDeliveryLogThroughThePublishedClient(t *testing.T) {
	runDevScript(t, "webhook-deliveries.cjs")
}

// TestConformanceThroughThePublishedClient checks, through @zavudev/sdk against the built binary,
// what a new user found answered against the spec (issue 32): introspect.validatePhone of a number
// libphonenumber calls invalid names its region, and senders.update asking for email receiving
// on a sender with no email address is ignored (shows false) rather than refused.
func TestConformanceThroughThePublishedClient(t *testing.T) {
	runDevScript(t, "conformance.cjs")
}
