package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/test/cluster"
)

// The agent row's load: conversations at once, and turns each (an inbound message, then its
// answer, before the next).
const (
	agentConversations = 100
	agentTurns         = 5
)

// agentFigures are the agent row: turns answered per second, and the p99 of what the agent adds
// to the model's own time (the sandbox model answers at once): from the inbound message stored
// to its reply accepted, both as Postgres recorded them.
type agentFigures struct {
	rate float64
	p99  time.Duration
}

// runAgents has agentConversations contacts talk to a sandbox-model agent at once, each waiting
// for the answer before writing again.
func runAgents(b *testing.B, c *cluster.Cluster, url, project string) agentFigures {
	ctx := context.Background()
	key := c.Project(project, "")
	a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "bench"}, Spec: v1alpha1.AgentSpec{
		DisplayName: "Bench", Enabled: true, Provider: v1alpha1.ModelZavu, Model: "sandbox", SystemPrompt: "Answer.",
		Senders: []string{"main"}}}
	if err := c.K8s.Create(ctx, a); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		if err := c.K8s.Get(ctx, client.ObjectKeyFromObject(a), a); err == nil && len(a.Status.Senders) == 1 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the bench agent does not answer on its sender")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // the api and worker caches see it too
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: agentConversations}}
	var wg sync.WaitGroup
	began := time.Now()
	errs := make(chan error, agentConversations)
	for i := range agentConversations {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := fmt.Sprintf("+1500556%04d", i)
			for turn := range agentTurns {
				body := fmt.Sprintf(`{"from":"%s","text":"turn %d"}`, from, turn)
				req, _ := http.NewRequest(http.MethodPost, url+"/v1/sandbox/inbound", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("inbound = %d", resp.StatusCode)
					return
				}
				// The answer: as many replies as turns so far.
				for deadline := time.Now().Add(time.Minute); ; {
					var n int
					if err := c.Pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE project = $1 AND direction = 'outbound' AND recipient = $2`,
						project, from).Scan(&n); err != nil {
						errs <- err
						return
					}
					if n > turn {
						break
					}
					if time.Now().After(deadline) {
						errs <- fmt.Errorf("no answer to %s's turn %d within a minute", from, turn)
						return
					}
					time.Sleep(25 * time.Millisecond) // the poll itself loads Postgres: not faster
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	rows, err := c.Pool.Query(ctx, `SELECT extract(epoch FROM r.created_at - i.created_at) FROM agent_executions e
		JOIN messages i ON i.id = e.inbound_message_id JOIN messages r ON r.id = e.response_message_id WHERE e.project = $1`, project)
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for rows.Next() {
		var s float64
		if err := rows.Scan(&s); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Duration(s*float64(time.Second)))
	}
	if rows.Err() != nil || len(lat) != agentConversations*agentTurns {
		b.Fatalf("%d answered executions of %d (%v)", len(lat), agentConversations*agentTurns, rows.Err())
	}
	slices.Sort(lat)
	return agentFigures{rate: float64(agentConversations*agentTurns) / took.Seconds(), p99: lat[len(lat)*99/100]}
}
