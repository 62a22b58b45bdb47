package cli

import (
	"errors"
	"log/slog"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

// softMemoryRatio is the share of the container's memory limit the Go runtime's soft limit is
// set to: the rest is for what the runtime does not count (the binary's own pages, about 90 MB,
// and the kernel's buffers).
const softMemoryRatio = 0.9

// setSoftMemoryLimit sets the Go runtime's soft memory limit to softMemoryRatio of the memory
// limit limits reports (the container's cgroup, containerMemoryLimit), so that the collector
// works harder as the process nears it instead of the process being killed at it. GOMEMLIMIT
// in the environment wins; AUTOMEMLIMIT=off turns it off, AUTOMEMLIMIT=0.8 sets another ratio.
// No limit (a laptop, a pod without one) leaves the runtime without one. It returns the limit
// set, in bytes.
func setSoftMemoryLimit(log logr.Logger, limits memlimit.Provider) int64 {
	// memlimit logs what it did, and why it did nothing, on the logger it is given.
	limit, _ := memlimit.Set(memlimit.WithRatio(softMemoryRatio), memlimit.WithProvider(limits),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(log.WithName("memory")))))
	return limit
}

// containerMemoryLimit is the memory limit of the process's cgroup: a process in none, or on a
// system without cgroups (a laptop), has no limit rather than an error to log at every start.
func containerMemoryLimit() (uint64, error) {
	limit, err := memlimit.FromCgroup()
	if errors.Is(err, memlimit.ErrNoCgroup) || errors.Is(err, memlimit.ErrCgroupsNotSupported) {
		return 0, memlimit.ErrNoLimit
	}
	return limit, err
}
