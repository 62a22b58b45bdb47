package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

// bookingFlow is a flow that books an appointment over several messages: the contact's name,
// a date, the booking tool, a confirmation.
func bookingFlow(tool string) string {
	return fmt.Sprintf(`{"name":"Book","description":"Book an appointment","trigger":{"type":"keyword","keywords":["book"]},
	"steps":[
	 {"id":"ask-name","type":"collect","config":{"question":"What is your name?","field":"name"},"nextStepId":"ask-date"},
	 {"id":"ask-date","type":"collect","config":{"question":"Which day (YYYY-MM-DD)?","field":"date","validation":"date"},"nextStepId":"book"},
	 {"id":"book","type":"tool","config":{"tool":%q,"arguments":{"orderNumber":"{{date}}"},"resultField":"booking"},"nextStepId":"done"},
	 {"id":"done","type":"message","config":{"text":"Booked {{date}} for {{name}}: {{booking.status}}."}}
	]}`, tool)
}

// TestFlowBooksAnAppointment: a keyword starts a flow whose steps run as written over several
// messages (a wrong date asked again), the tool is called with the collected answers, the
// contact's name is kept on the contact, and the conversation leaves the flow at its end; a
// flow with active conversations cannot be deleted; duplicate copies a flow, disabled; bad
// flows are refused with the paths of what is wrong, and nothing is written.
func TestFlowBooksAnAppointment(t *testing.T) {
	tools := newToolServer(t, "tool-secret")
	in := start(t, fastSandbox, deliveringTo(tools.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs))
	acme, key := sendingProject(t, in, nil, apikey.Test)
	in.createObjects(t, labelledSecret(acme, "agent-keys", map[string]string{"tool": "tool-secret"}),
		&v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "support"}, Spec: v1alpha1.AgentSpec{
			DisplayName: "Support", Enabled: true, Provider: v1alpha1.ModelZavu, Model: "sandbox", SystemPrompt: "Help.",
			Senders: []string{"main"},
			Tools: []v1alpha1.AgentTool{{ID: "orders", Name: "get_order_status", Description: "Order status.",
				WebhookURL: tools.URL + "/orders", SecretRef: &v1alpha1.SecretKeyRef{Name: "agent-keys", Key: "tool"},
				Parameters: apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"orderNumber":{"type":"string"}}}`)}}}}})
	waitFor(t, func() bool {
		var a v1alpha1.Agent
		_ = in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "support"}, &a)
		return len(a.Status.Senders) == 1
	})
	flows := "/v1/senders/main/agent/flows"

	// Bad flows: each refused with its path, nothing written.
	for body, path := range map[string]string{
		strings.Replace(bookingFlow("get_order_status"), `"nextStepId":"done"`, `"nextStepId":"nowhere"`, 1): "steps[2].nextStepId",
		bookingFlow("cancel_everything"): "steps[2].config.tool",
		strings.Replace(bookingFlow("get_order_status"), `"field":"date"`, `"field":"1date"`, 1):                                                                                                           "steps[1].config.field",
		`{"name":"Loop","trigger":{"type":"always"},"steps":[{"id":"a","type":"message","config":{"text":"hi"},"nextStepId":"b"},{"id":"b","type":"message","config":{"text":"again"},"nextStepId":"a"}]}`: "steps",
		`{"name":"No steps","trigger":{"type":"always"},"steps":[]}`:                                                                                                                                       "steps",
		`{"name":"Bad trigger","trigger":{"type":"sometimes"},"steps":[{"id":"a","type":"message","config":{"text":"hi"}}]}`:                                                                               "trigger.type",
	} {
		r := in.post(flows, key, body)
		if r.status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(r.body), path) {
			t.Errorf("flow refused %d, want 400 naming %s: %v", r.status, path, r.body)
		}
	}
	var a v1alpha1.Agent
	if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "support"}, &a); err != nil || len(a.Spec.Flows) != 0 {
		t.Fatalf("flows after refused bodies: %v %v", a.Spec.Flows, err)
	}

	r := in.post(flows, key, bookingFlow("get_order_status"))
	if r.status != http.StatusCreated {
		t.Fatalf("create flow = %d %v", r.status, r.body)
	}
	flowID := r.body["flow"].(map[string]any)["id"].(string)
	waitFor(t, func() bool { // the worker's cache sees the flow
		_ = in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "support"}, &a)
		return len(a.Spec.Flows) == 1
	})

	replies := func(conversation string) []string {
		var out []string
		items := in.get("/v1/conversations/"+conversation+"/messages", key).body["items"].([]any)
		for i := len(items) - 1; i >= 0; i-- { // oldest first
			if m := items[i].(map[string]any); m["direction"] == "outbound" {
				out = append(out, m["text"].(string))
			}
		}
		return out
	}
	conv := receive(t, in, key, `{"from":"+15005550131","text":"Book"}`)["conversationId"].(string)
	say := func(text string, want ...string) {
		t.Helper()
		n := len(replies(conv))
		if text != "" {
			receive(t, in, key, fmt.Sprintf(`{"from":"+15005550131","text":%q}`, text))
		}
		waitFor(t, func() bool { return len(replies(conv)) >= n+len(want) })
		got := replies(conv)[n:]
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after %q the agent said %q, want %q", text, got, want)
		}
	}
	say("", "What is your name?")
	say("Ada Lovelace", "Which day (YYYY-MM-DD)?")
	if r := in.delete(flows+"/"+flowID, key); r.status != http.StatusConflict || r.body["code"] != "flow_has_active_sessions" {
		t.Fatalf("delete a flow a conversation is in = %d %v", r.status, r.body)
	}
	say("next tuesday", "Sorry, I didn't get that. Which day (YYYY-MM-DD)?")
	say("2026-12-03", "Booked 2026-12-03 for Ada Lovelace: shipped.")
	tools.mu.Lock()
	if len(tools.calls) != 1 || tools.calls[0]["orderNumber"] != "2026-12-03" {
		t.Errorf("tool calls = %v", tools.calls)
	}
	tools.mu.Unlock()
	if n := in.count(`SELECT count(*) FROM contacts WHERE display_name = 'Ada Lovelace' AND metadata->>'date' = '2026-12-03'`); n != 1 {
		t.Errorf("%d contacts with the collected answers", n)
	}
	// The session ends once the flow's last message is sent: a moment after the reply shows.
	waitFor(t, func() bool { return in.count(`SELECT count(*) FROM agent_flow_sessions`) == 0 })
	// Out of the flow, the model answers again.
	say("thanks", "[sandbox] You said: thanks")

	r = in.post(flows+"/"+flowID+"/duplicate", key, `{"newName":"Book again"}`)
	if r.status != http.StatusCreated || r.body["flow"].(map[string]any)["enabled"] != false || r.body["flow"].(map[string]any)["name"] != "Book again" {
		t.Fatalf("duplicate = %d %v", r.status, r.body)
	}
	if r := in.post(flows+"/"+flowID+"/duplicate", key, `{"newName":"book"}`); r.status != http.StatusBadRequest {
		t.Errorf("a copy named as another flow = %d", r.status)
	}
	if r := in.get("/v1/agents/support/flows/"+flowID, key); r.status != http.StatusOK || r.body["flow"].(map[string]any)["name"] != "Book" {
		t.Errorf("the flow through the agent's route = %d %v", r.status, r.body)
	}
	page := in.get(flows+"?enabled=true", key).body["items"].([]any)
	if len(page) != 1 || page[0].(map[string]any)["id"] != flowID {
		t.Errorf("enabled flows = %v", page)
	}
	// Deleting a contact takes its conversations out of their flows: the flow can be deleted.
	conv2 := receive(t, in, key, `{"from":"+15005550132","text":"book"}`)["conversationId"].(string)
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM agent_flow_sessions WHERE conversation_id = '`+conv2+`'`) == 1
	})
	var contactID string
	if err := in.db.QueryRow(context.Background(), `SELECT contact_id FROM conversations WHERE id = $1`, conv2).Scan(&contactID); err != nil {
		t.Fatal(err)
	}
	if r := in.delete("/v1/contacts/"+contactID, key); r.status != http.StatusNoContent {
		t.Fatalf("delete the contact = %d %v", r.status, r.body)
	}
	if n := in.count(`SELECT count(*) FROM agent_flow_sessions`); n != 0 {
		t.Errorf("%d flow sessions after the contact was deleted", n)
	}
	if r := in.delete(flows+"/"+flowID, key); r.status != http.StatusNoContent {
		t.Errorf("delete a flow no conversation is in = %d %v", r.status, r.body)
	}
}

// TestFlowStartedByTheModel: an intent flow is offered to the model as start_flow; when the model
// starts it (the sandbox model calls a tool it is asked to), its steps run as written.
func TestFlowStartedByTheModel(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	knowledgeAgent(t, in, acme)
	r := in.post("/v1/senders/main/agent/flows", key, `{"name":"Callback","trigger":{"type":"intent","intent":"the contact wants a call back"},
		"steps":[{"id":"when","type":"collect","config":{"question":"When should we call?","field":"when"}}]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create flow = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		var a v1alpha1.Agent
		_ = in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "support"}, &a)
		return len(a.Spec.Flows) == 1
	})
	conv := receive(t, in, key, `{"from":"+15005550150","text":"call start_flow {\"flow\":\"Callback\"}"}`)["conversationId"].(string)
	waitFor(t, func() bool {
		for _, it := range in.get("/v1/conversations/"+conv+"/messages", key).body["items"].([]any) {
			if m := it.(map[string]any); m["direction"] == "outbound" {
				if m["text"] != "When should we call?" {
					t.Fatalf("answer = %q", m["text"])
				}
				return true
			}
		}
		return false
	})
	// The flow's state is saved after the question is sent: the session may come a moment after.
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM agent_flow_sessions WHERE conversation_id = '`+conv+`'`) == 1
	})
}
