package functionrun

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// newLocal is a Local for one test, closed at its end; the test is skipped without node.
func newLocal(tb testing.TB, o LocalOptions) *Local {
	tb.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		tb.Skip("node is not installed")
	}
	l, err := NewLocal(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := l.Close(); err != nil {
			tb.Error(err)
		}
	})
	return l
}

// handler is a bundle as esbuild would write it, around the body of an async handler.
func handler(body string) string {
	return `"use strict";
const { defineFunction } = require('@zavudev/functions');
module.exports.default = defineFunction(async (event, ctx) => {
` + body + `
});
Object.defineProperty(module.exports, '__esModule', { value: true });
`
}

func deployment(id, bundle string) *Deployment {
	return &Deployment{ID: id, FunctionID: "fn_" + id, Bundle: []byte(bundle), Timeout: 10 * time.Second}
}

// invoke runs one invocation and fails the test on a platform error.
func invoke(tb testing.TB, l *Local, d *Deployment, id, event string) Result {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := l.Invoke(ctx, d, Invocation{ID: id, Event: json.RawMessage(event)})
	if err != nil {
		tb.Fatalf("Invoke %s: %v", id, err)
	}
	return r
}

// wantOK fails unless r succeeded with the JSON value want.
func wantOK(tb testing.TB, r Result, want string) {
	tb.Helper()
	if r.Reason != ReasonNone || r.Error != "" {
		tb.Fatalf("run failed: %s: %s (logs %v)", r.Reason, r.Error, r.Logs)
	}
	var got, exp any
	if err := json.Unmarshal(r.Value, &got); err != nil {
		tb.Fatalf("value %s: %v", r.Value, err)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		tb.Fatal(err)
	}
	g, _ := json.Marshal(got)
	e, _ := json.Marshal(exp)
	if string(g) != string(e) {
		tb.Fatalf("value = %s, want %s", r.Value, want)
	}
}

// wantFail fails unless r failed for reason with an error containing each of parts.
func wantFail(tb testing.TB, r Result, reason Reason, parts ...string) {
	tb.Helper()
	if r.Reason != reason {
		tb.Fatalf("reason = %q (%s), want %q; logs %v", r.Reason, r.Error, reason, r.Logs)
	}
	if r.Value != nil {
		tb.Errorf("value = %s on a failure", r.Value)
	}
	for _, p := range parts {
		if !strings.Contains(r.Error, p) {
			tb.Errorf("error %q does not mention %q", r.Error, p)
		}
	}
}

// platformLine reports whether r has a platform line containing s.
func platformLine(r Result, s string) bool {
	for _, l := range r.Logs {
		if l.Stream == StreamPlatform && strings.Contains(l.Message, s) {
			return true
		}
	}
	return false
}

// eventually polls cond until it holds or the deadline passes.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running is the deployment's current process, nil if none.
func running(l *Local, id string) *process {
	l.mu.Lock()
	s := l.slots[id]
	l.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// inFlight is how many calls p has in flight.
func inFlight(p *process) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}
