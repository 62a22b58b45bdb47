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

// agentConversations is how many contacts write to the agent at once in TestAgentSurvivesKill.
const agentConversations = 12

// TestAgentSurvivesKill: the worker running an agent's executions is killed with SIGKILL while
// they wait on a slow tool; once it is back, every inbound message has its answer, exactly one,
// and every execution is finished.
func TestAgentSurvivesKill(t *testing.T) {
	var calls atomic.Int64
	tool := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		time.Sleep(2 * time.Second) // long enough to be killed in the middle of
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	tool.StartTLS()
	t.Cleanup(tool.Close)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tool.Certificate().Raw})

	c := cluster.Start(t, cluster.Options{TrustPEM: certPEM})
	c.Run("manager")
	api := c.Run("api")
	worker := c.Run("worker")
	key := c.Project("agent-chaos", "")
	ctx := context.Background()
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agent-chaos", Name: "tool", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"secret": "s3cret"}},
		&v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: "agent-chaos", Name: "support"}, Spec: v1alpha1.AgentSpec{
			DisplayName: "Support", Enabled: true, Provider: v1alpha1.ModelZavu, Model: "sandbox", SystemPrompt: "Help.",
			Senders: []string{"main"},
			Tools: []v1alpha1.AgentTool{{ID: "slow", Name: "slow_tool", Description: "Slow.", WebhookURL: tool.URL + "/slow",
				SecretRef:  &v1alpha1.SecretKeyRef{Name: "tool", Key: "secret"},
				Parameters: apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{},"required":[]}`)}}}}},
	} {
		if err := c.K8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var a v1alpha1.Agent
		if err := c.K8s.Get(ctx, client.ObjectKey{Namespace: "agent-chaos", Name: "support"}, &a); err == nil && len(a.Status.Senders) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent does not answer on its sender")
		}
		time.Sleep(100 * time.Millisecond)
	}

	for i := range agentConversations {
		body := fmt.Sprintf(`{"from":"+1500555%04d","text":"call slow_tool {}"}`, 3000+i)
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
	// Kill the worker while tools are being called, twice.
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

	count := func(sql string) int {
		var n int
		if err := c.Pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline = time.Now().Add(4 * time.Minute)
	for count(`SELECT count(*) FROM agent_executions WHERE status IN ('pending', 'running')`) > 0 ||
		count(`SELECT count(*) FROM agent_executions`) < agentConversations {
		if time.Now().After(deadline) {
			t.Fatalf("%d executions unfinished after 4 minutes", count(`SELECT count(*) FROM agent_executions WHERE status IN ('pending', 'running')`))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if n := count(`SELECT count(*) FROM agent_executions WHERE status = 'success'`); n != agentConversations {
		t.Errorf("%d of %d executions succeeded", n, agentConversations)
	}
	// One reply a conversation: no conversation answered twice, none unanswered.
	if n := count(`SELECT count(*) FROM (SELECT conversation_id FROM messages WHERE direction = 'outbound'
			GROUP BY conversation_id HAVING count(*) <> 1) x`); n != 0 {
		t.Errorf("%d conversations without exactly one reply", n)
	}
	if n := count(`SELECT count(*) FROM messages WHERE direction = 'outbound'`); n != agentConversations {
		t.Errorf("%d replies for %d inbound messages", n, agentConversations)
	}
	t.Logf("%d executions, %d tool calls (calls cut by a kill are made again)", agentConversations, calls.Load())
}
