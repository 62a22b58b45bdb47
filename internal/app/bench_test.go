package app_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
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

// raiseRateLimit sets a hand-set request rate and an agreed SMS ceiling far above a
// benchmark's: the window and the ceilings are measured elsewhere.
func raiseRateLimit(b *testing.B, in *instance, project string) {
	b.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p v1alpha1.Project
		if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: project, Name: "project"}, &p); err != nil {
			return err
		}
		limit, sms := int32(1_000_000), int64(1_000_000_000)
		p.Spec.RequestRateLimit = &limit
		p.Spec.Verification, p.Spec.DailyLimits = v1alpha1.VerificationBusinessApproved, &v1alpha1.DailyLimits{SMS: &sms}
		return in.k8s.Update(context.Background(), &p)
	}); err != nil {
		b.Fatal(err)
	}
}
