package chaos

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/test/cluster"
)

// flowConversations is how many contacts book at once in TestFlowSurvivesKill.
const flowConversations = 8

// TestFlowSurvivesKill: contacts book an appointment through a flow over several messages; the
// worker is killed with SIGKILL while the flow's booking tool (slow) is being called. Once it
// is back, every conversation has had each of the flow's texts exactly once, in order, and has
// left the flow.
func TestFlowSurvivesKill(t *testing.T) {
	var calls atomic.Int64
	tool := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		time.Sleep(2 * time.Second) // long enough to be killed in the middle of
		_, _ = io.WriteString(w, `{"confirmation":"C-7"}`)
	}))
	tool.StartTLS()
	t.Cleanup(tool.Close)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tool.Certificate().Raw})

	c := cluster.Start(t, cluster.Options{TrustPEM: certPEM})
	c.Run("manager")
	api := c.Run("api")
	worker := c.Run("worker")
	key := c.Project("flow-chaos", "")
	ctx := context.Background()
	step := func(id, typ, config, next string) v1alpha1.FlowStep {
		return v1alpha1.FlowStep{ID: id, Type: typ, Config: apiextensionsv1.JSON{Raw: []byte(config)}, NextStepID: next}
	}
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flow-chaos", Name: "tool", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"secret": "s3cret"}},
		&v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: "flow-chaos", Name: "support"}, Spec: v1alpha1.AgentSpec{
			DisplayName: "Support", Enabled: true, Provider: v1alpha1.ModelZavu, Model: "sandbox", SystemPrompt: "Help.",
			Senders: []string{"main"},
			Tools: []v1alpha1.AgentTool{{ID: "book", Name: "book_appointment", Description: "Book.", WebhookURL: tool.URL + "/book",
				SecretRef:  &v1alpha1.SecretKeyRef{Name: "tool", Key: "secret"},
				Parameters: apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"name":{"type":"string"},"date":{"type":"string"}},"required":["name","date"]}`)}}},
			Flows: []v1alpha1.AgentFlow{{ID: "booking", Name: "Booking", Trigger: v1alpha1.FlowTrigger{Type: "keyword", Keywords: []string{"book"}},
				Steps: []v1alpha1.FlowStep{
					step("name", "collect", `{"question":"Your name?","field":"name"}`, "date"),
					step("date", "collect", `{"question":"Which day?","field":"date","validation":"date"}`, "book"),
					step("book", "tool", `{"tool":"book_appointment","arguments":{"name":"{{name}}","date":"{{date}}"},"resultField":"booking"}`, "done"),
					step("done", "message", `{"text":"Booked {{date}} for {{name}} ({{booking.confirmation}})."}`, ""),
				}}}}},
	} {
		if err := c.K8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var a v1alpha1.Agent
		if err := c.K8s.Get(ctx, client.ObjectKey{Namespace: "flow-chaos", Name: "support"}, &a); err == nil && len(a.Status.Senders) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent does not answer on its sender")
		}
		time.Sleep(100 * time.Millisecond)
	}
	count := func(sql string, args ...any) int {
		var n int
		if err := c.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	say := func(i int, text string) {
		body := fmt.Sprintf(`{"from":"+1500555%04d","text":%q}`, 4000+i, text)
		req, _ := http.NewRequest("POST", api.URL+"/v1/sandbox/inbound", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("inbound %d = %d", i, resp.StatusCode)
		}
	}
	// Each contact's answers so far, waited for: every contact has n.
	answered := func(n int) {
		deadline := time.Now().Add(time.Minute)
		for count(`SELECT count(*) FROM (SELECT recipient FROM messages WHERE direction = 'outbound' GROUP BY recipient
				HAVING count(*) >= $1) x`, n) < flowConversations {
			if time.Now().After(deadline) {
				t.Fatalf("not every contact has %d answers within a minute", n)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for i := range flowConversations {
		say(i, "book")
	}
	answered(1)
	for i := range flowConversations {
		say(i, fmt.Sprintf("Contact %d", i))
	}
	answered(2)
	for i := range flowConversations {
		say(i, "2026-12-03")
	}
	// Kill the worker while the booking tool is being called, twice.
	for kill := range 2 {
		for calls.Load() <= int64(kill) {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		worker.Kill()
		if err := worker.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	deadline = time.Now().Add(4 * time.Minute)
	for count(`SELECT count(*) FROM agent_executions WHERE status IN ('pending', 'running')`) > 0 ||
		count(`SELECT count(*) FROM agent_executions`) < 3*flowConversations {
		if time.Now().After(deadline) {
			t.Fatalf("%d executions unfinished after 4 minutes", count(`SELECT count(*) FROM agent_executions WHERE status IN ('pending', 'running')`))
		}
		time.Sleep(250 * time.Millisecond)
	}
	rows, err := c.Pool.Query(ctx, `SELECT recipient, string_agg(body, ' | ' ORDER BY created_at, id) FROM messages
		WHERE direction = 'outbound' GROUP BY recipient ORDER BY recipient`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var to, got string
		if err := rows.Scan(&to, &got); err != nil {
			t.Fatal(err)
		}
		i := 0
		fmt.Sscanf(to, "+1500555%04d", &i)
		if want := fmt.Sprintf("Your name? | Which day? | Booked 2026-12-03 for Contact %d (C-7).", i-4000); got != want {
			t.Errorf("%s was sent %q, want %q", to, got, want)
		}
		n++
	}
	if n != flowConversations {
		t.Errorf("%d conversations answered, want %d", n, flowConversations)
	}
	if s := count(`SELECT count(*) FROM agent_flow_sessions`); s != 0 {
		t.Errorf("%d conversations still in the flow", s)
	}
	t.Logf("%d conversations, %d booking calls (calls cut by a kill are made again)", flowConversations, calls.Load())
}
