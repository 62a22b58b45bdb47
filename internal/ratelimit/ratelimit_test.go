package ratelimit_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard-io/switchboard/internal/localredis"
	"github.com/switchboard-io/switchboard/internal/ratelimit"
)

var redisURL string

func TestMain(m *testing.M) {
	srv, err := localredis.Start(context.Background(), localredis.URLFromEnv())
	if err != nil {
		panic(err)
	}
	redisURL = srv.URL
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

func newRedis(t *testing.T) *ratelimit.Redis { return newRedisB(t) }

func newRedisB(t testing.TB) *ratelimit.Redis {
	t.Helper()
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return ratelimit.NewRedis(c)
}

func project() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "test-" + hex.EncodeToString(b)
}

func backends(t *testing.T) map[string]ratelimit.Limiter {
	return map[string]ratelimit.Limiter{"memory": ratelimit.NewMemory(), "redis": newRedis(t)}
}

func TestSlidingWindow(t *testing.T) {
	t.Parallel()
	for name, l := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := project()
			t0 := time.Now().Truncate(time.Millisecond)

			// 600 requests spread over the first 30 seconds: all allowed, remaining counts down.
			for i := 0; i < 600; i++ {
				at := t0.Add(time.Duration(i) * 50 * time.Millisecond)
				d, err := l.Allow(ctx, p, 600, at)
				if err != nil {
					t.Fatal(err)
				}
				if !d.Allowed || d.Remaining != 599-i || d.Limit != 600 {
					t.Fatalf("request %d: %+v", i+1, d)
				}
				if !d.Reset.Equal(t0.Add(ratelimit.Window)) {
					t.Fatalf("request %d: reset %v, want when the first request ages out (%v)", i+1, d.Reset, t0.Add(ratelimit.Window))
				}
			}
			// The 601st, at 59 s, is refused: nothing has aged out yet.
			refused, err := l.Allow(ctx, p, 600, t0.Add(59*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if refused.Allowed || refused.Remaining != 0 || !refused.Reset.Equal(t0.Add(ratelimit.Window)) {
				t.Fatalf("601st request: %+v", refused)
			}
			if got := refused.RetryAfter(t0.Add(59 * time.Second)); got != time.Second {
				t.Errorf("Retry-After %v, want 1s", got)
			}
			// No wall-clock reset: at 60 s exactly one request has aged out, so exactly one fits.
			d, _ := l.Allow(ctx, p, 600, t0.Add(60*time.Second))
			if !d.Allowed || d.Remaining != 0 {
				t.Fatalf("at 60s: %+v, want one slot back", d)
			}
			d, _ = l.Allow(ctx, p, 600, t0.Add(60*time.Second+time.Millisecond))
			if d.Allowed {
				t.Fatalf("second request at 60s: %+v, want refused", d)
			}
			// Each project has its own window.
			if d, _ := l.Allow(ctx, project(), 600, t0.Add(60*time.Second)); !d.Allowed || d.Remaining != 599 {
				t.Fatalf("another project: %+v", d)
			}
		})
	}
}

func TestConcurrentRequestsNeverOvershoot(t *testing.T) {
	t.Parallel()
	for name, l := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := project()
			var allowed atomic.Int64
			var wg sync.WaitGroup
			now := time.Now()
			for w := 0; w < 20; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 50; i++ {
						d, err := l.Allow(context.Background(), p, 600, now)
						if err != nil {
							t.Error(err)
							return
						}
						if d.Allowed {
							allowed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if allowed.Load() != 600 {
				t.Fatalf("1000 concurrent requests at limit 600: %d allowed", allowed.Load())
			}
		})
	}
}

func TestRedisUnreachableIsAnError(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	if _, err := ratelimit.NewRedis(c).Allow(context.Background(), project(), 600, time.Now()); err == nil {
		t.Fatal("Allow with Redis unreachable = nil error")
	}
}
