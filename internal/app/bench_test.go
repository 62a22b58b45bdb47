package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BenchmarkSend measures accepted POST /v1/messages per second and their latency through the
// whole stack in one process (authentication, rate limit, routing, the acceptance transaction),
// with the sandbox working the sends meanwhile: 32 clients on loopback keep-alive connections
// send b.N messages in all.
func BenchmarkSend(b *testing.B) {
	in := start(b)
	acme, key := sendingProject(b, in, nil, apikey.Test)
	raiseRateLimit(b, in, acme)
	waitFor(b, func() bool { return in.get("/v1/me", key).header.Get("X-RateLimit-Limit") == "1000000" })

	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	hc := &http.Client{Transport: transport}
	const clients = 32
	latencies := make([]time.Duration, b.N)
	var next atomic.Int64
	var failures atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, in.url+"/v1/messages",
					strings.NewReader(fmt.Sprintf(`{"to":"+1500556%04d","text":"Benchmark %d"}`, i%10000, i)))
				req.Header.Set("Authorization", key)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				resp, err := hc.Do(req)
				latencies[i] = time.Since(t0)
				if err != nil || resp.StatusCode != http.StatusOK {
					failures.Add(1)
				}
				if resp != nil {
					_, _ = resp.Body.Read(make([]byte, 4096))
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if failures.Load() > 0 {
		b.Fatalf("%d of %d sends failed", failures.Load(), b.N)
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "sends/s")
	b.ReportMetric(float64(latencies[b.N/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(latencies[b.N*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkDeliveredWebhook measures the time from an accepted send to its message.delivered
// webhook arriving at a loopback HTTPS receiver, sending at 1,000 messages/s (or
// SWITCHBOARD_BENCH_RATE) through the sandbox (delivered 0.5 s after sent, its default): b.N
// messages in all. Each message makes three webhook deliveries (queued, sent, delivered).
func BenchmarkDeliveredWebhook(b *testing.B) {
	var mu sync.Mutex
	accepted := map[string]time.Time{}
	arrived := map[string]time.Time{}
	rcv := newHookReceiver(b)
	rcv.onEvent = func(ev map[string]any) {
		if ev["event"] != "message.delivered" {
			return
		}
		data, _ := ev["data"].(map[string]any)
		id, _ := data["messageId"].(string)
		mu.Lock()
		arrived[id] = time.Now()
		mu.Unlock()
	}
	in := start(b, rcv.trusted(),
		func(c *app.Config) { c.WorkerConcurrency = 100 }) // the production default is 50 per worker process

	acme, key := sendingProject(b, in, rcv, apikey.Test)
	raiseRateLimit(b, in, acme)
	waitFor(b, func() bool { return in.get("/v1/me", key).header.Get("X-RateLimit-Limit") == "1000000" })

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	rate := 1000 // sends a second; SWITCHBOARD_BENCH_RATE changes it
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_BENCH_RATE")); err == nil && v > 0 {
		rate = v
	}
	// Recipients: 10,000 numbers as real traffic spreads, or SWITCHBOARD_BENCH_RECIPIENTS (1 sends
	// every message into one conversation, whose row each acceptance updates).
	recipients := 10000
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_BENCH_RECIPIENTS")); err == nil && v > 0 {
		recipients = v
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, in.url+"/v1/messages", strings.NewReader(fmt.Sprintf(`{"to":"+1500556%04d","text":"Latency"}`, i%recipients)))
			req.Header.Set("Authorization", key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Errorf("send: %v %v", resp, err)
				return
			}
			var out struct {
				Message struct{ ID string } `json:"message"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			mu.Lock()
			accepted[out.Message.ID] = time.Now()
			mu.Unlock()
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		n := len(arrived)
		mu.Unlock()
		if n >= b.N {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d delivered webhooks arrived within 2 minutes", n, b.N)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.StopTimer()
	var lat []time.Duration
	for id, t0 := range accepted {
		if t1, ok := arrived[id]; ok {
			lat = append(lat, t1.Sub(t0))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
}

// raiseRateLimit sets a hand-set request rate far above a benchmark's: the window is measured
// elsewhere.
func raiseRateLimit(b *testing.B, in *instance, project string) {
	b.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p v1alpha1.Project
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: project, Name: "project"}, &p); err != nil {
			return err
		}
		limit := int32(1_000_000)
		p.Spec.RequestRateLimit = &limit
		return in.k8s.Update(context.Background(), &p)
	}); err != nil {
		b.Fatal(err)
	}
}
