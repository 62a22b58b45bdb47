package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/functiongit"
	"github.com/switchboard-io/switchboard/internal/functiongit/gittest"
)

// fastFunctions builds and runs at once, tries a failed run again after 200 ms, and serves
// public URLs at the API's own address.
func fastFunctions(c *app.Config) {
	c.Functions = app.FunctionOptions{RetrySchedule: []time.Duration{200 * time.Millisecond}, BuildPoll: 20 * time.Millisecond,
		RunPoll: 20 * time.Millisecond}
	if c.PublicURL == "" {
		c.PublicURL = "http://" + c.Listener.Addr().String()
	}
}

// echoFunction is the client's example function grown to answer: it logs, replies to inbound
// messages through the project's API, and answers HTTP with its version and a secret.
const echoFunction = `import { defineFunction } from '@zavudev/functions';

export default defineFunction(async (event, ctx) => {
  ctx.log('received', event.type);
  if (event.type === 'message.inbound') {
    await ctx.send({ to: event.data.from, text: 'Echo: ' + event.data.text });
  }
  if (event.type === 'http') {
    return { statusCode: 201, headers: { 'x-version': '%d' }, body: { version: %d, greeting: ctx.secrets.GREETING ?? null, path: event.data.path, q: event.data.query.q } };
  }
  if (event.type === 'cron') {
    console.log('tick', event.data.cron);
  }
  return { ok: true };
});
`

func echo(version int) string { return fmt.Sprintf(echoFunction, version, version) }

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitDeployed polls a deployment until it is active or failed, and returns it.
func waitDeployed(t *testing.T, in *instance, key, id string) map[string]any {
	t.Helper()
	var d map[string]any
	waitFor(t, func() bool {
		r := in.get("/v1/functions/deployments/"+id, key)
		d, _ = r.body["deployment"].(map[string]any)
		return d != nil && (d["status"] == "active" || d["status"] == "failed")
	})
	return d
}

func TestFunctions(t *testing.T) {
	in := start(t, fastSandbox, fastFunctions)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	ctx := context.Background()

	// Bad input changes nothing: each refusal names its fields.
	for _, c := range []struct{ body, field string }{
		{`{"slug":"bot","sourceCode":"x"}`, "name"},
		{`{"name":"Bot","slug":"Bad_Slug"}`, "slug"},
		{`{"name":"Bot","slug":"triggers"}`, "slug"},
		{`{"name":"Bot","slug":"bot","memoryMb":300}`, "memoryMb"},
		{`{"name":"Bot","slug":"bot","timeoutSec":901}`, "timeoutSec"},
		{`{"name":"Bot","slug":"bot","files":{"package.json":"{}","index.ts":""}}`, "files.package.json"},
		{`{"name":"Bot","slug":"bot","files":{"../x.ts":""}}`, "files.../x.ts"},
		{`{"name":"Bot","slug":"bot","files":{"lib/a.ts":""},"entrypoint":"index.ts"}`, "entrypoint"},
		{`{"name":"Bot","slug":"bot","sourceCode":"x","dependencies":{"@zavudev/functions":"1"}}`, "dependencies.@zavudev/functions"},
		{`{"name":"Bot","slug":"bot","sourceCode":"x","dependencies":{"left-pad":"git+https://x"}}`, "dependencies.left-pad"},
	} {
		r := in.post("/v1/functions", key, c.body)
		if r.status != 400 || r.body["code"] != "invalid_request" || !slices.Contains(fieldPaths(r), c.field) {
			t.Errorf("create %s = %d %v, want 400 on %s", c.body, r.status, r.body, c.field)
		}
	}
	files := map[string]string{}
	for i := range 201 {
		files[fmt.Sprintf("f%d.ts", i)] = "export {}"
	}
	many, _ := json.Marshal(map[string]any{"name": "Bot", "slug": "bot", "files": files, "entrypoint": "f0.ts"})
	if r := in.post("/v1/functions", key, string(many)); r.status != 400 || !slices.Contains(fieldPaths(r), "files") {
		t.Errorf("201 files = %d %v", r.status, r.body)
	}
	if n := in.count(`SELECT count(*) FROM function_drafts`); n != 0 {
		t.Fatalf("refused creates left %d drafts", n)
	}
	// Writes need a full-access key.
	reader := newKey(t, in, acme, apikey.Test, "messages:read")
	if r := in.post("/v1/functions", reader, `{"name":"Bot","slug":"bot","sourceCode":"x"}`); r.status != 403 {
		t.Errorf("create with messages:read = %d %v", r.status, r.body)
	}

	// Create: a draft, a key of its own in its Secret, nothing deployed.
	r := in.post("/v1/functions", key, `{"name":"Echo bot","slug":"echo-bot","description":"Echoes","sourceCode":`+jsonString(echo(1))+`}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	fn := r.body["function"].(map[string]any)
	if fn["id"] != "echo-bot" || fn["status"] != "draft" || fn["runtime"] != "nodejs24" || fn["memoryMb"] != 256.0 ||
		fn["timeoutSec"] != 10.0 || fn["httpEnabled"] != false || fn["publicUrl"] != nil || fn["activeDeploymentId"] != nil || fn["mode"] != "test" {
		t.Fatalf("created = %v", fn)
	}
	if r := in.post("/v1/functions", key, `{"name":"Again","slug":"echo-bot"}`); r.status != 400 || !slices.Contains(fieldPaths(r), "slug") {
		t.Errorf("a taken slug = %d %v", r.status, r.body)
	}
	var f v1alpha1.Function
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "echo-bot"}, &f); err != nil {
		t.Fatal(err)
	}
	var secret corev1.Secret
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "echo-bot-env"}, &secret); err != nil || !strings.HasPrefix(string(secret.Data["ZAVU_API_KEY"]), "svc_test_") {
		t.Fatalf("the function's key: %v", err)
	}
	keyID := f.Annotations[v1alpha1.FunctionKeyIDAnnotation]

	// Deploy: pending at once, active once built; the function serves it.
	r = in.post("/v1/functions/echo-bot/deploy", key, "")
	if r.status != 200 {
		t.Fatalf("deploy = %d %v", r.status, r.body)
	}
	d1 := waitDeployed(t, in, key, r.body["deployment"].(map[string]any)["id"].(string))
	if d1["status"] != "active" || d1["version"] != 1.0 || d1["bundleBytes"] == nil || !strings.Contains(fmt.Sprint(d1["buildLogs"]), "esbuild") {
		t.Fatalf("deployment 1 = %v", d1)
	}
	fn = in.get("/v1/functions/echo-bot", key).body["function"].(map[string]any)
	if fn["status"] != "active" || fn["activeDeploymentId"] != d1["id"] {
		t.Errorf("after deploy = %v", fn)
	}
	waitFor(t, func() bool {
		_ = in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "echo-bot"}, &f)
		return f.Status.Phase == v1alpha1.FunctionActive && f.Status.ActiveDeployment == d1["id"]
	})
	// Its bundle, by digest, for the project's keys only (the kubernetes runtime's pods).
	var sum string
	if err := in.poolRow(`SELECT bundle_sha256 FROM function_deployments WHERE id = $1`, d1["id"]).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if r := in.get("/v1/functions/bundles/"+sum, key); r.status != 200 || !strings.Contains(string(r.raw), "Echo: ") || r.header.Get("ETag") != `"`+sum+`"` {
		t.Errorf("bundle = %d %q", r.status, r.header)
	}
	other := newKey(t, in, newProject(t, in, v1alpha1.ProjectSpec{}), apikey.Test)
	if r := in.get("/v1/functions/bundles/"+sum, other); r.status != 404 {
		t.Errorf("another project's bundle = %d", r.status)
	}

	// Triggers: once per event and sender; a second add skips; cron needs a valid expression.
	r = in.post("/v1/functions/echo-bot/triggers", key, `{"eventTypes":["message.inbound"],"senderIds":[null]}`)
	if r.status != 201 || r.body["added"] != 1.0 || r.body["skipped"] != 0.0 {
		t.Fatalf("add trigger = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/functions/echo-bot/triggers", key, `{"eventTypes":["message.inbound"],"senderIds":[null]}`); r.body["added"] != 0.0 || r.body["skipped"] != 1.0 {
		t.Errorf("the same trigger again = %d %v", r.status, r.body)
	}
	for _, body := range []string{`{"eventTypes":["cron"],"cron":"every minute"}`, `{"eventTypes":["cron"]}`, `{"eventTypes":["message.nope"]}`,
		`{"eventTypes":["message.inbound"],"senderIds":["no-such-sender"]}`} {
		if r := in.post("/v1/functions/echo-bot/triggers", key, body); r.status != 400 {
			t.Errorf("triggers %s = %d %v", body, r.status, r.body)
		}
	}

	// An inbound message runs it: it replies through the API with its own key, and logs.
	receive(t, in, key, `{"from":"+15005550100","text":"ping"}`)
	var reply map[string]any
	waitFor(t, func() bool {
		for _, m := range in.get("/v1/messages?limit=20", key).body["items"].([]any) {
			if m := m.(map[string]any); m["text"] == "Echo: ping" {
				reply = m
				return true
			}
		}
		return false
	})
	if reply["to"] != "+15005550100" {
		t.Errorf("reply = %v", reply)
	}
	var logs []any
	waitFor(t, func() bool {
		logs, _ = in.get("/v1/functions/echo-bot/logs", key).body["events"].([]any)
		return len(logs) >= 3
	})
	var text []string
	for _, l := range logs {
		text = append(text, l.(map[string]any)["message"].(string))
	}
	if !strings.Contains(strings.Join(text, "\n"), "received message.inbound") || !strings.HasPrefix(text[0], "START fnr_") {
		t.Errorf("logs = %q", text)
	}
	if r := in.get("/v1/functions/echo-bot/logs?filterPattern=received&limit=1", key); len(r.body["events"].([]any)) != 1 {
		t.Errorf("filtered logs = %v", r.body)
	}
	if r := in.get("/v1/functions/echo-bot/logs?limit=0&startTime=yesterday", key); r.status != 400 ||
		!slices.Contains(fieldPaths(r), "limit") || !slices.Contains(fieldPaths(r), "startTime") {
		t.Errorf("logs with a bad limit and start = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/functions/echo-bot/deployments?limit=101", key); r.status != 400 || !slices.Contains(fieldPaths(r), "limit") {
		t.Errorf("deployments?limit=101 = %d %v", r.status, r.body)
	}

	// A cron trigger fires when due (made due here rather than waiting for the minute).
	r = in.post("/v1/functions/echo-bot/triggers", key, `{"eventTypes":["cron"],"cron":"*/5 * * * *"}`)
	if r.status != 201 || r.body["added"] != 1.0 {
		t.Fatalf("add cron = %d %v", r.status, r.body)
	}
	cronID := r.body["triggers"].([]any)[0].(map[string]any)["id"].(string)
	if next := r.body["triggers"].([]any)[0].(map[string]any)["nextRunAt"]; next == nil {
		t.Errorf("a cron trigger has its next run: %v", r.body)
	}
	if _, err := in.db.Exec(ctx, `UPDATE function_triggers SET next_run_at = now() WHERE id = $1`, cronID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM function_runs WHERE trigger_id = $1 AND status = 'succeeded'`, cronID) == 1
	})
	triggers := in.get("/v1/functions/echo-bot/triggers", key).body["triggers"].([]any)
	if len(triggers) != 2 || triggers[1].(map[string]any)["lastRunAt"] == nil {
		t.Errorf("triggers = %v", triggers)
	}
	// Turned off, it stops; deleted, it is gone.
	if r := in.do("PATCH", "/v1/functions/triggers/"+cronID, key, strings.NewReader(`{"active":false}`)); r.status != 200 || r.body["active"] != false || r.body["ok"] != true {
		t.Errorf("deactivate = %d %v", r.status, r.body)
	}
	if r := in.do("DELETE", "/v1/functions/triggers/"+cronID, key, nil); r.status != 204 {
		t.Errorf("delete trigger = %d", r.status)
	}
	if r := in.do("DELETE", "/v1/functions/triggers/"+cronID, key, nil); r.status != 404 {
		t.Errorf("delete it again = %d", r.status)
	}

	// Secrets: never shown, keys checked, applied to the next run.
	for k, want := range map[string]int{"lower": 400, "AWS_REGION": 400, "ZAVU_API_KEY": 400, "GREETING": 200} {
		if r := in.do("PUT", "/v1/functions/echo-bot/secrets/"+k, key, strings.NewReader(`{"value":"hello-world-42"}`)); r.status != want {
			t.Errorf("set secret %s = %d %v", k, r.status, r.body)
		}
	}
	secrets := in.get("/v1/functions/echo-bot/secrets", key).body["secrets"].([]any)
	if len(secrets) != 2 || !strings.Contains(fmt.Sprint(secrets), "valueLast4:d-42") || strings.Contains(fmt.Sprint(secrets), "hello-world") {
		t.Errorf("secrets = %v", secrets)
	}

	// HTTP: on, the public URL answers as the function says; off, it is gone.
	r = in.do("PATCH", "/v1/functions/echo-bot", key, strings.NewReader(`{"httpEnabled":true}`))
	publicURL, _ := r.body["function"].(map[string]any)["publicUrl"].(string)
	if r.status != 200 || !strings.HasPrefix(publicURL, in.url+"/fn/") {
		t.Fatalf("enable http = %d %v", r.status, r.body)
	}
	call := func() (int, map[string]any, http.Header) {
		resp, err := http.Get(publicURL + "/orders/7?q=x")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		return resp.StatusCode, body, resp.Header
	}
	status, body, header := call()
	if status != 201 || body["version"] != 1.0 || body["greeting"] != "hello-world-42" || body["path"] != "/orders/7" || body["q"] != "x" || header.Get("X-Version") != "1" {
		t.Fatalf("GET public URL = %d %v %v", status, body, header)
	}

	// A new version, then a rollback: a new version of the old source serves.
	r = in.post("/v1/functions/echo-bot/deploy", key, `{"sourceCode":`+jsonString(echo(2))+`}`)
	d2 := waitDeployed(t, in, key, r.body["deployment"].(map[string]any)["id"].(string))
	if d2["status"] != "active" || d2["version"] != 2.0 {
		t.Fatalf("deployment 2 = %v", d2)
	}
	if _, body, _ := call(); body["version"] != 2.0 {
		t.Errorf("after deploying 2, the URL answers %v", body)
	}
	r = in.post("/v1/functions/echo-bot/rollback", key, `{"deploymentId":"`+d1["id"].(string)+`"}`)
	if r.status != 200 || r.body["rolledBackToVersion"] != 1.0 || r.body["previousDraft"] == nil {
		t.Fatalf("rollback = %d %v", r.status, r.body)
	}
	d3 := waitDeployed(t, in, key, r.body["deployment"].(map[string]any)["id"].(string))
	if d3["version"] != 3.0 || d3["status"] != "active" {
		t.Fatalf("deployment 3 = %v", d3)
	}
	if _, body, _ := call(); body["version"] != 1.0 {
		t.Errorf("after the rollback, the URL answers %v", body)
	}
	list := in.get("/v1/functions/echo-bot/deployments", key).body["deployments"].([]any)
	if len(list) != 3 || list[0].(map[string]any)["isActive"] != true || list[1].(map[string]any)["status"] != "superseded" {
		t.Errorf("deployments = %v", list)
	}
	if r := in.post("/v1/functions/echo-bot/rollback", key, `{"deploymentId":"fnd_nope"}`); r.status != 400 {
		t.Errorf("rollback to nothing = %d", r.status)
	}

	// A build that fails keeps the active one serving and says why.
	r = in.post("/v1/functions/echo-bot/deploy", key, `{"sourceCode":"export default defineFunction(async () => {;"}`)
	bad := waitDeployed(t, in, key, r.body["deployment"].(map[string]any)["id"].(string))
	if bad["status"] != "failed" || !strings.HasPrefix(fmt.Sprint(bad["errorMessage"]), "the code does not compile") ||
		!strings.Contains(fmt.Sprint(bad["buildLogs"]), "index.ts:1:") {
		t.Errorf("failed deployment = %v", bad)
	}
	fn = in.get("/v1/functions/echo-bot", key).body["function"].(map[string]any)
	if fn["status"] != "failed" || fn["activeDeploymentId"] != d3["id"] {
		t.Errorf("after a failed build = %v", fn)
	}
	if _, body, _ := call(); body["version"] != 1.0 {
		t.Errorf("after a failed build, the URL answers %v", body)
	}
	r = in.do("PATCH", "/v1/functions/echo-bot", key, strings.NewReader(`{"httpEnabled":false}`))
	if r.body["function"].(map[string]any)["publicUrl"] != nil {
		t.Errorf("http off = %v", r.body)
	}
	if status, _, _ := call(); status != 404 {
		t.Errorf("public URL with http off = %d", status)
	}

	// v2: the list, and the settings v1 has not.
	r = in.do("PATCH", "/v2/functions/echo-bot", key, strings.NewReader(`{"paused":true,"timeoutSec":5,"name":"Echo"}`))
	if r.status != 200 || r.body["function"].(map[string]any)["status"] != "disabled" || r.body["function"].(map[string]any)["timeoutSec"] != 5.0 {
		t.Errorf("v2 patch = %d %v", r.status, r.body)
	}
	if r := in.get("/v2/functions", key); r.status != 200 || len(r.body["items"].([]any)) != 1 {
		t.Errorf("v2 list = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/functions", key, `{}`); r.status != 404 {
		t.Errorf("POST /v2/functions = %d", r.status)
	}
	if r := in.get("/v1/functions/event-types", key); !strings.Contains(fmt.Sprint(r.body["events"]), "cron") {
		t.Errorf("event types = %v", r.body)
	}

	// Delete: everything goes, the key first.
	r = in.do("DELETE", "/v1/functions/echo-bot", key, nil)
	if r.status != 200 || r.body["deleted"] != true || r.body["slug"] != "echo-bot" || r.body["name"] != "Echo" {
		t.Fatalf("delete = %d %v", r.status, r.body)
	}
	if in.get("/v1/functions/echo-bot", key).status != 404 || in.get("/v1/functions/deployments/"+d1["id"].(string), key).status != 404 {
		t.Errorf("the function or its deployments outlive it")
	}
	if n := in.count(`SELECT count(*) FROM api_keys WHERE id = $1 AND revoked_at IS NULL`, keyID); n != 0 {
		t.Errorf("the function's key is not revoked")
	}
	for _, table := range []string{"function_drafts", "function_deployments", "function_triggers", "function_runs", "function_logs"} {
		if n := in.count(`SELECT count(*) FROM `+table+` WHERE function_uid = $1`, string(f.UID)); n != 0 {
			t.Errorf("%s keeps %d rows of the deleted function", table, n)
		}
	}
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "echo-bot-env"}, &secret); !apierrors.IsNotFound(err) {
		t.Errorf("the function's Secret: %v", err)
	}
}

// TestFunctionFailures: a run that throws is tried again and then fails, with its reason in the
// logs; a function of live traffic does not run on the sandbox's events.
func TestFunctionFailures(t *testing.T) {
	in := start(t, fastSandbox, fastFunctions)
	_, key := sendingProject(t, in, nil, apikey.Test)
	src := `import { defineFunction } from '@zavudev/functions';
export default defineFunction(async (event) => { throw new Error('no luck with ' + event.data.text); });`
	r := in.post("/v1/functions", key, `{"name":"Thrower","slug":"thrower","sourceCode":`+jsonString(src)+`}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	r = in.post("/v1/functions/thrower/deploy", key, "null")
	if r.status != 200 {
		t.Fatalf("deploy with a null body = %d %v", r.status, r.body)
	}
	waitDeployed(t, in, key, r.body["deployment"].(map[string]any)["id"].(string))
	in.post("/v1/functions/thrower/triggers", key, `{"eventTypes":["message.inbound"]}`)
	receive(t, in, key, `{"from":"+15005550100","text":"ping"}`)
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM function_runs WHERE function_name = 'thrower' AND status = 'failed' AND attempts = 2`) == 1
	})
	var reason string
	if err := in.poolRow(`SELECT error FROM function_runs WHERE function_name = 'thrower'`).Scan(&reason); err != nil || !strings.Contains(reason, "no luck with ping") {
		t.Errorf("run error = %q %v", reason, err)
	}
	r = in.get("/v1/functions/thrower/logs?filterPattern=ERROR", key)
	if events := r.body["events"].([]any); len(events) != 2 {
		t.Errorf("error lines = %v", r.body)
	}

	// A worker killed during a run leaves it claimed under a lease and nothing else: when the
	// lease ends another worker runs it again, with the same event id.
	ok := `import { defineFunction } from '@zavudev/functions';
export default defineFunction(async (event, ctx) => { ctx.log('handled', event.id); });`
	in.post("/v1/functions", key, `{"name":"Steady","slug":"steady","sourceCode":`+jsonString(ok)+`}`)
	r = in.post("/v1/functions/steady/deploy", key, "")
	waitDeployed(t, in, key, r.body["deployment"].(map[string]any)["id"].(string))
	var uid string
	if err := in.poolRow(`SELECT function_uid FROM function_deployments WHERE function_name = 'steady' LIMIT 1`).Scan(&uid); err != nil {
		t.Fatal(err)
	}
	_, err := in.db.Exec(context.Background(), `INSERT INTO function_runs (id, project, function_uid, function_name, event_id, event_type, event,
		status, attempts, next_attempt_at, created_at) SELECT 'fnr_orphan', project, function_uid, function_name, 'evt_orphan', 'message.inbound',
		'{"id":"evt_orphan","type":"message.inbound","data":{}}', 'pending', 1, now() + interval '1 second', now()
		FROM function_deployments WHERE function_uid = $1 LIMIT 1`, uid)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM function_runs WHERE id = 'fnr_orphan' AND status = 'succeeded' AND attempts = 2`) == 1
	})
	if r := in.get("/v1/functions/steady/logs?filterPattern=evt_orphan", key); len(r.body["events"].([]any)) != 1 {
		t.Errorf("the orphaned run's lines = %v", r.body)
	}
	// A source past 900,000 bytes is refused on the decoded tree.
	big, _ := json.Marshal(map[string]any{"files": map[string]string{"index.ts": strings.Repeat("x", 500_000), "b.ts": strings.Repeat("y", 400_001)}})
	if r := in.do("PATCH", "/v1/functions/steady", key, strings.NewReader(string(big))); r.status != 400 || !slices.Contains(fieldPaths(r), "files") {
		t.Errorf("900,001 bytes = %d %v", r.status, r.body)
	}
}

// TestFunctionFromManifest: a Function applied with kubectl, its code inline, is deployed by the
// controller, gets its key and URL, and runs on its triggers.
func TestFunctionFromManifest(t *testing.T) {
	in := start(t, fastSandbox, fastFunctions)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	ctx := context.Background()
	f := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "greeter"}, Spec: v1alpha1.FunctionSpec{
		DisplayName: "Greeter", Mode: v1alpha1.FunctionTest, HTTPEnabled: true,
		Source: &v1alpha1.FunctionSource{Files: map[string]string{"index.ts": `import { defineFunction } from '@switchboard/functions';
import { greet } from './lib/greet';
export default defineFunction(async (event) => ({ statusCode: 200, body: greet(event.data.query.name) }));`,
			"lib/greet.ts": `export const greet = (n: string) => 'hello ' + n;`}},
		Triggers: []v1alpha1.FunctionTrigger{{Event: "message.delivered"}},
	}}
	if err := in.k8s.Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_ = in.k8s.Get(ctx, client.ObjectKeyFromObject(f), f)
		return f.Status.Phase == v1alpha1.FunctionActive && f.Status.PublicURL != ""
	})
	resp, err := http.Get(f.Status.PublicURL + "?name=ada")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(raw) != "hello ada" {
		t.Errorf("GET %s = %d %q", f.Status.PublicURL, resp.StatusCode, raw)
	}
	if r := in.get("/v1/functions/greeter/triggers", key); len(r.body["triggers"].([]any)) != 1 {
		t.Errorf("the manifest's triggers = %v", r.body)
	}
	// Its code is the manifest's: the API does not deploy over it.
	if r := in.post("/v1/functions/greeter/deploy", key, `{"sourceCode":"x"}`); r.status != 400 {
		t.Errorf("deploy over a manifest = %d %v", r.status, r.body)
	}
	// kubectl delete revokes its key (the finalizer).
	keyID := f.Annotations[v1alpha1.FunctionKeyIDAnnotation]
	if err := in.k8s.Delete(ctx, f); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return apierrors.IsNotFound(in.k8s.Get(ctx, client.ObjectKeyFromObject(f), &v1alpha1.Function{}))
	})
	if n := in.count(`SELECT count(*) FROM api_keys WHERE id = $1 AND revoked_at IS NULL`, keyID); keyID == "" || n != 0 {
		t.Errorf("the deleted function's key %q is not revoked", keyID)
	}
}

// TestFunctionGitLink: a function linked to a repository (a loopback Git server) deploys its
// branch on demand and on each signed push, and says how the last deploy went.
func TestFunctionGitLink(t *testing.T) {
	git := gittest.NewServer(t)
	in := start(t, fastSandbox, fastFunctions, func(c *app.Config) { c.Functions.GitBase = git.BaseURL })
	_, key := sendingProject(t, in, nil, apikey.Test)
	version := func(v int) map[string]string {
		return map[string]string{
			"index.ts":  "import { defineFunction } from '@zavudev/functions';\nimport { v } from './lib/v';\nexport default defineFunction(async () => ({ statusCode: 200, body: { version: v } }));\n",
			"lib/v.ts":  fmt.Sprintf("export const v = %d;\n", v),
			"README.md": "not code",
		}
	}
	first := git.Commit(t, "acme/order-bot", "main", version(1), "first")

	r := in.post("/v1/functions", key, `{"name":"Orders","slug":"orders","httpEnabled":true}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	publicURL := r.body["function"].(map[string]any)["publicUrl"].(string)
	for _, body := range []string{`{"owner":"-acme","repo":"order-bot"}`, `{"owner":"acme","repo":"order bot"}`, `{"owner":"acme","repo":"order-bot","rootDir":"../x"}`} {
		if r := in.post("/v1/functions/orders/git-link", key, body); r.status != 400 {
			t.Errorf("link %s = %d %v", body, r.status, r.body)
		}
	}
	r = in.post("/v1/functions/orders/git-link", key, `{"owner":"acme","repo":"order-bot"}`)
	link, _ := r.body["link"].(map[string]any)
	secret, _ := r.body["webhookSecret"].(string)
	hookURL, _ := r.body["webhookUrl"].(string)
	if r.status != 201 || secret == "" || link["connection"] != "manual" || link["branch"] != "main" || link["autoDeploy"] != true ||
		link["lastStatus"] != nil || !strings.Contains(hookURL, "/callbacks/github/functions/fgl_") {
		t.Fatalf("link = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/functions/orders/git-link", key, `{"owner":"acme","repo":"other"}`); r.status != 400 {
		t.Errorf("a second link = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/functions/orders/git-link", key); r.status != 200 || r.body["webhookSecret"] != nil || r.body["webhookUrl"] != hookURL {
		t.Errorf("read link = %d %v", r.status, r.body)
	}
	if r := in.do("PATCH", "/v1/functions/orders/git-link", key, nil); r.status != 400 {
		t.Errorf("an empty link update = %d %v", r.status, r.body)
	}

	linked := func(sha string) map[string]any {
		var l map[string]any
		waitFor(t, func() bool {
			l, _ = in.get("/v1/functions/orders/git-link", key).body["link"].(map[string]any)
			return l != nil && l["lastCommitSha"] == sha && (l["lastStatus"] == "deployed" || l["lastStatus"] == "failed")
		})
		return l
	}
	served := func() any {
		resp, err := http.Get(publicURL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return body["version"]
	}

	// Deploy now: the branch's head.
	if r := in.post("/v1/functions/orders/git-link/deploy", key, ""); r.status != 200 || r.body["scheduled"] != true {
		t.Fatalf("deploy now = %d %v", r.status, r.body)
	}
	if l := linked(first); l["lastStatus"] != "deployed" || l["lastCommitMessage"] != "first" {
		t.Fatalf("after deploy now: %v", l)
	}
	waitFor(t, func() bool { return served() == 1.0 })
	deps := in.get("/v1/functions/orders/deployments", key).body["deployments"].([]any)
	if d := in.get("/v1/functions/deployments/"+deps[0].(map[string]any)["id"].(string), key).body["deployment"].(map[string]any); d["source"] != "git" || d["gitCommit"] != first {
		t.Errorf("the git deployment = %v", d)
	}

	// A signed push to the branch deploys its commit; anything else is refused or ignored.
	second := git.Commit(t, "acme/order-bot", "main", version(2), "second")
	push := func(secret, event, branch, after string) int {
		body := fmt.Sprintf(`{"ref":"refs/heads/%s","before":"%s","after":"%s","deleted":false,"head_commit":{"message":"second\n\nmore"},"repository":{"full_name":"acme/order-bot"}}`, branch, first, after)
		req, _ := http.NewRequest("POST", hookURL, strings.NewReader(body))
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-Hub-Signature-256", functiongit.Sign(secret, []byte(body)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := push("not-the-secret", "push", "main", second); status != 401 {
		t.Errorf("a push signed with another secret = %d", status)
	}
	if status := push(secret, "ping", "main", second); status != 200 {
		t.Errorf("ping = %d", status)
	}
	if status := push(secret, "push", "feature", second); status != 202 {
		t.Errorf("a push to another branch = %d", status)
	}
	if status := push(secret, "push", "main", second); status != 202 {
		t.Fatalf("push = %d", status)
	}
	if l := linked(second); l["lastStatus"] != "deployed" {
		t.Fatalf("after the push: %v", l)
	}
	waitFor(t, func() bool { return served() == 2.0 })

	// autoDeploy off: pushes are ignored. A repository that cannot be fetched fails its deploy.
	r = in.do("PATCH", "/v1/functions/orders/git-link", key, strings.NewReader(`{"autoDeploy":false,"rootDir":null}`))
	if r.status != 200 || r.body["link"].(map[string]any)["autoDeploy"] != false {
		t.Errorf("update link = %d %v", r.status, r.body)
	}
	third := git.Commit(t, "acme/order-bot", "main", version(3), "third")
	if status := push(secret, "push", "main", third); status != 202 {
		t.Errorf("a push with autoDeploy off = %d", status)
	}
	if n := in.count(`SELECT count(*) FROM function_deployments WHERE git_commit = $1`, third); n != 0 {
		t.Errorf("a push with autoDeploy off deployed")
	}
	if r := in.do("DELETE", "/v1/functions/orders/git-link", key, nil); r.status != 204 {
		t.Fatalf("unlink = %d", r.status)
	}
	if status := push(secret, "push", "main", third); status != 404 {
		t.Errorf("a push after unlinking = %d", status)
	}
	in.post("/v1/functions/orders/git-link", key, `{"owner":"acme","repo":"missing"}`)
	in.post("/v1/functions/orders/git-link/deploy", key, "")
	var l map[string]any
	waitFor(t, func() bool {
		l, _ = in.get("/v1/functions/orders/git-link", key).body["link"].(map[string]any)
		return l != nil && l["lastStatus"] == "failed"
	})
	if !strings.Contains(fmt.Sprint(l["lastError"]), "repository not found") {
		t.Errorf("a missing repository: %v", l)
	}
	if served() != 2.0 {
		t.Errorf("a failed git deploy replaced the serving version")
	}
}

// TestFunctionAgentAndTools: a function that declares an agent and a tool (as the agent
// templates do, with no default handler) gets an Agent it owns, answering on the sender its
// secret names; the agent's call of the tool runs the function, and its answer goes back to the
// model.
func TestFunctionAgentAndTools(t *testing.T) {
	in := start(t, fastSandbox, fastFunctions)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	ctx := context.Background()
	src := `import { defineAgent, defineTool } from '@zavudev/functions';
defineAgent({ senderId: process.env.SENDER_ID!, name: 'Orders', provider: 'zavu', model: 'sandbox', prompt: 'You look up orders.' });
defineTool({
  name: 'get_order_status',
  description: 'Look up an order.',
  parameters: { type: 'object', properties: { orderNumber: { type: 'string' } }, required: ['orderNumber'] },
  handler: async ({ orderNumber }: { orderNumber: string }, ctx: any) => {
    ctx.log('looking up', orderNumber);
    return { order: orderNumber, status: 'shipped' };
  },
});`
	if r := in.post("/v1/functions", key, `{"name":"Orders","slug":"orders","sourceCode":`+jsonString(src)+`}`); r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	if r := in.do("PUT", "/v1/functions/orders/secrets/SENDER_ID", key, strings.NewReader(`{"value":"main"}`)); r.status != 200 {
		t.Fatalf("set SENDER_ID = %d %v", r.status, r.body)
	}
	r := in.post("/v1/functions/orders/deploy", key, "")
	d := waitDeployed(t, in, key, r.body["deployment"].(map[string]any)["id"].(string))
	if d["status"] != "active" || !strings.Contains(fmt.Sprint(d["buildLogs"]), "an agent: true; 1 tools") {
		t.Fatalf("deployment = %v", d)
	}
	var a v1alpha1.Agent
	waitFor(t, func() bool { return in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "fn-orders"}, &a) == nil })
	if a.Spec.DisplayName != "Orders" || len(a.Spec.Senders) != 1 || a.Spec.Senders[0] != "main" || len(a.Spec.Tools) != 1 ||
		a.Spec.Tools[0].Function != "orders" || a.Spec.Tools[0].Name != "get_order_status" || !a.Spec.Enabled {
		t.Fatalf("the function's agent = %+v", a.Spec)
	}
	// The agent calls the tool (the sandbox model calls what the message asks): the function answers.
	receive(t, in, key, `{"from":"+15005550100","text":"call get_order_status {\"orderNumber\":\"A-1042\"}"}`)
	var reply string
	waitFor(t, func() bool {
		for _, m := range in.get("/v1/messages?limit=20", key).body["items"].([]any) {
			if text, _ := m.(map[string]any)["text"].(string); strings.Contains(text, "The tool get_order_status answered") {
				reply = text
				return true
			}
		}
		return false
	})
	if !strings.Contains(reply, `"status":"shipped"`) || !strings.Contains(reply, "A-1042") {
		t.Errorf("reply = %q", reply)
	}
	logs := in.get("/v1/functions/orders/logs?filterPattern=looking", key).body["events"].([]any)
	if len(logs) != 1 {
		t.Errorf("the tool's log lines = %v", logs)
	}
	// Deleting the function deletes its agent.
	if r := in.do("DELETE", "/v1/functions/orders", key, nil); r.status != 200 {
		t.Fatalf("delete = %d", r.status)
	}
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "fn-orders"}, &a); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted function's agent: %v", err)
	}
}

// TestFunctionsWithoutNode: a machine without Node.js runs everything else; a function's build
// fails saying why, and nothing hangs.
func TestFunctionsWithoutNode(t *testing.T) {
	in := start(t, fastSandbox, fastFunctions, func(c *app.Config) { c.Functions.Node = "/nonexistent/node" })
	_, key := sendingProject(t, in, nil, apikey.Test)
	if r := in.post("/v1/functions", key, `{"name":"Bot","slug":"bot","sourceCode":`+jsonString(echo(1))+`}`); r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	r := in.post("/v1/functions/bot/deploy", key, "")
	d := waitDeployed(t, in, key, r.body["deployment"].(map[string]any)["id"].(string))
	if d["status"] != "failed" || !strings.HasPrefix(fmt.Sprint(d["errorMessage"]), "this installation cannot load functions") {
		t.Errorf("deployment without node = %v", d)
	}
	if r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"still sending"}`); r.status != 202 && r.status != 200 {
		t.Errorf("a send without node = %d %v", r.status, r.body)
	}
}
