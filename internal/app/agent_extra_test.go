package app_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

// TestAgentVoices: the catalogue, whole and filtered by a language prefix, wins over
// /v1/agents/{agentId}; a malformed language is 400.
func TestAgentVoices(t *testing.T) {
	in := start(t)
	key := newKey(t, in, newProject(t, in, v1alpha1.ProjectSpec{}), apikey.Test)

	all := in.get("/v1/agents/voices", key)
	items, _ := all.body["items"].([]any)
	languages, _ := all.body["languages"].([]any)
	total, _ := all.body["total"].(float64)
	if all.status != 200 || len(items) == 0 || int(total) != len(items) || len(languages) < 2 || languages[0] != "auto" {
		t.Fatalf("GET /v1/agents/voices = %d %v", all.status, all.body)
	}
	if r := in.get("/v1/agents/voices?language=auto", key); len(r.body["items"].([]any)) != len(items) {
		t.Errorf("language=auto lists %d voices, want all %d", len(r.body["items"].([]any)), len(items))
	}
	pt := in.get("/v1/agents/voices?language=pt", key)
	ptItems, _ := pt.body["items"].([]any)
	if pt.status != 200 || len(ptItems) == 0 || len(ptItems) >= len(items) || pt.body["total"] != total || !jsonEqual(pt.body["languages"], languages) {
		t.Fatalf("language=pt = %d %v", pt.status, pt.body)
	}
	for _, it := range ptItems {
		v := it.(map[string]any)
		if !strings.HasPrefix(v["language"].(string), "pt-") || v["id"] == "" || v["name"] == "" {
			t.Errorf("language=pt lists %v", v)
		}
	}
	if r := in.get("/v1/agents/voices?language=en-GB", key); r.status != 200 || len(r.body["items"].([]any)) == 0 {
		t.Errorf("language=en-GB = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/agents/voices?language=pt_BR", key); r.status != 400 || !slices.Equal(fieldPaths(r), []string{"language"}) {
		t.Errorf("language=pt_BR = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/agents/voices", ""); r.status != 401 {
		t.Errorf("without a key = %d", r.status)
	}
}

// TestAgentTemplates: the list, each template with its files, and 404 for an unknown one.
func TestAgentTemplates(t *testing.T) {
	in := start(t)
	key := newKey(t, in, newProject(t, in, v1alpha1.ProjectSpec{}), apikey.Test)

	r := in.get("/v1/agent-templates", key)
	items, _ := r.body["items"].([]any)
	if r.status != 200 || len(items) < 4 {
		t.Fatalf("GET /v1/agent-templates = %d %v", r.status, r.body)
	}
	voice := 0
	for _, it := range items {
		s := it.(map[string]any)
		g := in.get("/v1/agent-templates/"+s["id"].(string), key)
		tpl, _ := g.body["template"].(map[string]any)
		files, _ := tpl["files"].([]any)
		if g.status != 200 || tpl["id"] != s["id"] || tpl["name"] != s["name"] || tpl["voice"] != s["voice"] || len(files) == 0 {
			t.Fatalf("GET template %s = %d %v", s["id"], g.status, g.body)
		}
		index := files[0].(map[string]any)
		if index["path"] != "index.ts" || strings.Count(index["content"].(string), "defineTool(") != int(s["toolCount"].(float64)) {
			t.Errorf("template %s: toolCount %v, index.ts %v", s["id"], s["toolCount"], index["path"])
		}
		if s["voice"] == true {
			voice++
		}
	}
	if voice == 0 {
		t.Error("no template answers calls")
	}
	if r := in.get("/v1/agent-templates/fermi", key); r.status != 404 || r.body["code"] != "not_found" {
		t.Errorf("an unknown template = %d %v", r.status, r.body)
	}
}

// TestAgentDryRun: a dry run answers with the sandbox model for a test key, reports a tool call
// without running it unless asked, runs it (signed, through the deliveries' client) when asked,
// and writes nothing: no message, no execution, no handoff, whatever it did.
func TestAgentDryRun(t *testing.T) {
	tools := newToolServer(t, "tool-secret")
	in := start(t, fastSandbox, deliveringTo(tools.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs))
	acme, key := sendingProject(t, in, nil, apikey.Test)
	in.createObjects(t, labelledSecret(acme, "agent-keys", map[string]string{"openai": "sk-test", "tool": "tool-secret"}),
		&v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "support"}, Spec: v1alpha1.AgentSpec{
			DisplayName: "Support", Enabled: true, Provider: v1alpha1.ModelOpenAI, Model: "gpt-4o-mini",
			APIKeyRef: &v1alpha1.SecretKeyRef{Name: "agent-keys", Key: "openai"}, SystemPrompt: "Help.",
			Senders: []string{"main"}, Handoff: &v1alpha1.Handoff{Keywords: []string{"human"}, Message: "A person will answer."},
			Tools: []v1alpha1.AgentTool{{ID: "orders", Name: "get_order_status", Description: "Order status.",
				WebhookURL: tools.URL + "/orders", SecretRef: &v1alpha1.SecretKeyRef{Name: "agent-keys", Key: "tool"},
				Parameters: apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"orderNumber":{"type":"string"}},"required":["orderNumber"]}`)}}},
		}})
	waitFor(t, func() bool { return in.get("/v2/agents/support", key).status == 200 })
	// A conversation exists, so that a dry run that wrote into one would be seen.
	receive(t, in, key, `{"from":"+15005550101","text":"hello"}`)
	waitFor(t, func() bool { return in.count(`SELECT count(*) FROM agent_executions WHERE status = 'success'`) == 1 })
	rows := func() []int {
		return []int{in.count(`SELECT count(*) FROM messages`), in.count(`SELECT count(*) FROM agent_executions`),
			in.count(`SELECT count(*) FROM agent_handoffs`), in.count(`SELECT count(*) FROM conversations`)}
	}
	before := rows()

	test := func(body string) response {
		t.Helper()
		return in.post("/v1/agents/support/test", key, body)
	}
	warned := func(r response, part string) bool {
		ws, _ := r.body["warnings"].([]any)
		return slices.ContainsFunc(ws, func(w any) bool { return strings.Contains(w.(string), part) })
	}

	// A text answer of the sandbox model, with the context of the history.
	r := test(`{"message":"hello there","history":[{"role":"user","content":"hi"},{"role":"assistant","content":"Hello!"}]}`)
	if r.status != 200 || r.body["success"] != true || r.body["text"] != "[gpt-4o-mini] You said: hello there" || r.body["error"] != nil ||
		r.body["inputTokens"].(float64) < 5 || r.body["knowledgeChunksUsed"] != 0.0 || len(r.body["executedToolCalls"].([]any)) != 0 {
		t.Fatalf("dry run = %d %v", r.status, r.body)
	}
	if !warned(r, "get_order_status") {
		t.Errorf("no warning that the tools were not run: %v", r.body["warnings"])
	}

	// A tool call, not run.
	r = test(`{"message":"call get_order_status {\"orderNumber\":\"A-1042\"}"}`)
	if r.status != 200 || r.body["success"] != true || r.body["text"] != nil || !warned(r, `The model called get_order_status with {"orderNumber":"A-1042"}`) {
		t.Fatalf("a tool call = %d %v", r.status, r.body)
	}
	tools.mu.Lock()
	if len(tools.calls) != 0 {
		t.Errorf("the tool was called %d times without executeTools", len(tools.calls))
	}
	tools.mu.Unlock()

	// The same, run: the tool's answer goes back to the model.
	r = test(`{"message":"call get_order_status {\"orderNumber\":\"A-1042\"}","executeTools":true,"useKnowledgeBase":false}`)
	ran, _ := r.body["executedToolCalls"].([]any)
	if r.status != 200 || r.body["success"] != true || r.body["text"] != `The tool get_order_status answered: {"status":"shipped","order":"A-1042"}` ||
		len(ran) != 1 || !jsonEqual(ran[0], map[string]any{"name": "get_order_status", "ok": true, "error": nil}) {
		t.Fatalf("executeTools = %d %v", r.status, r.body)
	}
	tools.mu.Lock()
	if len(tools.calls) != 1 || tools.bad != 0 || tools.calls[0]["orderNumber"] != "A-1042" || tools.calls[0]["_execution"] != "" {
		t.Errorf("tool calls = %v, bad signatures %d", tools.calls, tools.bad)
	}
	tools.mu.Unlock()

	// A handoff keyword: the handoff message, and nothing handed over.
	r = test(`{"message":"human"}`)
	if r.status != 200 || r.body["text"] != "A person will answer." || !warned(r, "handoff keyword") {
		t.Errorf("handoff keyword = %d %v", r.status, r.body)
	}
	// Retrieval asked for, from an agent with no knowledge base: nothing retrieved.
	if r = test(`{"message":"hi","useKnowledgeBase":true}`); r.status != 200 || r.body["knowledgeChunksUsed"] != 0.0 || r.body["success"] != true {
		t.Errorf("useKnowledgeBase = %v", r.body)
	}

	// Bad requests: every invalid field; an unknown agent.
	r = test(`{"history":[{"role":"robot","content":"x"},{"role":"user"}],"executeTools":"yes"}`)
	if r.status != 400 || !slices.Equal(fieldPaths(r), []string{"executeTools"}) {
		t.Errorf("a wrong type = %d %v", r.status, r.body)
	}
	r = test(`{"history":[{"role":"robot","content":"x"},{"role":"user"}]}`)
	if r.status != 400 || !slices.Equal(fieldPaths(r), []string{"message", "history[0].role", "history[1].content"}) {
		t.Errorf("invalid fields = %d %v", r.status, r.body)
	}
	if r = in.post("/v1/agents/nobody/test", key, `{"message":"hi"}`); r.status != 404 {
		t.Errorf("an unknown agent = %d %v", r.status, r.body)
	}

	if after := rows(); !slices.Equal(after, before) {
		t.Errorf("rows of messages, executions, handoffs, conversations: %v before the dry runs, %v after", before, after)
	}
}

// TestAgentsV2: create lists every missing field at once; channel links connect the sender
// holding an address's channel (409 for one-way SMS, 404 for no such channel, 400 for missing
// fields or a sender another agent answers on) and disconnect it; refused requests change nothing.
func TestAgentsV2(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	ctx := context.Background()
	patch := func(path, body string) response {
		return in.do(http.MethodPatch, path, key, strings.NewReader(body))
	}
	del := func(path string) response { return in.do(http.MethodDelete, path, key, nil) }

	// Every missing required field, and every invalid one, at once; nothing created.
	r := in.post("/v2/agents", key, `{"provider":"openai","temperature":5}`)
	if r.status != 400 || r.body["code"] != "invalid_request" ||
		!slices.Equal(fieldPaths(r), []string{"apiKey", "model", "name", "systemPrompt", "temperature"}) {
		t.Fatalf("create with missing fields = %d %v", r.status, r.body)
	}
	if r = in.post("/v2/agents", key, `{"name":5,"provider":true}`); r.status != 400 || !slices.Equal(fieldPaths(r), []string{"name", "provider"}) {
		t.Errorf("create with wrong types = %d %v", r.status, r.body)
	}
	if r = in.get("/v2/agents", key); r.status != 200 || len(r.body["items"].([]any)) != 0 {
		t.Fatalf("after refused creates: %d %v", r.status, r.body)
	}

	r = in.post("/v2/agents", key, `{"name":"Support","provider":"openai","model":"gpt-4o-mini","systemPrompt":"Help.","apiKey":"sk-secret"}`)
	support, _ := r.body["agent"].(map[string]any)
	if r.status != 201 || support["enabled"] != false || len(support["channels"].([]any)) != 0 || strings.Contains(string(r.raw), "sk-secret") {
		t.Fatalf("create = %d %s", r.status, r.raw)
	}
	if _, ok := support["senderId"]; ok {
		t.Errorf("a v2 agent carries senderId: %v", support)
	}
	id := support["id"].(string)
	r = in.post("/v2/agents", key, `{"name":"Sales","provider":"zavu","model":"gpt-4o-mini","systemPrompt":"Sell.","enabled":true}`)
	sales, _ := r.body["agent"].(map[string]any)
	if r.status != 201 || sales["enabled"] != true {
		t.Fatalf("create zavu = %d %v", r.status, r.body)
	}
	salesID := sales["id"].(string)

	// Listed newest first, a page at a time.
	page := in.get("/v2/agents?limit=1", key)
	next, _ := page.body["nextCursor"].(string)
	if page.status != 200 || len(page.body["items"].([]any)) != 1 || next == "" {
		t.Fatalf("first page = %d %v", page.status, page.body)
	}
	rest := in.get("/v2/agents?limit=1&cursor="+url.QueryEscape(next), key)
	first, second := page.body["items"].([]any)[0].(map[string]any), rest.body["items"].([]any)[0].(map[string]any)
	if got := []any{first["id"], second["id"]}; !slices.Contains(got, any(id)) || !slices.Contains(got, any(salesID)) || rest.body["nextCursor"] != "" {
		t.Errorf("pages = %v then %v", page.body, rest.body)
	}

	agentOf := func(name string) v1alpha1.Agent {
		t.Helper()
		var a v1alpha1.Agent
		if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: name}, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	channels := func(r response) []string {
		var out []string
		for _, c := range r.body["agent"].(map[string]any)["channels"].([]any) {
			m := c.(map[string]any)
			out = append(out, m["type"].(string)+"@"+m["address"].(string)+"/"+m["v1SenderId"].(string))
		}
		slices.Sort(out)
		return out
	}

	// Connect a channel: the agent answers on the sender holding it, every channel of it.
	r = in.post("/v2/agents/"+id+"/channels", key, `{"address":"+15005550006","type":"whatsapp"}`)
	if want := []string{"email@hello@acme.example/main", "sms@+15005550006/main", "whatsapp@+15005550006/main"}; r.status != 200 || !slices.Equal(channels(r), want) {
		t.Fatalf("connect = %d %v, want channels %v", r.status, r.body, want)
	}
	if a := agentOf(id); !slices.Equal(a.Spec.Senders, []string{"main"}) {
		t.Errorf("senders = %v", a.Spec.Senders)
	}
	if r = in.get("/v2/agents/"+id, key); r.status != 200 || len(channels(r)) != 3 {
		t.Errorf("GET = %d %v", r.status, r.body)
	}

	// Refused connects change nothing.
	if r = in.post("/v2/channels", key, `{"type":"sms_oneway","address":"+15005550007","name":"Alerts"}`); r.status != 201 {
		t.Fatalf("a one-way SMS channel = %d %v", r.status, r.body)
	}
	unchanged := agentOf(id).Generation
	r = in.post("/v2/agents/"+id+"/channels", key, `{"address":"+15005550007","type":"sms_oneway"}`)
	if r.status != 409 || r.body["code"] != "channel_cannot_receive" || r.header.Get("X-Should-Retry") != "false" {
		t.Errorf("one-way SMS = %d %v", r.status, r.body)
	}
	if r = in.post("/v2/agents/"+id+"/channels", key, `{"address":"+19995550000","type":"sms"}`); r.status != 404 {
		t.Errorf("no such channel = %d %v", r.status, r.body)
	}
	if r = in.post("/v2/agents/"+id+"/channels", key, `{}`); r.status != 400 || !slices.Equal(fieldPaths(r), []string{"address", "type"}) {
		t.Errorf("missing fields = %d %v", r.status, r.body)
	}
	if r = in.post("/v2/agents/"+id+"/channels", key, `{"address":"+15005550006","type":"fax"}`); r.status != 400 || !slices.Equal(fieldPaths(r), []string{"type"}) {
		t.Errorf("an unknown type = %d %v", r.status, r.body)
	}
	for _, body := range []string{`{"address":"+15005550006","type":"sms"}`, `{"address":"+15005550007","type":"sms_oneway"}`} {
		if r = in.post("/v2/agents/nobody/channels", key, body); r.status != 404 {
			t.Errorf("an unknown agent, %s = %d %v", body, r.status, r.body)
		}
	}
	// Another agent cannot take the sender: 400 naming the one that answers on it.
	sales0 := agentOf(salesID).Generation
	r = in.post("/v2/agents/"+salesID+"/channels", key, `{"address":"hello@acme.example","type":"email"}`)
	if details, _ := r.body["details"].(map[string]any); r.status != 400 || details["agentId"] != id || len(fieldErrors(r)) == 0 {
		t.Errorf("a sender another agent answers on = %d %v", r.status, r.body)
	}
	if r = in.get("/v2/agents/"+id+"/channels", key); r.status != 405 || r.header.Get("Allow") != "POST" {
		t.Errorf("GET channels = %d (Allow %q)", r.status, r.header.Get("Allow"))
	}
	if agentOf(id).Generation != unchanged || agentOf(salesID).Generation != sales0 {
		t.Error("a refused connect changed an agent")
	}

	// Disconnect: the sender goes (and its other channels with it); again is 404.
	if r = del("/v2/agents/" + id + "/channels/+15005550006/whatsapp"); r.status != 204 {
		t.Fatalf("disconnect = %d %v", r.status, r.body)
	}
	if a := agentOf(id); len(a.Spec.Senders) != 0 {
		t.Errorf("senders after disconnect = %v", a.Spec.Senders)
	}
	for _, path := range []string{"/channels/+15005550006/whatsapp", "/channels/+19995550000/sms", "/channels/+15005550007/sms_oneway"} {
		if r = del("/v2/agents/" + id + path); r.status != 404 {
			t.Errorf("DELETE %s = %d %v", path, r.status, r.body)
		}
	}

	// An agent that triggers on some channels gets the one connected added to them.
	if r = patch("/v2/agents/"+salesID, `{"triggerOnChannels":["email"],"maxTokens":500}`); r.status != 200 {
		t.Fatalf("PATCH = %d %v", r.status, r.body)
	}
	r = in.post("/v2/agents/"+salesID+"/channels", key, `{"address":"+15005550006","type":"sms"}`)
	if want := []string{"email@hello@acme.example/main", "sms@+15005550006/main"}; r.status != 200 || !slices.Equal(channels(r), want) {
		t.Fatalf("connect to sms = %d %v, want %v", r.status, r.body, want)
	}
	if a := agentOf(salesID); !slices.Equal(a.Spec.TriggerOnChannels, []v1alpha1.Channel{"email", "sms"}) || *a.Spec.MaxTokens != 500 {
		t.Errorf("triggerOnChannels = %v, maxTokens %v", a.Spec.TriggerOnChannels, a.Spec.MaxTokens)
	}
	// whatsapp of the same sender is not among its channels: disconnecting it is 404.
	if r = del("/v2/agents/" + salesID + "/channels/+15005550006/whatsapp"); r.status != 404 {
		t.Errorf("a channel it does not trigger on = %d %v", r.status, r.body)
	}

	// A refused PATCH changes nothing.
	unchanged = agentOf(salesID).Generation
	if r = patch("/v2/agents/"+salesID, `{"name":"","temperature":3}`); r.status != 400 || !slices.Equal(fieldPaths(r), []string{"name", "temperature"}) {
		t.Errorf("invalid PATCH = %d %v", r.status, r.body)
	}
	if agentOf(salesID).Generation != unchanged {
		t.Error("a refused PATCH changed the agent")
	}

	// Delete.
	if r = del("/v2/agents/" + id); r.status != 204 {
		t.Fatalf("DELETE = %d %v", r.status, r.body)
	}
	if r = in.get("/v2/agents/"+id, key); r.status != 404 {
		t.Errorf("GET a deleted agent = %d", r.status)
	}
}
