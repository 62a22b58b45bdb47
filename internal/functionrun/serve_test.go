package functionrun

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveSource is the function the serve-mode tests run: logs, a throw, a sleep, a tool.
const serveSource = `
import { defineFunction, defineTool } from '@zavudev/functions';

defineTool({
  name: 'double',
  description: 'Doubles n.',
  parameters: { type: 'object', properties: { n: { type: 'number' } } },
  handler: async (args: { n: number }, ctx) => { ctx.log('doubling', args.n); return { doubled: args.n * 2 }; },
});

export default defineFunction(async (event: any, ctx) => {
  if (event.fail) throw new Error('it failed: ' + event.fail);
  if (event.sleep) await new Promise((r) => setTimeout(r, event.sleep));
  ctx.log('hello', event.name);
  console.warn('careful');
  process.stdout.write('raw out\n');
  return { greeting: 'hi ' + event.name, id: ctx.invocationId, fn: ctx.functionId, secret: ctx.secrets.MY_SECRET ?? null };
});
`

const serveKey = "zavu_test_key"

// bundleServer serves one bundle to the Bearer key serveKey, once gate is closed (nil: at once).
type bundleServer struct {
	*httptest.Server
	mu       sync.Mutex
	fetches  int
	badAuths int
}

func newBundleServer(tb testing.TB, bundle []byte, gate <-chan struct{}) *bundleServer {
	tb.Helper()
	s := &bundleServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+serveKey {
			s.mu.Lock()
			s.badAuths++
			s.mu.Unlock()
			http.Error(w, `{"message":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		s.mu.Lock()
		s.fetches++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/javascript")
		w.Write(bundle)
	}))
	tb.Cleanup(s.Close)
	return s
}

// counts are the bundles served and the fetches refused.
func (s *bundleServer) counts() (fetches, badAuths int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches, s.badAuths
}

func sha256Of(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// freePort is a port nothing listens on now.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// servingRunner is runner.js in serve mode, as a process of the test.
type servingRunner struct {
	url    string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	exited chan struct{}
}

// startServing starts `node runner.js --serve <port>` with env (and PATH); it is killed at the
// test's end. The test is skipped without node.
func startServing(tb testing.TB, env map[string]string) *servingRunner {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Skip("node is not installed")
	}
	runner, err := filepath.Abs("runner.js")
	if err != nil {
		tb.Fatal(err)
	}
	port := freePort(tb)
	cmd := exec.Command(node, "--max-old-space-size=128", runner, "--serve", fmt.Sprint(port))
	cmd.Dir = tb.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SWITCHBOARD_WORK_DIR=" + filepath.Join(tb.TempDir(), "work")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	r := &servingRunner{url: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(r.exited) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.exited
	})
	return r
}

// servingEnv is a serve-mode runner's environment for bundle at srv.
func servingEnv(srv *bundleServer, sha string) map[string]string {
	return map[string]string{
		"SWITCHBOARD_BUNDLE_URL":    srv.URL + "/v1/functions/bundles/" + sha,
		"SWITCHBOARD_BUNDLE_SHA256": sha,
		"ZAVU_API_KEY":              serveKey,
		"SWITCHBOARD_FUNCTION_ID":   "greeter",
		"MY_SECRET":                 "s3cret",
	}
}

// healthz is the status of GET /healthz, 0 when nothing answers.
func (r *servingRunner) healthz() int {
	resp, err := http.Get(r.url + "/healthz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitHealthy waits until /healthz is 200.
func (r *servingRunner) waitHealthy(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for r.healthz() != http.StatusOK {
		select {
		case <-r.exited:
			tb.Fatalf("the runner exited: %s", r.stderr)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the runner never became healthy: %s", r.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveAnswer is runner.js's answer, as the tests read it.
type serveAnswer struct {
	OK     bool            `json:"ok"`
	Value  json.RawMessage `json:"value"`
	Reason string          `json:"reason"`
	Error  string          `json:"error"`
	Logs   []struct {
		TS int64  `json:"ts"`
		S  string `json:"s"`
		M  string `json:"m"`
	} `json:"logs"`
}

func (r *servingRunner) invoke(tb testing.TB, id, event string, timeoutMs int) serveAnswer {
	tb.Helper()
	body := fmt.Sprintf(`{"id":%q,"event":%s,"timeoutMs":%d}`, id, event, timeoutMs)
	resp, err := http.Post(r.url+"/invoke", "application/json", strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("POST /invoke: %s: %s", resp.Status, data)
	}
	var a serveAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		tb.Fatalf("answer %s: %v", data, err)
	}
	return a
}

func TestServeMode(t *testing.T) {
	t.Parallel()
	bundle := build(t, serveSource)
	gate := make(chan struct{})
	srv := newBundleServer(t, bundle, gate)
	r := startServing(t, servingEnv(srv, sha256Of(bundle)))

	// Before the bundle arrives the runner answers, but is not healthy.
	deadline := time.Now().Add(20 * time.Second)
	for r.healthz() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the runner never listened: %s", r.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := r.healthz(); got != http.StatusServiceUnavailable {
		t.Fatalf("healthz before the load = %d, want 503", got)
	}
	close(gate)
	r.waitHealthy(t)
	if f, b := srv.counts(); f != 1 || b != 0 {
		t.Errorf("fetches %d, bad auths %d", f, b)
	}

	// Success: the value, and the lines with their streams and times.
	a := r.invoke(t, "inv-1", `{"name":"Ada"}`, 3000)
	if !a.OK {
		t.Fatalf("failed: %+v", a)
	}
	var v map[string]any
	if err := json.Unmarshal(a.Value, &v); err != nil {
		t.Fatal(err)
	}
	if v["greeting"] != "hi Ada" || v["id"] != "inv-1" || v["fn"] != "greeter" || v["secret"] != "s3cret" {
		t.Errorf("value %s", a.Value)
	}
	var lines []string
	for _, l := range a.Logs {
		lines = append(lines, l.S+": "+l.M)
		if l.TS <= 0 || time.Since(time.UnixMilli(l.TS)) > time.Minute {
			t.Errorf("line %q has time %d", l.M, l.TS)
		}
	}
	if want := "log: hello Ada|warn: careful|stdout: raw out"; strings.Join(lines, "|") != want {
		t.Errorf("logs %q, want %q", lines, want)
	}

	// A throw.
	a = r.invoke(t, "inv-2", `{"fail":"boom"}`, 3000)
	if a.OK || a.Reason != "error" || !strings.Contains(a.Error, "it failed: boom") || a.Value != nil {
		t.Errorf("throw: %+v", a)
	}

	// A timeout, answered at its time.
	start := time.Now()
	a = r.invoke(t, "inv-3", `{"sleep":5000}`, 200)
	if a.OK || a.Reason != "timeout" || a.Error != "timed out after 200ms" {
		t.Errorf("timeout: %+v", a)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the timeout took %v", d)
	}

	// A tool event, and a tool that does not exist.
	a = r.invoke(t, "inv-4", `{"type":"tool","data":{"tool":"double","arguments":{"n":21}}}`, 3000)
	if !a.OK || string(a.Value) != `{"doubled":42}` || len(a.Logs) != 1 || a.Logs[0].M != "doubling 21" {
		t.Errorf("tool: %+v", a)
	}
	a = r.invoke(t, "inv-5", `{"type":"tool","data":{"tool":"nope"}}`, 3000)
	if a.OK || a.Reason != "error" || a.Error != "the function has no tool nope" {
		t.Errorf("unknown tool: %+v", a)
	}

	// Invocations run at once: three of 400ms take well under 1.2s.
	start = time.Now()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			a := r.invoke(t, fmt.Sprintf("par-%d", i), `{"sleep":400,"name":"p"}`, 3000)
			if !a.OK || !strings.Contains(string(a.Value), fmt.Sprintf(`"id":"par-%d"`, i)) {
				t.Errorf("parallel %d: %+v", i, a)
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d > 1100*time.Millisecond {
		t.Errorf("three parallel invocations took %v", d)
	}

	// A body over 6 MiB.
	big := `{"id":"big","event":{"pad":"` + strings.Repeat("x", 6<<20) + `"},"timeoutMs":1000}`
	resp, err := http.Post(r.url+"/invoke", "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 6 MiB+ body: %s, want 413", resp.Status)
	}
	// The runner serves on.
	if a := r.invoke(t, "inv-6", `{"name":"again"}`, 3000); !a.OK {
		t.Errorf("after the 413: %+v", a)
	}
	if got := r.healthz(); got != http.StatusOK {
		t.Errorf("healthz after the load = %d", got)
	}
}

// A bundle whose sha256 is not the one given is never run.
func TestServeRefusesAnotherBundle(t *testing.T) {
	t.Parallel()
	bundle := build(t, serveSource)
	srv := newBundleServer(t, bundle, nil)
	r := startServing(t, servingEnv(srv, strings.Repeat("ab", 32)))
	waitExit(t, r, 1, "the bundle's sha256 is "+sha256Of(bundle)+", not "+strings.Repeat("ab", 32)+": refusing to run it")
}

// Without the function's key the API gives no bundle, and the runner gives up.
func TestServeWithoutTheKey(t *testing.T) {
	t.Parallel()
	bundle := build(t, serveSource)
	srv := newBundleServer(t, bundle, nil)
	env := servingEnv(srv, sha256Of(bundle))
	env["ZAVU_API_KEY"] = "another"
	r := startServing(t, env)
	waitExit(t, r, 1, "fetching the bundle: HTTP 401")
	if _, b := srv.counts(); b != 1 {
		t.Errorf("%d unauthorised fetches, want 1 (a 4xx is not retried)", b)
	}
}

// waitExit waits for the runner to exit with code, its stderr containing msg.
func waitExit(tb testing.TB, r *servingRunner, code int, msg string) {
	tb.Helper()
	select {
	case <-r.exited:
	case <-time.After(20 * time.Second):
		tb.Fatalf("the runner did not exit: %s", r.stderr)
	}
	if got := r.cmd.ProcessState.ExitCode(); got != code {
		tb.Errorf("exit code %d, want %d; stderr %s", got, code, r.stderr)
	}
	if !strings.Contains(r.stderr.String(), msg) {
		tb.Errorf("stderr %q does not say %q", r.stderr, msg)
	}
}
