// Package metrics holds what Switchboard reports to Prometheus beyond the counters each package
// keeps of its own work: the installation's backlog (queues and broadcasts), read from Postgres
// when scraped, and Register, which every package registers its metrics through.
// docs/operations.md#metrics lists every metric.
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg and returns it; when a collector of the same name and labels is
// registered already, it returns that one instead, so that several instances in one process
// (tests start several apps) count into one. A nil reg registers nothing. Any other error is a
// metric defined wrongly, and panics.
func Register[T prometheus.Collector](reg prometheus.Registerer, c T) T {
	if reg == nil {
		return c
	}
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(T); ok {
			return existing
		}
	}
	panic(err)
}
