package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The million-recipient broadcast (issue 34): added through the API 1,000 at a time, then sent.
// It takes minutes, so a full run has it only with SWITCHBOARD_BENCH_MILLION=1 (after the
// 100,000 broadcast); SWITCHBOARD_BENCH_ONLY=million runs it alone. Its size is
// SWITCHBOARD_BENCH_MILLION_RECIPIENTS (default 1,000,000), for a quicker look at the same row.
const (
	millionRecipients = 1_000_000
	millionAccepted   = 200 * time.Second // send → every recipient accepted
	millionFinal      = 300 * time.Second // send → every message final, counters exact
)

// millionWanted says whether a full run has the million-recipient row.
func millionWanted() bool { return os.Getenv("SWITCHBOARD_BENCH_MILLION") == "1" }

// millionSize is the row's number of recipients: SWITCHBOARD_BENCH_MILLION_RECIPIENTS, rounded
// down to the 1,000 a request adds (at least 1,000), else a million.
func millionSize(b *testing.B) int {
	v := os.Getenv("SWITCHBOARD_BENCH_MILLION_RECIPIENTS")
	if v == "" {
		return millionRecipients
	}
	n, err := strconv.Atoi(strings.ReplaceAll(strings.ReplaceAll(v, "_", ""), ",", ""))
	if err != nil || n < 1000 || n > millionRecipients {
		b.Fatalf("SWITCHBOARD_BENCH_MILLION_RECIPIENTS=%q: want a number of recipients from 1000 to %d", v, millionRecipients)
	}
	return n / 1000 * 1000
}

// millionRows are the row's lines of a layout's table; none when it did not run.
func (f broadcastFigures) millionRows(ratio func(float64) string, met func(bool) string) string {
	if f.final == 0 {
		return ""
	}
	var s strings.Builder
	n := float64(f.recipients)
	fmt.Fprintf(&s, "| broadcast of %d recipients: adding them, %d POST …/contacts of 1,000 one after another | %.1f s (%.0f recipients/s) | | (measured) | |\n",
		f.recipients, f.recipients/1000, f.adding.Seconds(), n/f.adding.Seconds())
	fmt.Fprintf(&s, "| broadcast of %d recipients: send → all accepted | %.1f s (%.0f/s) | %s | ≤ %v | %s |\n", f.recipients,
		f.accepted.Seconds(), n/f.accepted.Seconds(), ratio(n/f.accepted.Seconds()), millionAccepted, met(f.accepted <= millionAccepted))
	fmt.Fprintf(&s, "| broadcast of %d recipients: send → all final, counters exact | %.1f s (%.0f/s) | %s | ≤ %v, exact | %s |\n", f.recipients,
		f.final.Seconds(), n/f.final.Seconds(), ratio(n/f.final.Seconds()), millionFinal, met(f.final <= millionFinal && f.exact))
	if !f.exact {
		fmt.Fprintf(&s, "\nBroadcast of %d counters NOT exact: %s\n", f.recipients, f.counters)
	}
	return s.String()
}
