package agent

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/llm"
)

// scripted is a model that answers from a script, one answer a call, and keeps the requests.
type scripted struct {
	mu       sync.Mutex
	answers  []scriptedAnswer
	requests []llm.Request
}

type scriptedAnswer struct {
	resp *llm.Response
	err  error
}

func (m *scripted) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	req.Messages = slices.Clone(req.Messages)
	m.requests = append(m.requests, req)
	if len(m.answers) == 0 {
		return &llm.Response{Text: "(no more answers)", Usage: llm.Usage{InputTokens: 1, OutputTokens: 1}}, nil
	}
	a := m.answers[0]
	m.answers = m.answers[1:]
	return a.resp, a.err
}

// tools is a tool webhook client that records the calls and answers them.
type tools struct {
	mu     sync.Mutex
	calls  []*http.Request
	bodies []string
	status int
	answer string
}

func (c *tools) Do(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	body, _ := io.ReadAll(req.Body)
	c.calls = append(c.calls, req)
	c.bodies = append(c.bodies, string(body))
	status := c.status
	if status == 0 {
		status = http.StatusOK
	}
	return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(c.answer)), Header: http.Header{}}, nil
}

const testProject = "acme"

func testAgent() *v1alpha1.Agent {
	return &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: testProject, Name: "support"}, Spec: v1alpha1.AgentSpec{
		DisplayName: "Support", Enabled: true, Provider: v1alpha1.ModelOpenAI, Model: "gpt-4o-mini",
		APIKeyRef: &v1alpha1.SecretKeyRef{Name: "keys", Key: "openai"}, SystemPrompt: "Help.", Senders: []string{"main"},
		Tools: []v1alpha1.AgentTool{{ID: "orders", Name: "get_order_status", Description: "Order status.",
			WebhookURL: "https://tools.example/orders",
			Parameters: apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"orderNumber":{"type":"string"}}}`)}}},
	}}
}

// runtimeWith is a Runtime reading the objects, calling model for the agent's model (live
// keys) and tool for its tools.
func runtimeWith(t *testing.T, model llm.Model, tool ToolClient, objs ...client.Object) *Runtime {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs = append(objs,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testProject, Name: "keys"}, Data: map[string][]byte{"openai": []byte("sk-test")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testProject, Name: "support-secrets"}, Data: map[string][]byte{"tool-orders": []byte("s3cret")}},
		&v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: testProject, Name: "main"}, Spec: v1alpha1.SenderSpec{
			DisplayName: "Main", PhoneNumber: "+15005550006", SMS: &v1alpha1.Activation{Active: true}}})
	return &Runtime{
		Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(),
		Models: func(v1alpha1.ProviderType, string, string) (llm.Model, error) { return model, nil },
		Tools:  tool,
	}
}

func str(s string) *string { return &s }
func yes() *bool           { t := true; return &t }

func hasWarning(res TestResult, part string) bool {
	return slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, part) })
}

// TestDryRunSeesTheContextWindow: the model sees the system prompt and, as an execution's
// model does, at most contextWindowMessages messages, the last being the message; empty turns
// are left out. Its answer is the result, with its tokens.
func TestDryRunSeesTheContextWindow(t *testing.T) {
	t.Parallel()
	model := &scripted{answers: []scriptedAnswer{{resp: &llm.Response{Text: "Hi Ana!", Usage: llm.Usage{InputTokens: 40, OutputTokens: 3}}}}}
	a := testAgent()
	window := int32(3)
	a.Spec.ContextWindowMessages = &window
	r := runtimeWith(t, model, &tools{})
	res, err := r.DryRun(context.Background(), a, false, TestInput{Message: str("What is my name?"), History: []TestTurn{
		{Role: str("user"), Content: str("first")},
		{Role: str("assistant"), Content: str("second")},
		{Role: str("user"), Content: str("I am Ana")},
		{Role: str("assistant"), Content: str("Hello Ana")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.Text == nil || *res.Text != "Hi Ana!" || res.Error != nil || res.InputTokens != 40 || res.OutputTokens != 3 {
		t.Fatalf("result = %+v", res)
	}
	req := model.requests[0]
	var got []string
	for _, m := range req.Messages {
		got = append(got, string(m.Role)+":"+m.Text)
	}
	if want := []string{"user:I am Ana", "assistant:Hello Ana", "user:What is my name?"}; !slices.Equal(got, want) || req.System != "Help." || req.Model != "gpt-4o-mini" {
		t.Errorf("the model saw %v (system %q, model %q), want %v", got, req.System, req.Model, want)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "get_order_status" {
		t.Errorf("tools offered = %v", req.Tools)
	}
	// The tools were offered, not run: said so.
	if !hasWarning(res, "get_order_status") || len(res.ExecutedToolCalls) != 0 || res.KnowledgeChunksUsed != 0 {
		t.Errorf("warnings %v, executed %v", res.Warnings, res.ExecutedToolCalls)
	}
}

// TestDryRunReportsAToolCallWithoutRunningIt: without executeTools the model's call is reported
// and the run stops; no webhook is called.
func TestDryRunReportsAToolCallWithoutRunningIt(t *testing.T) {
	t.Parallel()
	model := &scripted{answers: []scriptedAnswer{{resp: &llm.Response{Stop: llm.StopToolCalls,
		ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_order_status", Arguments: json.RawMessage(`{"orderNumber":"A-1"}`)}}}}}}
	hooks := &tools{answer: `{"status":"shipped"}`}
	res, err := runtimeWith(t, model, hooks).DryRun(context.Background(), testAgent(), false, TestInput{Message: str("Where is A-1?")})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.Text != nil || len(res.ExecutedToolCalls) != 0 || len(hooks.calls) != 0 || len(model.requests) != 1 {
		t.Fatalf("result = %+v, %d webhook calls, %d model calls", res, len(hooks.calls), len(model.requests))
	}
	if !hasWarning(res, `The model called get_order_status with {"orderNumber":"A-1"}`) {
		t.Errorf("warnings = %v", res.Warnings)
	}
}

// TestDryRunExecutesTools: with executeTools the tool's webhook is called (signed, without the
// execution's headers), its answer goes back to the model, and the run lists it.
func TestDryRunExecutesTools(t *testing.T) {
	t.Parallel()
	model := &scripted{answers: []scriptedAnswer{
		{resp: &llm.Response{Stop: llm.StopToolCalls, ToolCalls: []llm.ToolCall{
			{ID: "c1", Name: "get_order_status", Arguments: json.RawMessage(`{"orderNumber":"A-1"}`)},
			{ID: "c2", Name: "cancel_order", Arguments: json.RawMessage(`{}`)}}}},
		{resp: &llm.Response{Text: "It shipped."}},
	}}
	hooks := &tools{answer: `{"status":"shipped"}`}
	res, err := runtimeWith(t, model, hooks).DryRun(context.Background(), testAgent(), false, TestInput{Message: str("Where is A-1?"), ExecuteTools: yes()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.Text == nil || *res.Text != "It shipped." {
		t.Fatalf("result = %+v", res)
	}
	if len(res.ExecutedToolCalls) != 1 || res.ExecutedToolCalls[0] != (ExecutedToolCall{Name: "get_order_status", OK: true}) {
		t.Errorf("executed = %+v (an unknown tool runs nothing)", res.ExecutedToolCalls)
	}
	if len(hooks.calls) != 1 || hooks.bodies[0] != `{"orderNumber":"A-1"}` || hooks.calls[0].Header.Get(HeaderSignature) == "" ||
		hooks.calls[0].Header.Get(HeaderExecution) != "" || hooks.calls[0].Header.Get(HeaderConversation) != "" {
		t.Fatalf("webhook calls = %d %v", len(hooks.calls), hooks.bodies)
	}
	last := model.requests[1].Messages
	if n := len(last); n != 4 || last[2].Text != `{"status":"shipped"}` || !last[3].IsError || !strings.Contains(last[3].Text, `There is no tool "cancel_order"`) {
		t.Errorf("the model's second request = %+v", last)
	}
	if hasWarning(res, "does not execute") {
		t.Errorf("warnings = %v", res.Warnings)
	}

	// A tool that fails is listed as failed, and the model answers around it.
	model = &scripted{answers: []scriptedAnswer{
		{resp: &llm.Response{Stop: llm.StopToolCalls, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_order_status", Arguments: json.RawMessage(`{}`)}}}},
		{resp: &llm.Response{Text: "Sorry, I cannot look it up."}},
	}}
	res, _ = runtimeWith(t, model, &tools{status: 500}).DryRun(context.Background(), testAgent(), false, TestInput{Message: str("Where?"), ExecuteTools: yes()})
	if len(res.ExecutedToolCalls) != 1 || res.ExecutedToolCalls[0].OK || res.ExecutedToolCalls[0].Error == nil || !res.Success {
		t.Errorf("a failed tool: %+v", res)
	}
}

// TestDryRunModelErrors: a model that fails is an unsuccessful result with its error, not an
// error of the request; a test key never reaches the model.
func TestDryRunModelErrors(t *testing.T) {
	t.Parallel()
	model := &scripted{answers: []scriptedAnswer{{err: &llm.Error{Kind: llm.KindUnauthorized, Status: 401, Message: "bad key"}}}}
	res, err := runtimeWith(t, model, &tools{}).DryRun(context.Background(), testAgent(), false, TestInput{Message: str("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || res.Text != nil || res.Error == nil || !strings.Contains(*res.Error, "bad key") {
		t.Errorf("result = %+v", res)
	}

	res, err = runtimeWith(t, model, &tools{}).DryRun(context.Background(), testAgent(), true, TestInput{Message: str("hi")})
	if err != nil || !res.Success || *res.Text != "[gpt-4o-mini] You said: hi" || len(model.requests) != 1 {
		t.Errorf("test mode: %+v %v, the live model saw %d requests", res, err, len(model.requests))
	}
}

// TestDryRunWarnings: what a dry run cannot prove is said.
func TestDryRunWarnings(t *testing.T) {
	t.Parallel()
	a := testAgent()
	a.Spec.Enabled = false
	a.Spec.IncludeContactMetadata = true
	a.Spec.TriggerOnChannels = []v1alpha1.Channel{v1alpha1.ChannelWhatsApp} // main has sms only
	a.Spec.Tools = nil
	res, err := runtimeWith(t, &scripted{}, &tools{}).DryRun(context.Background(), a, true, TestInput{Message: str("hi"), UseKnowledgeBase: yes()})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"disabled", "triggers on (whatsapp)", "contact"} {
		if !hasWarning(res, want) {
			t.Errorf("no warning about %q: %v", want, res.Warnings)
		}
	}
	if hasWarning(res, "tools") {
		t.Errorf("an agent without tools is warned about them: %v", res.Warnings)
	}

	a = testAgent()
	a.Spec.Senders = nil
	a.Spec.TriggerOnMessageTypes = []string{"image"}
	res, _ = runtimeWith(t, &scripted{}, &tools{}).DryRun(context.Background(), a, true, TestInput{Message: str("hi")})
	if !hasWarning(res, "no sender") || !hasWarning(res, "does not answer text") || hasWarning(res, "Knowledge") {
		t.Errorf("warnings = %v", res.Warnings)
	}

	// Nothing to say about an agent that answers text on its sender's sms.
	res, _ = runtimeWith(t, &scripted{}, &tools{}).DryRun(context.Background(), testAgent(), true, TestInput{Message: str("hi"), ExecuteTools: yes()})
	if len(res.Warnings) != 0 {
		t.Errorf("warnings = %v", res.Warnings)
	}
}

// TestDryRunHandoff: a handoff keyword answers with the handoff message without the model; the
// handoff tool is reported, and nothing is handed over (there is no database to write to).
func TestDryRunHandoff(t *testing.T) {
	t.Parallel()
	a := testAgent()
	a.Spec.Handoff = &v1alpha1.Handoff{Keywords: []string{"human"}, Tool: true, Message: "A person will answer."}
	model := &scripted{answers: []scriptedAnswer{{resp: &llm.Response{Stop: llm.StopToolCalls,
		ToolCalls: []llm.ToolCall{{ID: "c1", Name: HandoffTool, Arguments: json.RawMessage(`{}`)}}}}}}
	r := runtimeWith(t, model, &tools{})
	res, err := r.DryRun(context.Background(), a, false, TestInput{Message: str(" Human ")})
	if err != nil || !res.Success || res.Text == nil || *res.Text != "A person will answer." || len(model.requests) != 0 || !hasWarning(res, "handoff keyword") {
		t.Fatalf("keyword: %+v %v", res, err)
	}
	res, err = r.DryRun(context.Background(), a, false, TestInput{Message: str("I want to talk to someone")})
	if err != nil || !res.Success || *res.Text != "A person will answer." || !hasWarning(res, HandoffTool) {
		t.Fatalf("tool: %+v %v", res, err)
	}
}

// TestTestInputListsEveryInvalidField: Service.Test refuses a request with every invalid field.
func TestTestInputListsEveryInvalidField(t *testing.T) {
	t.Parallel()
	s := &Service{Runtime: runtimeWith(t, &scripted{}, &tools{})}
	_, err := s.Test(context.Background(), testAgent(), true, TestInput{Message: str("  "), History: []TestTurn{
		{Role: str("user"), Content: str("ok")}, {Role: str("system"), Content: str("x")}, {Role: str("assistant")}}})
	e := apperror.As(err)
	if e == nil || e.Code != "invalid_request" {
		t.Fatalf("err = %v", err)
	}
	var paths []string
	for _, f := range e.Details["errors"].([]apperror.FieldError) {
		paths = append(paths, f.Path)
	}
	if want := []string{"message", "history[1].role", "history[2].content"}; !slices.Equal(paths, want) {
		t.Errorf("paths = %v, want %v", paths, want)
	}
	if errs := (TestInput{Message: str(strings.Repeat("a", MaxTestMessage+1)), History: make([]TestTurn, MaxTestHistory+1)}).Validate(); len(errs) < 2 ||
		errs[0].Path != "message" || errs[1].Path != "history" {
		t.Errorf("bounds: %v", errs)
	}
}
