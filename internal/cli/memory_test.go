package cli

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

// TestSoftMemoryLimit: 90 % of the container's limit; GOMEMLIMIT in the environment wins;
// AUTOMEMLIMIT=off leaves the runtime alone; no container limit, no soft limit.
func TestSoftMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const container = 512 << 20

	debug.SetMemoryLimit(math.MaxInt64)
	if got := setSoftMemoryLimit(logr.Discard(), memlimit.Limit(container)); got != container*9/10 || debug.SetMemoryLimit(-1) != got {
		t.Errorf("soft limit %d (runtime %d), want %d", got, debug.SetMemoryLimit(-1), container*9/10)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	if got := setSoftMemoryLimit(logr.Discard(), func() (uint64, error) { return 0, memlimit.ErrNoLimit }); got != math.MaxInt64 {
		t.Errorf("without a container limit the soft limit is %d, want none", got)
	}

	t.Run("GOMEMLIMIT set", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "300MiB")
		debug.SetMemoryLimit(300 << 20)
		if got := setSoftMemoryLimit(logr.Discard(), memlimit.Limit(container)); got != 300<<20 {
			t.Errorf("soft limit %d with GOMEMLIMIT=300MiB, want it kept", got)
		}
	})
	t.Run("AUTOMEMLIMIT off", func(t *testing.T) {
		t.Setenv("AUTOMEMLIMIT", "off")
		debug.SetMemoryLimit(math.MaxInt64)
		if got := setSoftMemoryLimit(logr.Discard(), memlimit.Limit(container)); got != math.MaxInt64 {
			t.Errorf("soft limit %d with AUTOMEMLIMIT=off, want none", got)
		}
	})
}
