package app_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

// signedToolServer is an https tool webhook whose secret the test sets once the API has shown
// it: /orders answers the order it was asked for when the call's signature verifies (401
// otherwise), /fail always answers 500.
type signedToolServer struct {
	*httptest.Server
	mu     sync.Mutex
	secret string
	good   int // calls whose signature verified
	bad    int
}

func newSignedToolServer(t *testing.T) *signedToolServer {
	ts := &signedToolServer{}
	ts.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts.mu.Lock()
		mac := hmac.New(sha256.New, []byte(ts.secret))
		mac.Write(body)
		ok := r.Header.Get("X-Service-Signature") == hex.EncodeToString(mac.Sum(nil))
		if ok {
			ts.good++
		} else {
			ts.bad++
		}
		ts.mu.Unlock()
		if r.URL.Path == "/fail" {
			http.Error(w, "the order system is down", http.StatusInternalServerError)
			return
		}
		if !ok {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var args map[string]any
		_ = json.Unmarshal(body, &args)
		_, _ = fmt.Fprintf(w, `{"status":"shipped","order":%q}`, fmt.Sprint(args["orderNumber"]))
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *signedToolServer) use(secret string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.secret = secret
}

func (ts *signedToolServer) counts() (good, bad int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.good, ts.bad
}

func (ts *signedToolServer) rootCAs() option {
	return deliveringTo(ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs)
}

// agentOn creates an enabled agent of the installation's model answering on sender ("" for
// none), and waits until the API serves it.
func agentOn(t *testing.T, in *instance, project, key, name, sender string) {
	t.Helper()
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: name}, Spec: v1alpha1.AgentSpec{
		DisplayName: name, Enabled: true, Provider: v1alpha1.ModelZavu, Model: "support-model", SystemPrompt: "Help."}}
	if sender != "" {
		a.Spec.Senders = []string{sender}
	}
	in.createObjects(t, a)
	waitFor(t, func() bool { return in.get("/v1/agents/"+name+"/tools", key).status == http.StatusOK })
}

const orderParams = `{"type":"object","properties":{"orderNumber":{"type":"string","description":"The order"}},"required":["orderNumber"]}`

// TestAgentToolsThroughTheAPI: an agent's tools made, read, listed, changed, tested, rotated and
// deleted through both prefixes; the secret shown once signs the calls; rotation stops the old
// one at once; a failing tool is a recorded run with success false and a 200; bad input of
// every kind is a 400 naming the fields and changes nothing; another agent's or project's ids
// are 404.
func TestAgentToolsThroughTheAPI(t *testing.T) {
	ts := newSignedToolServer(t)
	in := start(t, fastSandbox, ts.rootCAs())
	acme, key := sendingProject(t, in, nil, apikey.Test)
	agentOn(t, in, acme, key, "support", "main")
	const S, A = "/v1/senders/main/agent", "/v1/agents/support"

	// Create through the sender's agent: the secret is in this answer only.
	r := in.post(S+"/tools", key, `{"name":"get_order_status","description":"Looks an order up.","parameters":`+orderParams+`,"webhookUrl":"`+ts.URL+`/orders"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create = %d %s", r.status, r.raw)
	}
	orders := r.body["tool"].(map[string]any)
	secret1, _ := orders["webhookSecret"].(string)
	id1 := orders["id"].(string)
	if secret1 == "" || !strings.HasPrefix(id1, "tool-") || orders["agentId"] != "support" || orders["enabled"] != true ||
		orders["name"] != "get_order_status" || orders["webhookUrl"] != ts.URL+"/orders" || orders["createdAt"] != orders["updatedAt"] {
		t.Fatalf("created tool = %v", orders)
	}
	var params map[string]any
	_ = json.Unmarshal([]byte(orderParams), &params)
	if !reflect.DeepEqual(orders["parameters"], params) {
		t.Errorf("parameters = %v", orders["parameters"])
	}
	for _, p := range []string{S, A} {
		got := in.get(p+"/tools/"+id1, key)
		tool, _ := got.body["tool"].(map[string]any)
		if got.status != http.StatusOK || tool["webhookSecret"] != nil || tool["name"] != "get_order_status" || tool["createdAt"] != orders["createdAt"] {
			t.Errorf("GET %s/tools/%s = %d %v", p, id1, got.status, got.body)
		}
	}
	// The mirror creates too, with a secret chosen by the caller.
	r = in.post(A+"/tools", key, `{"name":"escalate","description":"Escalates.","parameters":{"type":"object","properties":{},"required":[]},"webhookUrl":"`+ts.URL+`/fail","enabled":false,"webhookSecret":"chosen-secret-0001"}`)
	if r.status != http.StatusCreated || r.body["tool"].(map[string]any)["webhookSecret"] != "chosen-secret-0001" {
		t.Fatalf("create on the mirror = %d %s", r.status, r.raw)
	}
	id2 := r.body["tool"].(map[string]any)["id"].(string)
	var a v1alpha1.Agent
	if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "support"}, &a); err != nil || len(a.Spec.Tools) != 2 {
		t.Fatalf("the agent's tools: %v %v", a.Spec.Tools, err)
	}

	// Lists: newest first, the enabled filter, cursor pages; the same on both prefixes.
	ids := func(r response) []string {
		var out []string
		for _, it := range r.body["items"].([]any) {
			out = append(out, it.(map[string]any)["id"].(string))
		}
		return out
	}
	for _, p := range []string{S, A} {
		if got := ids(in.get(p+"/tools", key)); !reflect.DeepEqual(got, []string{id2, id1}) {
			t.Errorf("%s/tools = %v", p, got)
		}
		if got := ids(in.get(p+"/tools?enabled=true", key)); !reflect.DeepEqual(got, []string{id1}) {
			t.Errorf("%s/tools?enabled=true = %v", p, got)
		}
		if got := ids(in.get(p+"/tools?enabled=false", key)); !reflect.DeepEqual(got, []string{id2}) {
			t.Errorf("%s/tools?enabled=false = %v", p, got)
		}
		page := in.get(p+"/tools?limit=1", key)
		next, _ := page.body["nextCursor"].(string)
		if got := ids(page); !reflect.DeepEqual(got, []string{id2}) || next == "" {
			t.Fatalf("%s first page = %v, next %q", p, got, next)
		}
		page = in.get(p+"/tools?limit=1&cursor="+url.QueryEscape(next), key)
		if got := ids(page); !reflect.DeepEqual(got, []string{id1}) || page.body["nextCursor"] != "" {
			t.Errorf("%s second page = %v, next %v", p, got, page.body["nextCursor"])
		}
	}

	// A test run of the tool, signed with the secret shown at creation.
	ts.use(secret1)
	test := func(prefix, id, body string) map[string]any {
		t.Helper()
		r := in.post(prefix+"/tools/"+id+"/test", key, body)
		if r.status != http.StatusOK {
			t.Fatalf("test %s = %d %s", id, r.status, r.raw)
		}
		return r.body["run"].(map[string]any)
	}
	run := test(A, id1, `{"testParams":{"orderNumber":"A-1042"}}`)
	if run["success"] != true || run["statusCode"] != 200.0 || run["toolId"] != id1 || run["error"] != nil ||
		run["response"] != `{"status":"shipped","order":"A-1042"}` || run["params"].(map[string]any)["orderNumber"] != "A-1042" {
		t.Errorf("run = %v", run)
	}
	if good, bad := ts.counts(); good != 1 || bad != 0 {
		t.Errorf("tool server: %d good, %d bad signatures", good, bad)
	}
	// A tool answering 500: a failed run, recorded, and still a 200.
	failed := test(S, id2, `{"testParams":{}}`)
	if failed["success"] != false || failed["statusCode"] != 500.0 || failed["error"] == nil || !strings.Contains(fmt.Sprint(failed["response"]), "down") {
		t.Errorf("failed run = %v", failed)
	}
	runs := in.get(S+"/tools/"+id2+"/test-runs", key)
	if items, _ := runs.body["items"].([]any); runs.status != 200 || len(items) != 1 || items[0].(map[string]any)["id"] != failed["id"] ||
		items[0].(map[string]any)["success"] != false {
		t.Errorf("test runs of the failing tool = %d %v", runs.status, runs.body)
	}
	if _, ok := runs.body["nextCursor"]; ok {
		t.Error("test runs carry a cursor")
	}

	// Rotation: the new secret is shown once; the old one signs nothing more.
	rot := in.do(http.MethodPost, A+"/tools/"+id1+"/webhook/secret", key, nil)
	secret2, _ := rot.body["secret"].(string)
	if rot.status != http.StatusOK || secret2 == "" || secret2 == secret1 || len(rot.body) != 1 {
		t.Fatalf("rotate = %d %v", rot.status, rot.body)
	}
	if run := test(S, id1, `{"testParams":{"orderNumber":"A-1043"}}`); run["success"] != false || run["statusCode"] != 401.0 {
		t.Errorf("a call after rotation verified with the old secret: %v", run)
	}
	ts.use(secret2)
	last := test(S, id1, `{"testParams":{"orderNumber":"A-1044"}}`)
	if last["success"] != true {
		t.Errorf("a call after rotation, with the new secret: %v", last)
	}
	// Test runs: newest first, limit.
	runs = in.get(A+"/tools/"+id1+"/test-runs", key)
	if items, _ := runs.body["items"].([]any); len(items) != 3 || items[0].(map[string]any)["id"] != last["id"] || items[2].(map[string]any)["id"] != run["id"] {
		t.Errorf("test runs = %v", runs.body)
	}
	if items := in.get(S+"/tools/"+id1+"/test-runs?limit=1", key).body["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != last["id"] {
		t.Errorf("test runs, limit 1 = %v", items)
	}

	// Update: the fields given change, the secret is not shown unless a new one was made.
	time.Sleep(2 * time.Millisecond)
	up := in.patch(S+"/tools/"+id1, key, `{"description":"Finds an order.","enabled":false}`)
	tool, _ := up.body["tool"].(map[string]any)
	if up.status != 200 || tool["description"] != "Finds an order." || tool["enabled"] != false || tool["name"] != "get_order_status" ||
		tool["webhookSecret"] != nil || tool["createdAt"] != orders["createdAt"] || tool["updatedAt"] == orders["updatedAt"] {
		t.Errorf("update = %d %v", up.status, up.body)
	}
	if up := in.patch(A+"/tools/"+id1, key, `{}`); up.status != 200 || !jsonEqual(up.body["tool"], tool) {
		t.Errorf("empty update = %d %v, want %v", up.status, up.body, tool)
	}
	up = in.patch(A+"/tools/"+id1, key, `{"webhookSecret":null,"enabled":true}`)
	secret3, _ := up.body["tool"].(map[string]any)["webhookSecret"].(string)
	if up.status != 200 || secret3 == "" || secret3 == secret2 {
		t.Fatalf("update asking for a new secret = %d %v", up.status, up.body)
	}
	ts.use(secret3)
	if run := test(A, id1, `{"testParams":{"orderNumber":"A-1045"}}`); run["success"] != true {
		t.Errorf("a call with the secret a PATCH made: %v", run)
	}
	up = in.patch(S+"/tools/"+id1, key, `{"webhookSecret":"chosen-secret-0002"}`)
	if _, shown := up.body["tool"].(map[string]any)["webhookSecret"]; up.status != 200 || shown {
		t.Errorf("update setting the secret = %d %v", up.status, up.body)
	}
	ts.use("chosen-secret-0002")
	if run := test(S, id1, `{"testParams":{"orderNumber":"A-1046"}}`); run["success"] != true {
		t.Errorf("a call with the secret a PATCH set: %v", run)
	}

	// Bad input: 400 naming every field, nothing changed.
	other := "/v1/agents/backup"
	agentOn(t, in, acme, key, "backup", "")
	r = in.post(other+"/tools", key, `{"name":"lookup","description":"d","parameters":{"type":"object","properties":{},"required":[]},"webhookUrl":"`+ts.URL+`/orders"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create on a sender-less agent = %d %s", r.status, r.raw)
	}
	backupTool := r.body["tool"].(map[string]any)["id"].(string)
	snapshot := func() string {
		var a v1alpha1.Agent
		var s corev1.Secret
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "support"}, &a); err != nil {
			t.Fatal(err)
		}
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: a.OwnSecretName()}, &s); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal([]any{a.Spec.Tools, a.Annotations, s.Data,
			in.count(`SELECT count(*) FROM agent_tool_runs`)})
		return string(b)
	}
	before := snapshot()
	bad := func(method, path, body string, want ...string) {
		t.Helper()
		var r response
		if body == "" {
			r = in.do(method, path, key, nil)
		} else {
			r = in.do(method, path, key, strings.NewReader(body))
		}
		if r.status != http.StatusBadRequest || r.body["code"] != "invalid_request" || !reflect.DeepEqual(fieldPaths(r), want) {
			t.Errorf("%s %s %s = %d %v, want 400 naming %v", method, path, body, r.status, r.body, want)
		}
	}
	good := `"description":"d","parameters":` + orderParams
	bad("POST", S+"/tools", `{}`, "description", "name", "parameters", "webhookUrl")
	bad("POST", A+"/tools", `{"name":"x",`+good+`,"webhookUrl":"http://tools.example.com/x"}`, "webhookUrl")
	bad("POST", A+"/tools", `{"name":"x",`+good+`,"webhookUrl":"https://10.1.2.3/x"}`, "webhookUrl")
	bad("POST", S+"/tools", `{"name":"x",`+good+`,"webhookUrl":"https://169.254.169.254/latest/meta-data"}`, "webhookUrl")
	bad("POST", S+"/tools", `{"name":"x",`+good+`,"webhookUrl":"https://[::1]/x"}`, "webhookUrl")
	bad("POST", S+"/tools", `{"name":"get_order_status",`+good+`,"webhookUrl":"`+ts.URL+`/x"}`, "name")
	bad("POST", A+"/tools", `{"name":"no spaces!","description":"","parameters":{"type":"array"},"webhookUrl":"`+ts.URL+`/x"}`,
		"description", "name", "parameters.properties", "parameters.required", "parameters.type")
	bad("POST", A+"/tools", `{"name":5,"enabled":"yes"}`, "name", "enabled") // of the wrong type: said before anything else
	bad("POST", A+"/tools", `{"name":"x","description":"d","parameters":[],"webhookUrl":"`+ts.URL+`/x","webhookSecret":""}`, "parameters", "webhookSecret")
	bad("PATCH", S+"/tools/"+id1, `{"name":"escalate"}`, "name")
	bad("PATCH", A+"/tools/"+id1, `{"webhookUrl":"https://10.0.0.1/x","description":null,"webhookSecret":"chosen-secret-0003"}`, "description", "webhookUrl")
	bad("POST", S+"/tools/"+id1+"/test", `{}`, "testParams")
	bad("POST", A+"/tools/"+id1+"/test", `{"testParams":[1]}`, "testParams")
	bad("GET", A+"/tools/"+id1+"/test-runs?limit=0", "", "limit")
	bad("GET", S+"/tools?enabled=maybe&limit=500", "", "limit", "enabled")
	if after := snapshot(); after != before {
		t.Errorf("bad input changed the agent:\n%s\n%s", before, after)
	}

	// Ids of another agent, another project, a sender without an agent: 404.
	otherProject, otherKey := sendingProject(t, in, nil, apikey.Test)
	agentOn(t, in, otherProject, otherKey, "theirs", "main")
	for _, c := range []struct{ method, path, key string }{
		{"GET", S + "/tools/" + backupTool, key},
		{"GET", A + "/tools/" + backupTool, key},
		{"PATCH", A + "/tools/" + backupTool, key},
		{"DELETE", S + "/tools/" + backupTool, key},
		{"POST", A + "/tools/" + backupTool + "/webhook/secret", key},
		{"GET", "/v1/agents/theirs/tools", key},
		{"GET", A + "/tools/" + id1, otherKey},
		{"GET", "/v1/senders/nope/agent/tools", key},
	} {
		var body io.Reader
		if c.method == "PATCH" {
			body = strings.NewReader(`{"description":"x"}`)
		}
		if r := in.do(c.method, c.path, c.key, body); r.status != http.StatusNotFound {
			t.Errorf("%s %s = %d, want 404", c.method, c.path, r.status)
		}
	}
	// A tool written with kubectl, signing with a Secret of the user's: its secret is changed
	// there, not here; its times are the agent's.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var b v1alpha1.Agent
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "backup"}, &b); err != nil {
			return err
		}
		b.Spec.Tools = append(b.Spec.Tools, v1alpha1.AgentTool{ID: "by-hand", Name: "by_hand", Description: "d",
			WebhookURL: "https://tools.example.com/x", SecretRef: &v1alpha1.SecretKeyRef{Name: "mine", Key: "tool"},
			Parameters: apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{},"required":[]}`)}})
		return in.k8s.Update(context.Background(), &b)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return in.get(other+"/tools/by-hand", key).status == http.StatusOK })
	byHand := in.get(other+"/tools/by-hand", key).body["tool"].(map[string]any)
	if byHand["enabled"] != true || byHand["name"] != "by_hand" || byHand["createdAt"] == nil {
		t.Errorf("a tool written with kubectl = %v", byHand)
	}
	rot = in.do(http.MethodPost, other+"/tools/by-hand/webhook/secret", key, nil)
	if rot.status != http.StatusConflict || rot.body["code"] != "secret_managed_elsewhere" || rot.header.Get("X-Should-Retry") != "false" {
		t.Errorf("rotate a secret managed elsewhere = %d %v", rot.status, rot.body)
	}
	if r := in.patch(other+"/tools/by-hand", key, `{"webhookSecret":null}`); r.status != http.StatusConflict {
		t.Errorf("a new secret for a secret managed elsewhere = %d %v", r.status, r.body)
	}

	// A key without full access reads, and changes nothing.
	reader := newKey(t, in, acme, apikey.Test, string(apikey.PermissionMessagesRead))
	if r := in.get(S+"/tools/"+id1, reader); r.status != 200 {
		t.Errorf("read with a messages:read key = %d", r.status)
	}
	if r := in.do(http.MethodPost, S+"/tools/"+id1+"/webhook/secret", reader, nil); r.status != http.StatusForbidden {
		t.Errorf("rotate with a messages:read key = %d", r.status)
	}
	if after := snapshot(); after != before {
		t.Errorf("404s and 403s changed the agent")
	}

	// Delete: the tool, its secret and its runs go.
	if r := in.delete(S+"/tools/"+id2, key); r.status != http.StatusNoContent || len(r.raw) != 0 {
		t.Fatalf("delete = %d %s", r.status, r.raw)
	}
	if r := in.get(A+"/tools/"+id2, key); r.status != http.StatusNotFound {
		t.Errorf("GET a deleted tool = %d", r.status)
	}
	if r := in.delete(A+"/tools/"+id2, key); r.status != http.StatusNotFound {
		t.Errorf("delete again = %d", r.status)
	}
	var s corev1.Secret
	if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "support-secrets"}, &s); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Data[v1alpha1.ToolSecretKey(id2)]; ok || len(s.Data[v1alpha1.ToolSecretKey(id1)]) == 0 {
		t.Errorf("the agent's Secret after delete has keys %v", reflect.ValueOf(s.Data).MapKeys())
	}
	if n := in.count(`SELECT count(*) FROM agent_tool_runs WHERE tool_id = $1`, id2); n != 0 {
		t.Errorf("%d test runs of the deleted tool", n)
	}
	if got := ids(in.get(A+"/tools", key)); !reflect.DeepEqual(got, []string{id1}) {
		t.Errorf("tools after delete = %v", got)
	}
}

// TestAgentExecutionsThroughTheAPI: the executions sandbox inbound messages produce, listed
// newest first on both prefixes, by status, in cursor pages, one by one, in the key's mode
// only; an execution not finished is not shown; an unknown status is a 400.
func TestAgentExecutionsThroughTheAPI(t *testing.T) {
	ts := newSignedToolServer(t)
	in := start(t, fastSandbox, ts.rootCAs())
	acme, key := sendingProject(t, in, nil, apikey.Test)
	agentOn(t, in, acme, key, "support", "main")
	const S, A = "/v1/senders/main/agent", "/v1/agents/support"
	r := in.post(S+"/tools", key, `{"name":"get_order_status","description":"Looks an order up.","parameters":`+orderParams+`,"webhookUrl":"`+ts.URL+`/orders"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create tool = %d %s", r.status, r.raw)
	}
	ts.use(r.body["tool"].(map[string]any)["webhookSecret"].(string))

	finished := func() int {
		return in.count(`SELECT count(*) FROM agent_executions WHERE status NOT IN ('pending', 'running')`)
	}
	var inbound []string
	for i, text := range []string{"hello", `call get_order_status {"orderNumber":"B-7"}`, "thanks"} {
		m := receive(t, in, key, fmt.Sprintf(`{"from":"+15005550101","text":%q}`, text))
		inbound = append(inbound, m["id"].(string))
		waitFor(t, func() bool { return finished() == i+1 })
	}
	// Closed all week but one day far from today: the next message is filtered.
	closedDay := strings.ToLower(time.Now().UTC().AddDate(0, 0, 3).Weekday().String())
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var a v1alpha1.Agent
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "support"}, &a); err != nil {
			return err
		}
		a.Spec.BusinessHours = &v1alpha1.BusinessHours{TimeZone: "UTC", Hours: []v1alpha1.OpenHours{{Day: closedDay, From: "00:00", To: "01:00"}}}
		return in.k8s.Update(context.Background(), &a)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		receive(t, in, key, `{"from":"+15005550102","text":"anyone?"}`)
		waitFor(t, func() bool { return finished() == len(inbound)+1 })
		inbound = append(inbound, "")
		return in.count(`SELECT count(*) FROM agent_executions WHERE status = 'filtered'`) == 1
	})
	total := len(inbound)

	list := func(path string) (ids []string, items []map[string]any, next string) {
		t.Helper()
		r := in.get(path, key)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, r.status, r.raw)
		}
		for _, it := range r.body["items"].([]any) {
			m := it.(map[string]any)
			items = append(items, m)
			ids = append(ids, m["id"].(string))
		}
		next, _ = r.body["nextCursor"].(string)
		return ids, items, next
	}
	all, items, next := list(S + "/executions")
	if len(all) != total || next != "" {
		t.Fatalf("%d executions, next %q; want %d", len(all), next, total)
	}
	if got, _, _ := list(A + "/executions"); !reflect.DeepEqual(got, all) {
		t.Errorf("the mirror lists %v, the sender's agent %v", got, all)
	}
	newest, hello := items[0], items[len(items)-1]
	if newest["status"] != "filtered" || newest["errorCode"] != "outside_business_hours" || newest["responseText"] != nil ||
		newest["responseMessageId"] != nil {
		t.Errorf("the filtered execution = %v", newest)
	}
	if hello["status"] != "success" || hello["agentId"] != "support" || hello["inboundMessageId"] != inbound[0] ||
		hello["responseText"] != "[support-model] You said: hello" || hello["responseMessageId"] == nil || hello["cost"] != 0.0 ||
		hello["toolCalls"] != 0.0 || hello["errorCode"] != nil || hello["errorMessage"] != nil || hello["inputTokens"].(float64) <= 0 ||
		len(hello["steps"].([]any)) != 1 {
		t.Errorf("the first execution = %v", hello)
	}
	withTool := items[len(items)-2]
	steps := withTool["steps"].([]any)
	if withTool["toolCalls"] != 1.0 || len(steps) != 2 || steps[0].(map[string]any)["toolCalls"].([]any)[0].(map[string]any)["ok"] != true {
		t.Errorf("the execution calling the tool = %v", withTool)
	}
	if good, bad := ts.counts(); good != 1 || bad != 0 {
		t.Errorf("tool server: %d good, %d bad signatures", good, bad)
	}

	// By status, and in pages (a status filter keeps its cursor).
	if got, _, _ := list(S + "/executions?status=success"); !reflect.DeepEqual(got, all[1:]) {
		t.Errorf("successes = %v, want %v", got, all[1:])
	}
	if got, _, _ := list(A + "/executions?status=filtered"); !reflect.DeepEqual(got, all[:1]) {
		t.Errorf("filtered = %v", got)
	}
	if got, _, next := list(S + "/executions?status=error"); len(got) != 0 || next != "" {
		t.Errorf("errors = %v, next %q", got, next)
	}
	var paged []string
	for path := A + "/executions?limit=3"; ; {
		ids, _, next := list(path)
		paged = append(paged, ids...)
		if next == "" {
			break
		}
		path = S + "/executions?limit=3&cursor=" + url.QueryEscape(next)
	}
	if !reflect.DeepEqual(paged, all) {
		t.Errorf("paged = %v, want %v", paged, all)
	}
	first, _, next := list(S + "/executions?status=success&limit=2")
	rest, _, last := list(S + "/executions?status=success&limit=2&cursor=" + url.QueryEscape(next))
	if !reflect.DeepEqual(append(first, rest...), all[1:]) || last != "" {
		t.Errorf("successes paged = %v + %v (next %q)", first, rest, last)
	}

	// One by one, on both prefixes.
	for _, p := range []string{S, A} {
		r := in.get(p+"/executions/"+all[len(all)-1], key)
		if r.status != http.StatusOK || !jsonEqual(r.body["execution"], hello) {
			t.Errorf("GET %s/executions/%s = %d %v", p, all[len(all)-1], r.status, r.body)
		}
	}

	// An execution not finished is not shown; nor are the other mode's.
	in.exec(`INSERT INTO agent_executions (id, project, test_mode, agent, sender, conversation_id, inbound_message_id, status, created_at)
		VALUES ('aex_pending', $1, true, 'support', 'main', 'cnv_x', 'msg_x', 'pending', now())`, acme)
	if got, _, _ := list(S + "/executions"); !reflect.DeepEqual(got, all) {
		t.Errorf("with a pending execution: %v", got)
	}
	if r := in.get(S+"/executions/aex_pending", key); r.status != http.StatusNotFound {
		t.Errorf("GET a pending execution = %d", r.status)
	}
	live := newKey(t, in, acme, apikey.Live)
	if r := in.get(S+"/executions", live); r.status != 200 || len(r.body["items"].([]any)) != 0 {
		t.Errorf("a live key lists %v", r.body)
	}
	if r := in.get(A+"/executions/"+all[0], live); r.status != http.StatusNotFound {
		t.Errorf("a live key reads a test execution: %d", r.status)
	}

	// Bad filters; other agents' and projects' executions.
	for path, want := range map[string][]string{
		S + "/executions?status=running":             {"status"},
		A + "/executions?status=bogus&limit=0":       {"limit", "status"},
		S + "/executions?cursor=nonsense":            {"cursor"},
		A + "/executions?status=SUCCESS&limit=1&x=1": {"status"},
	} {
		if r := in.get(path, key); r.status != http.StatusBadRequest || !reflect.DeepEqual(fieldPaths(r), want) {
			t.Errorf("GET %s = %d %v, want 400 naming %v", path, r.status, r.body, want)
		}
	}
	agentOn(t, in, acme, key, "backup", "")
	otherProject, otherKey := sendingProject(t, in, nil, apikey.Test)
	agentOn(t, in, otherProject, otherKey, "theirs", "main")
	for _, c := range []struct{ path, key string }{
		{"/v1/agents/backup/executions/" + all[0], key},
		{A + "/executions/nope", key},
		{A + "/executions", otherKey},
		{"/v1/agents/theirs/executions", key},
		{"/v1/senders/main/agent/executions/" + all[0], otherKey},
	} {
		if r := in.get(c.path, c.key); r.status != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", c.path, r.status)
		}
	}
	if got, _, _ := list("/v1/agents/backup/executions"); len(got) != 0 {
		t.Errorf("another agent lists %v", got)
	}
}
