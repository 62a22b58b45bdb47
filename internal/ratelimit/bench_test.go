package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/ratelimit"
)

// BenchmarkAllow measures one decision per backend, for 100 projects at a limit no request
// reaches, as in steady traffic.
func BenchmarkAllow(b *testing.B) {
	for name, l := range map[string]ratelimit.Limiter{"memory": ratelimit.NewMemory(), "redis": newRedisB(b)} {
		b.Run(name, func(b *testing.B) {
			projects := make([]string, 100)
			for i := range projects {
				projects[i] = project()
			}
			ctx := context.Background()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := l.Allow(ctx, projects[i%len(projects)], 1<<30, time.Now()); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		})
	}
}
