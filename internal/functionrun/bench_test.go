package functionrun

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkWarmInvoke is one invocation on a warm process: the protocol's round trip.
func BenchmarkWarmInvoke(b *testing.B) {
	l := newLocal(b, LocalOptions{})
	d := deployment("warm", handler(`ctx.log('hello', event.n); return { n: event.n };`))
	invoke(b, l, d, "warmup", `{"n":0}`)
	ctx := context.Background()
	event := json.RawMessage(`{"n":1}`)
	for i := 0; b.Loop(); i++ {
		r, err := l.Invoke(ctx, d, Invocation{ID: fmt.Sprintf("i%d", i), Event: event})
		if err != nil || r.Reason != ReasonNone || r.Cold {
			b.Fatalf("%v %s %s cold=%v", err, r.Reason, r.Error, r.Cold)
		}
	}
}

// BenchmarkColdStart is the first invocation of a deployment: unpacking it, starting node,
// loading the bundle and one run.
func BenchmarkColdStart(b *testing.B) {
	l := newLocal(b, LocalOptions{})
	bundle := handler(`return 1;`)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		d := deployment(fmt.Sprintf("cold%d", i), bundle)
		r, err := l.Invoke(ctx, d, Invocation{ID: "i", Event: json.RawMessage(`{}`)})
		if err != nil || r.Reason != ReasonNone || !r.Cold {
			b.Fatalf("%v %s %s cold=%v", err, r.Reason, r.Error, r.Cold)
		}
		b.StopTimer()
		l.Retire(d.ID)
		b.StartTimer()
	}
}
