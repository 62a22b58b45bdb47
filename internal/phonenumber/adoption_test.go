package phonenumber_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/phonenumber"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The cutoff is set once per installation: a later start, or another replica, reads the first.
func TestAdoptionCutoffIsKept(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	first, err := phonenumber.AdoptionCutoff(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if first.Before(before) || first.After(time.Now()) {
		t.Fatalf("cutoff %v is not now", first)
	}
	time.Sleep(1100 * time.Millisecond)
	again, err := phonenumber.AdoptionCutoff(ctx, pool)
	if err != nil || !again.Equal(first) {
		t.Fatalf("second read = %v, %v; want %v", again, err, first)
	}
}
