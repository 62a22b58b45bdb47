package delivery_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/delivery"
)

// BenchmarkDeliveries measures webhook deliveries per second from the queue to a loopback HTTPS
// receiver: b.N deliveries are enqueued first, then the workers are started and timed until the
// last one is recorded as delivered. Each delivery reads its row and the endpoint, renders and
// signs the body, makes the HTTPS request (kept-alive connections) and records the attempt.
func BenchmarkDeliveries(b *testing.B) {
	ctx := context.Background()
	var got atomic.Int64
	rcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	rcv.StartTLS()
	defer rcv.Close()

	opts := delivery.ClientOptions{Allow: loopback, RootCAs: rcv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	f := setup(b, v1alpha1.SenderWebhook{URL: rcv.URL + "/hook"}, opts, nil, 0) // the production concurrency

	// Enqueue, in transactions of 500, as a busy send path would.
	for done := 0; done < b.N; {
		tx, err := f.pool.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < 500 && done < b.N; i, done = i+1, done+1 {
			if _, err := f.service.Enqueue(ctx, tx, delivery.Event{Project: f.project, Name: "message.delivered", Sender: f.sender.Name,
				Data: map[string]any{"messageId": "msg_1", "status": "delivered"}}); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}

	b.ResetTimer()
	start := time.Now()
	if err := f.queue.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for {
		var n int
		if err := f.pool.QueryRow(ctx, "SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'").Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n == b.N {
			break
		}
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("%d of %d delivered after 5 minutes", n, b.N)
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	if got.Load() != int64(b.N) {
		b.Errorf("receiver got %d requests for %d deliveries", got.Load(), b.N)
	}
}
