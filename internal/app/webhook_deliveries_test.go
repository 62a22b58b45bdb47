package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/cli"
)

// downReceiver is a loopback HTTPS webhook receiver that answers 500 while down, and keeps
// the event ids it took.
type downReceiver struct {
	*httptest.Server
	down atomic.Bool
	mu   sync.Mutex
	took []string
}

func newDownReceiver(t *testing.T) *downReceiver {
	d := &downReceiver{}
	d.down.Store(true)
	d.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if d.down.Load() {
			http.Error(w, `{"error":"down for maintenance"}`, http.StatusInternalServerError)
			return
		}
		var ev struct{ ID string }
		_ = json.Unmarshal(b, &ev)
		d.mu.Lock()
		d.took = append(d.took, ev.ID)
		d.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *downReceiver) tookIDs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.took...)
}

func disablingAfter(after time.Duration) option {
	return func(c *app.Config) { c.WebhookDisableAfter, c.WebhookDisableEvery = after, 100*time.Millisecond }
}

// TestTheWebhookDeliveryLog drives the log through the API: a receiver that is down fails its
// deliveries, which the log lists with their attempts and the endpoint's health; the endpoint
// is disabled and enabled again; once the receiver is back, one delivery and then every failure
// of the endpoint are replayed with their event ids. Another project, the other mode and bad
// input see and change nothing.
func TestTheWebhookDeliveryLog(t *testing.T) {
	rcv := newDownReceiver(t)
	in := start(t, fastSandbox, deliveringTo(rcv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs), disablingAfter(2*time.Second))
	hook := &hookReceiver{Server: rcv.Server}
	acme, key := sendingProject(t, in, hook, apikey.Test)
	live := newKey(t, in, acme, apikey.Live)
	_, rivalKey := sendingProject(t, in, nil, apikey.Test)

	r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"Hello"}`)
	msgID := r.body["message"].(map[string]any)["id"].(string)
	var failed []any
	waitFor(t, func() bool {
		r := in.get("/v2/webhook/deliveries?status=failed&messageId="+msgID, key)
		failed, _ = r.body["items"].([]any)
		return r.status == 200 && len(failed) >= 3 // queued, sent, delivered
	})
	first := failed[len(failed)-1].(map[string]any) // the oldest: message.queued
	id := first["id"].(string)
	if first["endpoint"] != "sender" || first["senderId"] != "main" || first["mode"] != "test" || first["event"] != "message.queued" ||
		first["attemptCount"] != 5.0 || first["data"] != nil || first["attempts"] != nil {
		t.Fatalf("a failed delivery in the list: %v", first)
	}
	r = in.get("/v1/senders/main/webhook/deliveries/"+id, key)
	d, _ := r.body["delivery"].(map[string]any)
	attempts, _ := d["attempts"].([]any)
	if r.status != 200 || len(attempts) != 5 || d["data"].(map[string]any)["messageId"] != msgID {
		t.Fatalf("GET delivery = %d %v", r.status, r.body)
	}
	a := attempts[0].(map[string]any)
	if a["statusCode"] != 500.0 || !strings.Contains(fmt.Sprint(a["responseBody"]), "down for maintenance") || a["url"] != rcv.URL+"/hook" || a["replay"] != false {
		t.Errorf("attempt 1: %v", a)
	}
	r = in.get("/v2/webhook/endpoints", key)
	items, _ := r.body["items"].([]any)
	if r.status != 200 || len(items) != 1 {
		t.Fatalf("endpoints = %d %v", r.status, r.body)
	}
	if h := items[0].(map[string]any); h["endpoint"] != "sender" || h["consecutiveFailures"].(float64) < 15 || h["failingSince"] == nil ||
		h["lastSuccessAt"] != nil || h["successRate"] != 0.0 {
		t.Errorf("the sender's endpoint: %v", h)
	}

	// Another project, the other mode, and bad input: not found or refused, nothing changed.
	for name, c := range map[string]struct {
		r      response
		status int
	}{
		"rival GET":              {in.get("/v2/webhook/deliveries/"+id, rivalKey), 404},
		"rival replay":           {in.post("/v2/webhook/deliveries/"+id+"/replay", rivalKey, ""), 404},
		"rival sender route":     {in.get("/v1/senders/main/webhook/deliveries/"+id, rivalKey), 404},
		"live key GET":           {in.get("/v2/webhook/deliveries/"+id, live), 404},
		"live key replay":        {in.post("/v2/webhook/deliveries/"+id+"/replay", live, ""), 404},
		"unknown sender":         {in.get("/v1/senders/nobody/webhook/deliveries", key), 404},
		"other sender's route":   {in.get("/v1/senders/nobody/webhook/deliveries/"+id, key), 404},
		"bad status":             {in.get("/v2/webhook/deliveries?status=lost", key), 400},
		"bad since":              {in.get("/v2/webhook/deliveries?since=yesterday", key), 400},
		"bad endpoint":           {in.get("/v2/webhook/deliveries?endpoint=fax", key), 400},
		"bad cursor":             {in.get("/v2/webhook/deliveries?cursor=xyz", key), 400},
		"bad limit":              {in.get("/v2/webhook/deliveries?limit=0", key), 400},
		"range without since":    {in.post("/v2/webhook/deliveries/replay", key, `{"endpoint":"sender","senderId":"main"}`), 400},
		"range without endpoint": {in.post("/v2/webhook/deliveries/replay", key, `{"since":"2026-01-01T00:00:00Z"}`), 400},
		"range too old":          {in.post("/v2/webhook/deliveries/replay", key, `{"endpoint":"sender","senderId":"main","since":"2020-01-01T00:00:00Z"}`), 400},
		"range not JSON":         {in.post("/v2/webhook/deliveries/replay", key, `{"since":`), 400},
		"range of no webhook":    {in.post("/v2/webhook/deliveries/replay", key, `{"endpoint":"v2","since":"2026-01-01T00:00:00Z"}`), 404},
		"rival range":            {in.post("/v1/senders/main/webhook/deliveries/replay", rivalKey, fmt.Sprintf(`{"since":%q}`, time.Now().Add(-time.Hour).Format(time.RFC3339))), 404},
		"enable no v2 webhook":   {in.post("/v2/webhook/enable", key, ""), 404},
	} {
		if c.r.status != c.status {
			t.Errorf("%s: %d %v, want %d", name, c.r.status, c.r.body, c.status)
		}
	}
	if r := in.get("/v2/webhook/deliveries", rivalKey); r.status != 200 || len(r.body["items"].([]any)) != 0 {
		t.Errorf("the rival lists %v", r.body)
	}
	if r := in.get("/v2/webhook/deliveries", live); r.status != 200 || len(r.body["items"].([]any)) != 0 {
		t.Errorf("a live key lists the test deliveries: %v", r.body)
	}
	if got := in.get("/v2/webhook/deliveries/"+id, key).body["delivery"].(map[string]any); got["status"] != "failed" || got["replays"] != 0.0 {
		t.Fatalf("refused requests changed the delivery: %v", got)
	}

	// Failing for longer than the limit (2 s here), the endpoint is disabled: a condition on the
	// Sender, and its deliveries fail without an attempt.
	waitFor(t, func() bool {
		h := in.get("/v2/webhook/endpoints", key).body["items"].([]any)[0].(map[string]any)
		return h["enabled"] == false && strings.Contains(fmt.Sprint(h["disabledReason"]), "every attempt has failed since")
	})
	r = in.post("/v1/messages", key, `{"to":"+15005550101","text":"While disabled"}`)
	whileID := r.body["message"].(map[string]any)["id"].(string)
	waitFor(t, func() bool {
		items, _ := in.get("/v2/webhook/deliveries?status=failed&messageId="+whileID, key).body["items"].([]any)
		return len(items) == 3 // queued, sent, delivered
	})
	r = in.get("/v2/webhook/deliveries?messageId="+whileID, key)
	for _, it := range r.body["items"].([]any) {
		if d := it.(map[string]any); d["attemptCount"] != 0.0 || !strings.Contains(fmt.Sprint(d["lastError"]), "disabled") {
			t.Errorf("a delivery to the disabled endpoint: %v", d)
		}
	}
	r = in.post("/v1/senders/main/webhook/enable", key, "")
	if h, _ := r.body["endpoint"].(map[string]any); r.status != 200 || h["enabled"] != true {
		t.Fatalf("enable = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		return in.get("/v2/webhook/endpoints", key).body["items"].([]any)[0].(map[string]any)["enabled"] == true
	})

	// Back up: one replay, then every failure of the endpoint since the first send.
	rcv.down.Store(false)
	r = in.post("/v2/webhook/deliveries/"+id+"/replay", key, "")
	if d, _ := r.body["delivery"].(map[string]any); r.status != 202 || d["status"] != "pending" || d["replays"] != 1.0 {
		t.Fatalf("replay = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		return in.get("/v2/webhook/deliveries/"+id, key).body["delivery"].(map[string]any)["status"] == "delivered"
	})
	if took := rcv.tookIDs(); len(took) != 1 || took[0] != id {
		t.Fatalf("the receiver took %v, want the replayed event id %s", took, id)
	}
	attempts = in.get("/v2/webhook/deliveries/"+id, key).body["delivery"].(map[string]any)["attempts"].([]any)
	if last := attempts[len(attempts)-1].(map[string]any); len(attempts) != 6 || last["replay"] != true || last["statusCode"] != 204.0 {
		t.Errorf("the replay's attempt: %v", attempts)
	}
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	r = in.post("/v1/senders/main/webhook/deliveries/replay", key, fmt.Sprintf(`{"since":%q}`, since))
	replayed, _ := r.body["replayed"].(float64)
	if r.status != 202 || replayed < 3 {
		t.Fatalf("replay range = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		failed, _ := in.get("/v2/webhook/deliveries?status=failed", key).body["items"].([]any)
		pending, _ := in.get("/v2/webhook/deliveries?status=pending", key).body["items"].([]any)
		return len(failed) == 0 && len(pending) == 0
	})
	if took := rcv.tookIDs(); len(took) != 1+int(replayed) {
		t.Errorf("the receiver took %d deliveries, want %d", len(took), 1+int(replayed))
	}
	if h := in.get("/v2/webhook/endpoints", key).body["items"].([]any)[0].(map[string]any); h["consecutiveFailures"] != 0.0 || h["failingSince"] != nil {
		t.Errorf("health after the replays: %v", h)
	}
	// Pages of the log continue with the cursor, and a cursor of another list is refused.
	r = in.get("/v2/webhook/deliveries?limit=2", key)
	next, _ := r.body["nextCursor"].(string)
	if r.status != 200 || len(r.body["items"].([]any)) != 2 || next == "" {
		t.Fatalf("page 1 = %d %v", r.status, r.body)
	}
	if r := in.get("/v2/webhook/deliveries?limit=2&cursor="+next, key); r.status != 200 || len(r.body["items"].([]any)) == 0 {
		t.Errorf("page 2 = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/senders/main/webhook/deliveries?cursor="+next, key); r.status != 400 {
		t.Errorf("another list's cursor = %d", r.status)
	}

	// The operator's CLI reads the same log.
	kubeconfig := operatorKubeconfig(t)
	webhookCLI := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		args = append(args, "--project", acme, "--mode", "test", "--database-url", in.db.Config().ConnString(), "--kubeconfig", kubeconfig)
		code := cli.Execute(append([]string{"webhook"}, args...), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	if code, out := webhookCLI("deliveries", "list", "--sender", "main", "--message", msgID); code != 0 || !strings.Contains(out, id) ||
		!strings.Contains(out, "sender/main") || !strings.Contains(out, "delivered") {
		t.Errorf("deliveries list: exit %d\n%s", code, out)
	}
	if code, out := webhookCLI("deliveries", "get", id); code != 0 || !strings.Contains(out, "6 (replay)") || !strings.Contains(out, "down for maintenance") ||
		!strings.Contains(out, msgID) {
		t.Errorf("deliveries get: exit %d\n%s", code, out)
	}
	if code, out := webhookCLI("endpoints"); code != 0 || !strings.Contains(out, "sender/main") || !strings.Contains(out, rcv.URL) {
		t.Errorf("endpoints: exit %d\n%s", code, out)
	}
	if code, out := webhookCLI("deliveries", "replay", id); code != 0 || !strings.Contains(out, id+" replayed") {
		t.Errorf("deliveries replay: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"enable"}, {"deliveries", "replay"}, {"deliveries", "replay", "--failed", "--sender", "main"},
		{"deliveries", "list", "--limit", "0"}} {
		if code, out := webhookCLI(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, out)
		}
	}
	if code, out := webhookCLI("deliveries", "get", "evt_nobody"); code != 1 || !strings.Contains(out, "not found") {
		t.Errorf("get of nothing: exit %d\n%s", code, out)
	}
}

// operatorKubeconfig writes a kubeconfig of an administrator of the test cluster, as an
// operator running the CLI has.
func operatorKubeconfig(t *testing.T) string {
	t.Helper()
	user, err := testEnv.AddUser(envtest.User{Name: "operator", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
