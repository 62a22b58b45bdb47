package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/test/cluster"
)

// The functions row's load: warm HTTP invocations from fnClients clients on keep-alive
// connections, fnRequests in all after one warm-up request; fnColdDeploys deploys, each one's
// first request timed; fnCronTicks cron ticks made due fnCronLead ahead.
const (
	fnClients     = 16
	fnRequests    = 4_000
	fnColdDeploys = 5
	fnCronTicks   = 5
	fnCronLead    = 2 * time.Second
	// fnPacedRate and fnPaced: the warm p99 is read at the target rate, requests started on a
	// fixed schedule whatever the answers do (an open loop), not at saturation.
	fnPacedRate = 200
	fnPaced     = 2_000
)

// functionFigures are the functions row. rate, p50, p99: warm HTTP invocations of a trivial
// function at its public URL. coldP50, coldMax: the first request after a deploy goes active,
// which starts the deployment's process (the local runtime). cronP50, cronMax: a cron trigger's
// due time to its run queued (function_runs.created_at), each tick having made exactly one run
// with every worker process of the layout (schedulers) running the scheduler.
type functionFigures struct {
	rate                       float64
	p50, p99                   time.Duration
	pacedP50, pacedP99         time.Duration
	coldP50, coldMax           time.Duration
	cronP50, cronMax           time.Duration
	schedulers                 int
	coldRequests, warmRequests int
	cronTicks                  int
}

// fnSource is the benchmark's function: version 1 is the trivial one the warm figure invokes;
// the later versions, deployed for the cold starts, answer with their version.
func fnSource(version int) string {
	body := "'ok'"
	if version > 1 {
		body = fmt.Sprintf("'ok %d'", version)
	}
	return "import { defineFunction } from '@zavudev/functions';\nexport default defineFunction(async () => ({ statusCode: 200, body: " + body + " }));\n"
}

func fnAnswer(version int) string {
	if version > 1 {
		return fmt.Sprintf("ok %d", version)
	}
	return "ok"
}

// runFunctions creates an HTTP-enabled function in a project of its own through the API and
// measures its warm invocations, its cold starts and a cron trigger of it; schedulers is how many
// processes of the layout run the cron scheduler (worker and all).
func runFunctions(b *testing.B, c *cluster.Cluster, url, project string, schedulers int) functionFigures {
	ctx := context.Background()
	key := c.Project(project, "")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: fnClients * 2}, Timeout: time.Minute}
	api := func(method, path, body string, want int) map[string]any {
		b.Helper()
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := decodeJSON(resp.Body, &out); err != nil || resp.StatusCode != want {
			b.Fatalf("%s %s = %d %v %v, want %d", method, path, resp.StatusCode, out, err, want)
		}
		return out
	}
	src := func(version int) string {
		raw, _ := json.Marshal(fnSource(version))
		return string(raw)
	}
	// deploy deploys version and waits until it is active; it fails the bench on a failed build.
	deploy := func(version int, body string) string {
		d := api(http.MethodPost, "/v1/functions/bench/deploy", body, http.StatusOK)["deployment"].(map[string]any)
		id := d["id"].(string)
		for deadline := time.Now().Add(2 * time.Minute); ; {
			d = api(http.MethodGet, "/v1/functions/deployments/"+id, "", http.StatusOK)["deployment"].(map[string]any)
			switch d["status"] {
			case "active":
				return id
			case "failed":
				b.Fatalf("deployment %d of the bench function failed: %v", version, d)
			}
			if time.Now().After(deadline) {
				b.Fatalf("deployment %d of the bench function not active within 2 minutes: %v", version, d)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	api(http.MethodPost, "/v1/functions", `{"name":"Bench","slug":"bench","httpEnabled":true,"sourceCode":`+src(1)+`}`, http.StatusCreated)
	deploy(1, "")
	// The public URL: the cluster's processes have no --public-url (publicUrl is null), and the
	// API serves /fn/<token> whatever it is, so the URL is built from the Function's token.
	var fn v1alpha1.Function
	if err := c.K8s.Get(ctx, client.ObjectKey{Namespace: project, Name: "bench"}, &fn); err != nil {
		b.Fatal(err)
	}
	token := fn.Annotations[v1alpha1.FunctionURLTokenAnnotation]
	if token == "" {
		b.Fatalf("the bench function has no %s annotation: %v", v1alpha1.FunctionURLTokenAnnotation, fn.Annotations)
	}
	public := url + "/fn/" + token
	// call invokes the function once: its status, body and invocation id.
	call := func() (int, string, string, error) {
		resp, err := hc.Get(public)
		if err != nil {
			return 0, "", "", err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw), resp.Header.Get("X-Function-Invocation"), err
	}

	// 1. Warm: one request (the cold one, once the API's cache knows the function), then
	// fnRequests from fnClients clients as fast as answers come.
	f := functionFigures{schedulers: schedulers, warmRequests: fnRequests}
	for deadline := time.Now().Add(30 * time.Second); ; {
		status, body, _, err := call()
		if err == nil && status == http.StatusOK && body == "ok" {
			break
		}
		if time.Now().After(deadline) || (err == nil && status != http.StatusNotFound) {
			b.Fatalf("the warm-up request to the bench function = %d %q %v", status, body, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	latencies := make([]time.Duration, fnRequests)
	var next atomic.Int64
	var failures sync.Map // the first wrong answer of each client
	var failed atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for w := range fnClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= fnRequests {
					return
				}
				t0 := time.Now()
				status, body, _, err := call()
				latencies[i] = time.Since(t0)
				if err != nil || status != http.StatusOK || body != "ok" {
					failed.Add(1)
					failures.LoadOrStore(w, fmt.Sprintf("%d %q %v", status, body, err))
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	if n := failed.Load(); n > 0 {
		var first []string
		failures.Range(func(_, v any) bool { first = append(first, v.(string)); return len(first) < 3 })
		b.Fatalf("%d of %d warm invocations answered other than 200 \"ok\": %s", n, fnRequests, strings.Join(first, "; "))
	}
	f.rate = float64(fnRequests) / elapsed.Seconds()
	slices.Sort(latencies)
	at := func(q float64) time.Duration {
		return latencies[int(float64(len(latencies)-1)*q)].Round(10 * time.Microsecond)
	}
	f.p50, f.p99 = at(0.5), at(0.99)

	// The same at the target rate, paced: the overhead a caller sees when the machine is not
	// saturated.
	paced := make([]time.Duration, fnPaced)
	var pwg sync.WaitGroup
	start := time.Now()
	for i := range fnPaced {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / fnPacedRate)))
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			t0 := time.Now()
			status, body, _, err := call()
			paced[i] = time.Since(t0)
			if err != nil || status != http.StatusOK || body != "ok" {
				failed.Add(1)
			}
		}()
	}
	pwg.Wait()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d paced invocations answered other than 200 \"ok\"", n, fnPaced)
	}
	slices.Sort(paced)
	f.pacedP50, f.pacedP99 = paced[fnPaced/2].Round(10*time.Microsecond), paced[fnPaced*99/100].Round(10*time.Microsecond)

	// 2. Cold starts: a new version deployed each time (its own process, none running yet); the
	// first request once it is active is timed, and its logs must say it was a cold start.
	var cold []time.Duration
	for i := range fnColdDeploys {
		version := i + 2
		deployment := deploy(version, `{"sourceCode":`+src(version)+`}`)
		t0 := time.Now()
		status, body, invocation, err := call()
		took := time.Since(t0)
		if err != nil || status != http.StatusOK || body != fnAnswer(version) {
			b.Fatalf("the first request after deploying version %d = %d %q %v, want 200 %q", version, status, body, err, fnAnswer(version))
		}
		var startedCold bool
		if err := c.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM function_logs WHERE function_uid = $1 AND invocation_id = $2
			AND deployment_id = $3 AND stream = 'platform' AND message LIKE 'END % (cold start)')`, string(fn.UID), invocation, deployment).Scan(&startedCold); err != nil {
			b.Fatal(err)
		}
		if !startedCold {
			b.Fatalf("the first request after deploying version %d (invocation %q) was not a cold start of deployment %s", version, invocation, deployment)
		}
		cold = append(cold, took)
	}
	f.coldRequests = len(cold)
	f.coldP50, f.coldMax = quantile(cold, 0.5), quantile(cold, 1)

	// 3. Cron: a `* * * * *` trigger made due fnCronLead ahead, fnCronTicks times; each tick is its
	// run whose event names that time (data.scheduledAt). Between ticks the trigger is parked an
	// hour ahead, so its own next minute does not fire meanwhile.
	tr := api(http.MethodPost, "/v1/functions/bench/triggers", `{"eventTypes":["cron"],"cron":"* * * * *"}`, http.StatusCreated)
	trigger := tr["triggers"].([]any)[0].(map[string]any)["id"].(string)
	park := func() {
		if _, err := c.Pool.Exec(ctx, `UPDATE function_triggers SET next_run_at = now() + interval '1 hour' WHERE id = $1`, trigger); err != nil {
			b.Fatal(err)
		}
	}
	park()
	runsOf := func(due time.Time) (int, time.Time) {
		var n int
		var first *time.Time
		if err := c.Pool.QueryRow(ctx, `SELECT count(*), min(created_at) FROM function_runs
			WHERE trigger_id = $1 AND (event->'data'->>'scheduledAt')::timestamptz = $2`, trigger, due).Scan(&n, &first); err != nil {
			b.Fatal(err)
		}
		if first == nil {
			return n, time.Time{}
		}
		return n, *first
	}
	var late []time.Duration
	var dues []time.Time
	for tick := range fnCronTicks {
		// A random part of the scheduler's 250 ms look, so the ticks do not all fall at the same
		// point of it (the loop's own pauses are whole multiples of it).
		due := time.Now().Add(fnCronLead + rand.N(250*time.Millisecond)).Truncate(time.Millisecond)
		if _, err := c.Pool.Exec(ctx, `UPDATE function_triggers SET next_run_at = $1 WHERE id = $2`, due, trigger); err != nil {
			b.Fatal(err)
		}
		var queued time.Time
		for deadline := due.Add(30 * time.Second); ; {
			n, at := runsOf(due)
			if n > 0 {
				queued = at
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("cron tick %d, due at %v, made no run within 30 s of it", tick+1, due.Format(time.RFC3339Nano))
			}
			time.Sleep(5 * time.Millisecond)
		}
		park()
		// Another scheduler firing the same tick would have done so by now (each looks every 250 ms).
		time.Sleep(time.Second)
		if n, _ := runsOf(due); n != 1 {
			b.Fatalf("cron tick %d, due at %v, made %d runs, want 1 (%d scheduling processes)", tick+1, due.Format(time.RFC3339Nano), n, schedulers)
		}
		late = append(late, queued.Sub(due))
		dues = append(dues, due)
	}
	// Each tick's run ran, once, and succeeded.
	for deadline := time.Now().Add(time.Minute); ; {
		var done, bad int
		if err := c.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'succeeded'), count(*) FILTER (WHERE status = 'failed')
			FROM function_runs WHERE trigger_id = $1 AND (event->'data'->>'scheduledAt')::timestamptz = ANY($2)`, trigger, dues).Scan(&done, &bad); err != nil {
			b.Fatal(err)
		}
		if bad > 0 {
			b.Fatalf("%d cron runs of the bench function failed", bad)
		}
		if done == len(dues) {
			break
		}
		if done > len(dues) {
			b.Fatalf("%d cron runs of the bench function succeeded, want %d (one a tick)", done, len(dues))
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d cron runs of the bench function succeeded within a minute", done, len(dues))
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.cronTicks = len(late)
	f.cronP50, f.cronMax = quantile(late, 0.5), quantile(late, 1)
	return f
}

// rows are the functions row's lines of a layout's table.
func (f functionFigures) rows(met func(bool) string) string {
	if f.rate == 0 {
		return ""
	}
	var s strings.Builder
	fmt.Fprintf(&s, "| functions: warm HTTP invocations of a trivial function at its public URL (%d clients, %d requests, after one warm-up) | %.0f/s, p50 %v, p99 %v | | ≥ 200/s | %s |\n",
		fnClients, f.warmRequests, f.rate, f.p50, f.p99, met(f.rate >= 200))
	fmt.Fprintf(&s, "| functions: warm invocations paced at %d/s (%d requests) | p50 %v, p99 %v | | p99 ≤ 20 ms | %s |\n",
		fnPacedRate, fnPaced, f.pacedP50, f.pacedP99, met(f.pacedP99 <= 20*time.Millisecond))
	fmt.Fprintf(&s, "| functions: cold start, the first request after a deploy goes active (local runtime, %d deploys) | p50 %v, max %v | | ≤ 500 ms | %s |\n",
		f.coldRequests, f.coldP50, f.coldMax, met(f.coldMax <= 500*time.Millisecond))
	fmt.Fprintf(&s, "| functions: cron `* * * * *`, tick due → its run queued (%d ticks, %d scheduling process(es)) | p50 %v, max %v; each tick once | | within 1 s, once | %s |\n",
		f.cronTicks, f.schedulers, f.cronP50, f.cronMax, met(f.cronMax <= time.Second))
	return s.String()
}
