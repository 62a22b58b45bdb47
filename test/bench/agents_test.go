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
	agentTurns         = 20
)

// agentFigures are the agent row. rate: turns answered per second with every contact writing
// again as soon as its answer is accepted (the most the installation answers). p99: what the
// agent adds to the model's own time (the sandbox model answers at once), from the inbound
// message stored to its reply accepted, both as Postgres recorded them, in that saturated run;
// pacedP99 the same with the turns offered at half of rate (the agent's own time, without the
// queue a saturated machine builds).
type agentFigures struct {
	rate, pacedRate float64
	p99, pacedP99   time.Duration
	// The p50 and p99 of the added time in two parts, saturated and paced: waiting for a worker
	// (inbound stored → execution started) and the run (started → reply accepted).
	saturated, paced agentParts
	// How long each process's statements waited for a Postgres connection, in all, during the
	// saturated and the paced turns ("worker 1.2s, api 0s").
	saturatedPoolWait, pacedPoolWait string
}

type agentParts struct{ waitP50, waitP99, runP50, runP99 time.Duration }

func partsOf(wait, run []time.Duration) agentParts {
	return agentParts{quantile(wait, 0.5), quantile(wait, 0.99), quantile(run, 0.5), quantile(run, 0.99)}
}

// runAgents has agentConversations contacts talk to a sandbox-model agent at once: first each
// writing again as soon as it has its answer, then with the turns paced at half the rate that
// reached.
func runAgents(b *testing.B, c *cluster.Cluster, procs []*cluster.Process, url, project string) (f agentFigures) {
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
	answers := watchAnswers(ctx, c, project)
	defer answers.stop()
	t := &agentTalk{url: url, key: key, answers: answers,
		hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: agentConversations}}}

	began, waited := time.Now(), poolWaits(procs)
	rate := t.run(b, "+1500556", 0)
	f.saturatedPoolWait, waited = poolWaitsSince(procs, waited)
	f.rate = rate
	var wait, run []time.Duration
	f.p99, wait, run = agentLatencies(b, c, project, began)
	f.saturated = partsOf(wait, run)

	began = time.Now()
	f.pacedRate = t.run(b, "+1500557", rate/2)
	f.pacedPoolWait, _ = poolWaitsSince(procs, waited)
	f.pacedP99, wait, run = agentLatencies(b, c, project, began)
	f.paced = partsOf(wait, run)
	return f
}

// agentTalk is the contacts' side of the conversations.
type agentTalk struct {
	url, key string
	hc       *http.Client
	answers  *answerWatch
}

// run has agentConversations contacts (numbers from prefix) write agentTurns turns each, each
// waiting for its answer before the next; pace > 0 offers the turns at that many a second
// across them. It returns the turns answered per second.
func (t *agentTalk) run(b *testing.B, prefix string, pace float64) float64 {
	var tokens chan struct{}
	stop := make(chan struct{})
	if pace > 0 {
		tokens = make(chan struct{})
		go func() {
			tick := time.NewTicker(time.Duration(float64(time.Second) / pace))
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				select {
				case tokens <- struct{}{}:
				case <-stop:
					return
				}
			}
		}()
	}
	var wg sync.WaitGroup
	began := time.Now()
	errs := make(chan error, agentConversations)
	for i := range agentConversations {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := fmt.Sprintf("%s%04d", prefix, i)
			for turn := range agentTurns {
				if tokens != nil {
					<-tokens
				}
				if err := t.write(from, turn); err != nil {
					errs <- err
					return
				}
				if err := t.answers.await(from, turn+1, time.Minute); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	close(stop)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return float64(agentConversations*agentTurns) / took.Seconds()
}

// write is a contact's turn, through the sandbox's inbound endpoint.
func (t *agentTalk) write(from string, turn int) error {
	body := fmt.Sprintf(`{"from":"%s","text":"turn %d"}`, from, turn)
	req, _ := http.NewRequest(http.MethodPost, t.url+"/v1/sandbox/inbound", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+t.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("inbound = %d", resp.StatusCode)
	}
	return nil
}

// agentLatencies reads, for the executions of the project since a time, the p99 of inbound
// stored → reply accepted, and each one's wait for a worker and run.
func agentLatencies(b *testing.B, c *cluster.Cluster, project string, since time.Time) (p99 time.Duration, wait, run []time.Duration) {
	// A contact sees its reply once the reply is accepted, and its execution is finished a
	// moment after: the last turns' executions may still be finishing.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var unfinished int
		if err := c.Pool.QueryRow(context.Background(), `SELECT count(*) FROM agent_executions
			WHERE project = $1 AND created_at >= $2 AND status IN ('pending', 'running')`, project, since).Scan(&unfinished); err != nil {
			b.Fatal(err)
		}
		if unfinished == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d executions not finished 30 s after their contacts had every answer", unfinished)
		}
	}
	rows, err := c.Pool.Query(context.Background(), `SELECT extract(epoch FROM r.created_at - i.created_at),
		extract(epoch FROM e.started_at - i.created_at), extract(epoch FROM r.created_at - e.started_at) FROM agent_executions e
		JOIN messages i ON i.id = e.inbound_message_id JOIN messages r ON r.id = e.response_message_id
		WHERE e.project = $1 AND e.created_at >= $2`, project, since)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var lat []time.Duration
	for rows.Next() {
		var l, w, r float64
		if err := rows.Scan(&l, &w, &r); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, seconds(l))
		wait = append(wait, seconds(w))
		run = append(run, seconds(r))
	}
	if rows.Err() != nil || len(lat) != agentConversations*agentTurns {
		var statuses string
		_ = c.Pool.QueryRow(context.Background(), `SELECT string_agg(status || ' ' || coalesce(error_code, '') || ' ' || n, ', ')
			FROM (SELECT status, error_code, count(*) AS n FROM agent_executions WHERE project = $1 AND created_at >= $2
			GROUP BY 1, 2) s`, project, since).Scan(&statuses)
		b.Fatalf("%d answered executions of %d (%v); executions by status: %s", len(lat), agentConversations*agentTurns, rows.Err(), statuses)
	}
	return quantile(lat, 0.99), wait, run
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// quantile sorts d and returns its q quantile.
func quantile(d []time.Duration, q float64) time.Duration {
	slices.Sort(d)
	return d[int(float64(len(d)-1)*q)].Round(time.Millisecond)
}

// answerWatch counts the replies each contact has had, read by one poller for all of them: a
// poll a conversation would load Postgres with thousands of reads a second that are not the
// agent's work. Each poll reads only the replies made in the last watchMargin before the newest
// seen (a reply's row may commit a little after the time it was stamped with), and every
// watchFullEvery polls all of them, so that a reply committed later still than that is counted
// within a second rather than never.
type answerWatch struct {
	mu     sync.Mutex
	counts map[string]int
	err    error
	change *sync.Cond
	stop   func()
}

const (
	watchPoll      = 10 * time.Millisecond
	watchMargin    = time.Second
	watchFullEvery = 100
)

func watchAnswers(ctx context.Context, c *cluster.Cluster, project string) *answerWatch {
	w := &answerWatch{counts: map[string]int{}}
	w.change = sync.NewCond(&w.mu)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	w.stop = func() { cancel(); <-done }
	go func() {
		defer close(done)
		tick := time.NewTicker(watchPoll)
		defer tick.Stop()
		seen := map[string]bool{} // reply ids counted
		var newest time.Time
		for poll := 0; ; poll++ {
			select {
			case <-ctx.Done():
				w.mu.Lock()
				w.err = ctx.Err()
				w.change.Broadcast()
				w.mu.Unlock()
				return
			case <-tick.C:
			}
			since := newest.Add(-watchMargin)
			if poll%watchFullEvery == 0 {
				since = time.Time{}
			}
			rows, err := c.Pool.Query(ctx, `SELECT id, recipient, created_at FROM messages
				WHERE project = $1 AND test_mode AND direction = 'outbound' AND created_at > $2`, project, since)
			var added []string // the recipients of replies not seen before
			for err == nil && rows.Next() {
				var id, to string
				var at time.Time
				if err = rows.Scan(&id, &to, &at); err == nil {
					if _, ok := seen[id]; !ok {
						seen[id] = true
						added = append(added, to)
					}
					if at.After(newest) {
						newest = at
					}
				}
			}
			if err == nil {
				err = rows.Err()
			}
			if rows != nil {
				rows.Close()
			}
			w.mu.Lock()
			if err != nil && ctx.Err() == nil {
				w.err = err
			}
			for _, to := range added {
				w.counts[to]++
			}
			w.change.Broadcast()
			w.mu.Unlock()
		}
	}()
	return w
}

// await waits until to has had n replies.
func (w *answerWatch) await(to string, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.counts[to] < n {
		if w.err != nil {
			return w.err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to %s's turn %d within %v", to, n-1, within)
		}
		w.change.Wait()
	}
	return nil
}

// poolWaits is each running process's wait for Postgres connections so far, by role: a
// figure to read beside the row's, so a process that does not answer is left out.
func poolWaits(procs []*cluster.Process) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, p := range procs {
		if w, err := p.PoolWait(); err == nil {
			out[p.Role] += w
		}
	}
	return out
}

// poolWaitsSince says each process's wait for Postgres connections since before, and returns
// the waits so far.
func poolWaitsSince(procs []*cluster.Process, before map[string]time.Duration) (string, map[string]time.Duration) {
	now := poolWaits(procs)
	var parts []string
	for _, role := range []string{"all", "api", "worker", "manager"} {
		if w, ok := now[role]; ok {
			if since, ok := before[role]; ok && since <= w { // a restarted process counts from 0
				w -= since
			}
			parts = append(parts, fmt.Sprintf("%s %v", role, w.Round(time.Millisecond)))
		}
	}
	return strings.Join(parts, ", "), now
}
