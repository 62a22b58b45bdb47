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
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/llm/anthropic/anthropictest"
	"github.com/switchboard-io/switchboard/internal/llm/google/googletest"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// toolServer is an https tool webhook that checks each call's signature and answers with the
// order it was asked for.
type toolServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls []map[string]any
	bad   int // calls whose signature did not verify
}

func newToolServer(t *testing.T, secret string) *toolServer {
	ts := &toolServer{}
	ts.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if r.Header.Get("X-Service-Signature") != hex.EncodeToString(mac.Sum(nil)) {
			ts.bad++
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var args map[string]any
		_ = json.Unmarshal(body, &args)
		args["_execution"] = r.Header.Get("X-Service-Execution")
		ts.calls = append(ts.calls, args)
		_, _ = io.WriteString(w, `{"status":"shipped","order":"`+args["orderNumber"].(string)+`"}`)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestAgentAnswersInTheSandbox: an inbound message on a sender an enabled agent answers gets
// the agent's reply through the send path (marked as the agent's, once), with a tool the
// model asked for called (signed) and every step recorded; a conversation handed to a human by
// keyword gets no more answers; a disabled agent answers nothing.
func TestAgentAnswersInTheSandbox(t *testing.T) {
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
	waitFor(t, func() bool {
		var a v1alpha1.Agent
		_ = in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "support"}, &a)
		return len(a.Status.Senders) == 1
	})

	replies := func(conversation string) []map[string]any {
		var out []map[string]any
		for _, it := range in.get("/v1/conversations/"+conversation+"/messages", key).body["items"].([]any) {
			m := it.(map[string]any)
			if m["direction"] == "outbound" {
				out = append(out, m)
			}
		}
		return out
	}
	// A plain message: the sandbox model echoes it.
	m := receive(t, in, key, `{"from":"+15005550101","text":"hello there"}`)
	conv := m["conversationId"].(string)
	waitFor(t, func() bool { return len(replies(conv)) == 1 })
	reply := replies(conv)[0]
	if reply["text"] != "[gpt-4o-mini] You said: hello there" || reply["metadata"].(map[string]any)["agentId"] != "support" {
		t.Fatalf("reply = %v", reply)
	}

	// A message asking for the tool: the tool is called, signed, and its answer told.
	receive(t, in, key, `{"from":"+15005550101","text":"call get_order_status {\"orderNumber\":\"A-1042\"}"}`)
	waitFor(t, func() bool { return len(replies(conv)) == 2 })
	if got := replies(conv)[0]["text"]; got != `The tool get_order_status answered: {"status":"shipped","order":"A-1042"}` {
		t.Fatalf("reply after the tool = %v", got)
	}
	tools.mu.Lock()
	if len(tools.calls) != 1 || tools.bad != 0 || tools.calls[0]["orderNumber"] != "A-1042" || tools.calls[0]["_execution"] == "" {
		t.Errorf("tool calls = %v, bad signatures %d", tools.calls, tools.bad)
	}
	tools.mu.Unlock()
	// An unknown tool goes back to the model as an error naming the valid ones.
	receive(t, in, key, `{"from":"+15005550101","text":"call cancel_order {}"}`)
	waitFor(t, func() bool { return len(replies(conv)) == 3 })
	if got := replies(conv)[0]["text"].(string); !strings.Contains(got, `There is no tool \"cancel_order\"`) && !strings.Contains(got, `There is no tool "cancel_order". The tools are: get_order_status.`) {
		t.Fatalf("reply after an unknown tool = %v", got)
	}

	// Every execution recorded, with its steps; one reply each.
	if n := in.count(`SELECT count(*) FROM agent_executions WHERE status = 'success' AND response_message_id IS NOT NULL`); n != 3 {
		t.Errorf("%d successful executions", n)
	}
	if n := in.count(`SELECT count(*) FROM agent_executions WHERE tool_calls = 1 AND jsonb_array_length(steps) = 2`); n != 2 {
		t.Errorf("%d executions with one tool call in two steps", n)
	}

	// The keyword hands the conversation to a human: the handoff message, then silence.
	receive(t, in, key, `{"from":"+15005550101","text":"Human"}`)
	waitFor(t, func() bool { return len(replies(conv)) == 4 })
	if got := replies(conv)[0]["text"]; got != "A person will answer." {
		t.Fatalf("handoff reply = %v", got)
	}
	receive(t, in, key, `{"from":"+15005550101","text":"still there?"}`)
	if n := in.count(`SELECT count(*) FROM agent_executions`); n != 4 {
		t.Errorf("%d executions after the handoff, want 4 (none for a conversation with a human)", n)
	}

	// Another contact, with the agent disabled: no execution, no reply.
	var a v1alpha1.Agent
	if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "support"}, &a); err != nil {
		t.Fatal(err)
	}
	a.Spec.Enabled = false
	if err := in.k8s.Update(context.Background(), &a); err != nil {
		t.Fatal(err)
	}
	// Once the change reaches the api role's cache, a new contact's message enqueues nothing.
	contact := 0
	waitFor(t, func() bool {
		contact++
		before := in.count(`SELECT count(*) FROM agent_executions`)
		receive(t, in, key, fmt.Sprintf(`{"from":"+1500555%04d","text":"anyone?"}`, 200+contact))
		return in.count(`SELECT count(*) FROM agent_executions`) == before
	})
}

// TestAgentThroughModelPeers: a live inbound SMS (through the Twilio peer) on a sender whose
// agent calls Anthropic, falling back to Gemini: Anthropic overloaded (529) moves the same
// execution to Gemini, whose answer goes out through Twilio; then Anthropic answers the next
// one. A model that refuses the key (401) fails the execution at once, without its fallback,
// and sends nothing.
func TestAgentThroughModelPeers(t *testing.T) {
	twilio := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, rcv.trusted())
	acme, _ := twilioProject(t, in, twilio, rcv)
	claude := anthropictest.NewServer(t, anthropictest.Options{})
	gemini := googletest.New(googletest.Options{})
	t.Cleanup(gemini.Close)
	ctx := context.Background()
	in.createObjects(t,
		labelledSecret(acme, "model-keys", map[string]string{"apiKey": anthropictest.DefaultAPIKey}),
		labelledSecret(acme, "gemini-keys", map[string]string{"apiKey": googletest.Key}),
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "claude"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderAnthropic, BaseURL: claude.URL(), SecretRef: &v1alpha1.ProviderSecretRef{Name: "model-keys"}}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "gemini"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderGoogle, BaseURL: gemini.URL(), SecretRef: &v1alpha1.ProviderSecretRef{Name: "gemini-keys"}}},
		&v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "support"}, Spec: v1alpha1.AgentSpec{
			DisplayName: "Support", Enabled: true, Provider: v1alpha1.ModelAnthropic, Model: "claude-haiku-4-5", ProviderRef: "claude",
			Fallbacks:    []v1alpha1.FallbackModel{{Provider: v1alpha1.ModelGoogle, Model: "gemini-2.5-flash", ProviderRef: "gemini"}},
			SystemPrompt: "Help.", Senders: []string{"main"}}})
	waitFor(t, func() bool {
		var a v1alpha1.Agent
		_ = in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "support"}, &a)
		return a.Status.ObservedGeneration == a.Generation && len(a.Status.Senders) == 1 && a.IsReady()
	})
	webhook := in.url + "/callbacks/twilio/" + acme + "/twilio/inbound"
	say := func(text string) {
		t.Helper()
		if status, body, err := twilio.SendInbound(ctx, webhook, "+15005550120", "+15005550006", text); err != nil || status != http.StatusOK {
			t.Fatalf("inbound = %d %q %v", status, body, err)
		}
	}
	sent := func() []string {
		var out []string
		for _, m := range twilio.Messages() {
			out = append(out, m.Body)
		}
		return out
	}
	// The Messages API calls (the Provider's credential check lists models too).
	claudeCalls := func() int {
		n := 0
		for _, r := range claude.Requests() {
			if r.Path == "/v1/messages" {
				n++
			}
		}
		return n
	}

	claude.Fail(anthropictest.Failure{Status: 529})
	say("Is my order ready?")
	waitFor(t, func() bool { return len(sent()) == 1 })
	if got := sent()[0]; !strings.Contains(got, "Is my order ready?") {
		t.Fatalf("the fallback's reply = %q", got)
	}
	var provider, model string
	var steps int
	if err := in.db.QueryRow(ctx, `SELECT provider, model, jsonb_array_length(steps) FROM agent_executions`).Scan(&provider, &model, &steps); err != nil {
		t.Fatal(err)
	}
	if provider != "google" || model != "gemini-2.5-flash" || steps != 2 {
		t.Errorf("execution: %s %s in %d steps, want google gemini-2.5-flash in 2", provider, model, steps)
	}
	if n := claudeCalls(); n != 1 {
		t.Errorf("anthropic saw %d requests", n)
	}

	say("And the invoice?")
	waitFor(t, func() bool { return len(sent()) == 2 })
	if got := sent()[1]; !strings.Contains(got, "And the invoice?") {
		t.Errorf("anthropic's reply = %q", got)
	}
	if n := claudeCalls(); n != 2 || len(gemini.Requests()) != 1 {
		t.Errorf("anthropic saw %d requests, gemini %d", n, len(gemini.Requests()))
	}

	claude.Fail(anthropictest.Failure{Status: 401})
	say("Hello?")
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM agent_executions WHERE status = 'error' AND error_code = 'model_unauthorized'`) == 1
	})
	if len(gemini.Requests()) != 1 || len(sent()) != 2 {
		t.Errorf("after a 401: gemini saw %d requests, %d replies sent", len(gemini.Requests()), len(sent()))
	}
}

// TestAgentOnTheInstallationModelIsCharged: a zavu agent calls the installation's model (an
// OpenAI-compatible Provider in the installation's namespace, here the peer). A project whose
// balance cannot pay gets no reply and the model is not asked; once credited, the reply goes out
// and its tokens are charged at the PriceList's model prices, once, to the execution.
func TestAgentOnTheInstallationModelIsCharged(t *testing.T) {
	const system = "agents-system"
	twilio := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, installationIn(system), rcv.trusted())
	ctx := context.Background()
	acme, _ := twilioProject(t, in, twilio, rcv)
	model := openaitest.New(openaitest.Options{})
	t.Cleanup(model.Close)
	in.createObjects(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: system}},
		labelledSecret(system, "models", map[string]string{"apiKey": openaitest.DefaultAPIKey}),
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "models"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderOpenAI, BaseURL: model.URL(), Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "models"}}},
		&v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "prices"}, Spec: v1alpha1.PriceListSpec{
			FreeCredit: "0", Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+1", Price: "0.01"}},
			ModelPrices: []v1alpha1.ModelPrice{{Model: "*", InputPerMillion: "1000", OutputPerMillion: "2000"}}}},
		&v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "support"}, Spec: v1alpha1.AgentSpec{
			DisplayName: "Support", Enabled: true, Provider: v1alpha1.ModelZavu, Model: "llama3.2",
			SystemPrompt: "Help.", Senders: []string{"main"}}})
	waitFor(t, func() bool {
		var a v1alpha1.Agent
		_ = in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "support"}, &a)
		return len(a.Status.Senders) == 1 && a.IsReady()
	})
	webhook := in.url + "/callbacks/twilio/" + acme + "/twilio/inbound"
	say := func(text string) {
		t.Helper()
		if status, body, err := twilio.SendInbound(ctx, webhook, "+15005550120", "+15005550006", text); err != nil || status != http.StatusOK {
			t.Fatalf("inbound = %d %q %v", status, body, err)
		}
	}

	// Nothing to pay with: no model call, no reply.
	say("Is anyone there?")
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM agent_executions WHERE status = 'balance_insufficient'`) == 1
	})
	if n := len(model.ChatRequests()); n != 0 || len(twilio.Messages()) != 0 {
		t.Fatalf("an unpaid execution asked the model %d times and sent %d replies", n, len(twilio.Messages()))
	}

	// Credited: answered, and its tokens charged to the execution.
	credit(t, in, acme, "1.00")
	say("Hello again")
	waitFor(t, func() bool { return len(twilio.Messages()) == 1 })
	waitFor(t, func() bool { return in.count(`SELECT count(*) FROM agent_executions WHERE status = 'success'`) == 1 })
	var id string
	var input, output, cost int64
	if err := in.db.QueryRow(ctx, `SELECT id, input_tokens, output_tokens, cost_micros FROM agent_executions WHERE status = 'success'`).
		Scan(&id, &input, &output, &cost); err != nil {
		t.Fatal(err)
	}
	if input == 0 || output == 0 || cost != input*1000+output*2000 {
		var steps string
		_ = in.db.QueryRow(ctx, `SELECT steps::text || ' ' || COALESCE(charged_at::text, 'uncharged') FROM agent_executions WHERE id = $1`, id).Scan(&steps)
		t.Errorf("tokens %d in, %d out, cost %d micros; want %d (steps %s)", input, output, cost, input*1000+output*2000, steps)
	}
	if n := in.count(`SELECT count(*) FROM ledger_entries WHERE kind = 'charge' AND message_id = $1 AND amount_micros = $2`, id, cost); n != 1 {
		t.Errorf("%d ledger charges for the execution", n)
	}
	if r := in.get("/v1/senders/main/agent/stats", newKey(t, in, acme, apikey.Live)); r.status != 200 || r.body["totalCost"] != float64(cost)/1e6 {
		t.Errorf("stats = %d %v", r.status, r.body)
	}
}
