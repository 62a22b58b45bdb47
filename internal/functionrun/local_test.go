package functionrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestReturnsValue(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	d := deployment("value", handler(`return { sum: event.a + event.b, id: ctx.invocationId, fn: ctx.functionId, dep: ctx.deploymentId };`))
	r := invoke(t, l, d, "inv1", `{"a":1,"b":2}`)
	wantOK(t, r, `{"sum":3,"id":"inv1","fn":"fn_value","dep":"value"}`)
	if !r.Cold {
		t.Error("the first invocation is not cold")
	}
	if r.Duration <= 0 {
		t.Errorf("duration %v", r.Duration)
	}
	r = invoke(t, l, d, "inv2", `{"a":2,"b":2}`)
	wantOK(t, r, `{"sum":4,"id":"inv2","fn":"fn_value","dep":"value"}`)
	if r.Cold {
		t.Error("the second invocation is cold")
	}

	// undefined is null; module.exports may be the handler itself.
	wantOK(t, invoke(t, l, deployment("undef", handler(`ctx.log('x');`)), "i", `{}`), `null`)
	plain := deployment("plain", `module.exports = async (event) => event.n * 2;`)
	wantOK(t, invoke(t, l, plain, "i", `{"n":21}`), `42`)
	def := deployment("plaindefault", `exports.default = function (event, ctx) { return ctx.invocationId; };`)
	wantOK(t, invoke(t, l, def, "i7", `{}`), `"i7"`)
}

func TestLogs(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	d := deployment("logs", handler(`
ctx.log('received', event.type, { n: 1 });
console.log('log %d', 2);
console.info('info');
console.warn('warn');
console.error(new Error('shown').message);
console.debug('debug');
process.stdout.write('raw ');
process.stdout.write('out\n');
process.stderr.write('raw err\n');
await new Promise((r) => setTimeout(r, 5));
ctx.log('after');
process.stdout.write('unterminated');
return 1;`))
	r := invoke(t, l, d, "inv-logs", `{"type":"message.inbound"}`)
	wantOK(t, r, `1`)
	var got []string
	for _, l := range r.Logs {
		got = append(got, l.Stream+": "+l.Message)
		if l.Time.IsZero() || time.Since(l.Time) > time.Minute {
			t.Errorf("line %q has time %v", l.Message, l.Time)
		}
	}
	want := []string{
		"log: received message.inbound { n: 1 }",
		"log: log 2",
		"info: info",
		"warn: warn",
		"error: shown",
		"debug: debug",
		"stdout: raw out",
		"stderr: raw err",
		"log: after",
		"stdout: unterminated",
	}
	if !slices.Equal(got, want) {
		t.Errorf("logs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestThrow(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	d := deployment("throw", handler(`if (event.sync) { throw new TypeError('sync boom'); } await null; throw new Error('boom ' + event.n);`))
	r := invoke(t, l, d, "i1", `{"n":7}`)
	wantFail(t, r, ReasonError, "boom 7", "at ")
	r = invoke(t, l, d, "i2", `{"sync":true}`)
	wantFail(t, r, ReasonError, "TypeError: sync boom")
	if r.Cold {
		t.Error("a throw restarted the process")
	}

	bigint := deployment("bigint", handler(`return { n: 1n };`))
	wantFail(t, invoke(t, l, bigint, "i", `{}`), ReasonError, "cannot be serialised as JSON", "BigInt")
}

func TestAsyncTimeoutKeepsProcess(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	d := deployment("asynctimeout", handler(`
if (event.hang) { ctx.log('hanging', ctx.remainingTimeMs() > 0); await new Promise(() => {}); }
return 'ok';`))
	d.Timeout = 300 * time.Millisecond
	start := time.Now()
	r := invoke(t, l, d, "hang", `{"hang":true}`)
	wantFail(t, r, ReasonTimeout, "timed out after 300ms")
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the timeout took %v", el)
	}
	if len(r.Logs) == 0 || r.Logs[0].Message != "hanging true" || !platformLine(r, "timed out") {
		t.Errorf("logs %v", r.Logs)
	}
	r = invoke(t, l, d, "next", `{}`)
	wantOK(t, r, `"ok"`)
	if r.Cold {
		t.Error("the process was restarted after an asynchronous timeout")
	}
}

func TestBlockedLoopRestartsProcess(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	// The blocking invocation blocks only once the slow one is running beside it, so the slow
	// one is in flight when the supervisor kills the process however loaded the machine is.
	d := deployment("blocked", handler(`
if (event.block) {
  while (!globalThis.slowArrived) await new Promise((r) => setTimeout(r, 10));
  while (true) {}
}
if (event.slow) { globalThis.slowArrived = true; await new Promise((r) => setTimeout(r, 30000)); }
return process.pid;`))
	d.Timeout = 3 * time.Second
	first := invoke(t, l, d, "warm", `{}`)
	wantOK(t, first, string(first.Value))

	// An invocation in flight beside the blocking one is a casualty of the restart.
	var wg sync.WaitGroup
	var r Result
	wg.Go(func() { r = invoke(t, l, d, "block", `{"block":true}`) })
	eventually(t, "the blocking invocation in flight", func() bool { return inFlight(running(l, "blocked")) == 1 })
	slow := invoke(t, l, d, "slow", `{"slow":true}`)
	wg.Wait()
	wantFail(t, r, ReasonTimeout, "timed out after 3s")
	if !platformLine(r, "restarted") {
		t.Errorf("no platform line about the restart: %v", r.Logs)
	}
	wantFail(t, slow, ReasonCrash, "the runtime was restarted: another invocation ran past its timeout")

	next := invoke(t, l, d, "next", `{}`)
	if !next.Cold {
		t.Error("the invocation after the kill is not cold")
	}
	if string(next.Value) == string(first.Value) {
		t.Errorf("same pid %s after the kill", next.Value)
	}
	wantOK(t, next, string(next.Value))
}

func TestOutOfMemory(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	d := deployment("oom", handler(`
if (event.hog) { const a = []; for (;;) a.push(new Array(1e6).fill(event)); }
return 'fine';`))
	d.MemoryMB = 128
	r := invoke(t, l, d, "hog", `{"hog":true}`)
	wantFail(t, r, ReasonMemory, "out of memory (128 MB)")
	if !platformLine(r, "out of memory") {
		t.Errorf("no platform line: %v", r.Logs)
	}
	r = invoke(t, l, d, "after", `{}`)
	wantOK(t, r, `"fine"`)
	if !r.Cold {
		t.Error("the invocation after the crash is not cold")
	}
}

func TestSandbox(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	d := deployment("sandbox", handler(`
const fs = require('fs');
switch (event.op) {
case 'write': fs.writeFileSync('/tmp/functionrun-sandbox-test', 'x'); return 'written';
case 'readown': return fs.readFileSync(__dirname + '/bundle.js', 'utf8').includes('readown');
case 'readother': return fs.readFileSync('/etc/passwd', 'utf8');
case 'exec': return require('child_process').execSync('ls').toString();
case 'worker': new (require('worker_threads').Worker)('1', { eval: true }); return 'worker';
}`))
	wantFail(t, invoke(t, l, d, "w", `{"op":"write"}`), ReasonError, "ERR_ACCESS_DENIED")
	if _, err := os.Stat("/tmp/functionrun-sandbox-test"); err == nil {
		t.Error("the function wrote a file")
	}
	wantOK(t, invoke(t, l, d, "r", `{"op":"readown"}`), `true`)
	wantFail(t, invoke(t, l, d, "o", `{"op":"readother"}`), ReasonError, "ERR_ACCESS_DENIED")
	wantFail(t, invoke(t, l, d, "e", `{"op":"exec"}`), ReasonError, "ERR_ACCESS_DENIED")
	wantFail(t, invoke(t, l, d, "k", `{"op":"worker"}`), ReasonError, "ERR_ACCESS_DENIED")
}

func TestOutputCapped(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	d := deployment("flood", handler(`
console.log('y'.repeat(100000));
const line = 'x'.repeat(1000);
for (let i = 0; i < 5000; i++) console.log(line);
process.stdout.write('z'.repeat(1000000) + '\n');
return 'done';`))
	r := invoke(t, l, d, "flood", `{}`)
	wantOK(t, r, `"done"`)
	total := 0
	for _, l := range r.Logs[:len(r.Logs)-1] {
		total += len(l.Message)
		if l.Stream == StreamPlatform {
			t.Errorf("platform line %q before the last", l.Message)
		}
	}
	if total > DefaultMaxLogBytes {
		t.Errorf("%d bytes of logs kept", total)
	}
	last := r.Logs[len(r.Logs)-1]
	if last.Stream != StreamPlatform || !strings.HasPrefix(last.Message, "[output truncated: ") {
		t.Errorf("last line %q", last.Message)
	}
	first := r.Logs[0].Message
	if len(first) != DefaultMaxLineBytes+len("…") || !strings.HasSuffix(first, "…") {
		t.Errorf("a 100000 byte line was kept as %d bytes", len(first))
	}
}

func TestConcurrentInvocations(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	d := deployment("concurrent", handler(`
ctx.log('start', event.n);
await new Promise((r) => setTimeout(r, 20 + (event.n % 7) * 10));
console.log('end', event.n);
return { n: event.n, pid: process.pid };`))
	const n = 50
	results := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = invoke(t, l, d, fmt.Sprintf("inv%d", i), fmt.Sprintf(`{"n":%d}`, i)) })
	}
	wg.Wait()
	cold, pids := 0, map[float64]bool{}
	for i, r := range results {
		var v struct{ N, Pid float64 }
		if r.Reason != ReasonNone {
			t.Fatalf("invocation %d: %s %s", i, r.Reason, r.Error)
		}
		if err := json.Unmarshal(r.Value, &v); err != nil || int(v.N) != i {
			t.Fatalf("invocation %d returned %s", i, r.Value)
		}
		pids[v.Pid] = true
		if r.Cold {
			cold++
		}
		// Each run's lines are its own.
		want := []string{fmt.Sprintf("start %d", i), fmt.Sprintf("end %d", i)}
		var got []string
		for _, l := range r.Logs {
			got = append(got, l.Message)
		}
		if !slices.Equal(got, want) {
			t.Errorf("invocation %d logs %q", i, got)
		}
	}
	if cold != 1 || len(pids) != 1 {
		t.Errorf("%d cold starts, %d processes; want one of each", cold, len(pids))
	}
}

func TestConcurrencyLimitAndCancel(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{Concurrency: 1})
	d := deployment("limit", handler(`await new Promise((r) => setTimeout(r, event.ms)); return event.ms;`))
	wantOK(t, invoke(t, l, d, "warm", `{"ms":0}`), `0`)

	// The only slot is busy: a second invocation waits and gives up with its context.
	var wg sync.WaitGroup
	var busy Result
	wg.Go(func() { busy = invoke(t, l, d, "busy", `{"ms":700}`) })
	eventually(t, "the busy invocation in flight", func() bool {
		return inFlight(running(l, "limit")) == 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := l.Invoke(ctx, d, Invocation{ID: "waiting", Event: json.RawMessage(`{"ms":0}`)})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting for a slot: %v", err)
	}
	wg.Wait()
	wantOK(t, busy, `700`)

	// A cancelled invocation leaves the process running; its late answer is dropped.
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err = l.Invoke(ctx, d, Invocation{ID: "cancelled", Event: json.RawMessage(`{"ms":300}`)})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled invocation: %v", err)
	}
	r := invoke(t, l, d, "after", `{"ms":1}`)
	wantOK(t, r, `1`)
	if r.Cold {
		t.Error("cancelling restarted the process")
	}
}

func TestProcessExit(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	d := deployment("exit", handler(`if (event.exit) { process.exit(3); } return 'alive';`))
	wantOK(t, invoke(t, l, d, "warm", `{}`), `"alive"`)
	r := invoke(t, l, d, "exit", `{"exit":true}`)
	wantFail(t, r, ReasonCrash, "the runtime exited with code 3")
	if !platformLine(r, "code 3") {
		t.Errorf("no platform line: %v", r.Logs)
	}
	r = invoke(t, l, d, "again", `{}`)
	wantOK(t, r, `"alive"`)
	if !r.Cold {
		t.Error("the invocation after the exit is not cold")
	}
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	d := deployment("env", handler(`return { env: { ...process.env }, secrets: ctx.secrets, frozen: Object.isFrozen(ctx.secrets), same: ctx.env === process.env, tz: new Date(0).getTimezoneOffset() };`))
	d.Env = map[string]string{"GREETING": "hello", "ZAVU_API_KEY": "zv_test_1", "ZAVUDEV_BASE_URL": "http://127.0.0.1:1", "NODE_OPTIONS": "--allow-fs-write=*", "TZ": "Europe/Paris"}
	r := invoke(t, l, d, "env", `{}`)
	var v struct {
		Env, Secrets map[string]string
		Frozen, Same bool
		TZ           int
	}
	if err := json.Unmarshal(r.Value, &v); err != nil {
		t.Fatalf("%s: %v (%s)", r.Value, err, r.Error)
	}
	wantEnv := map[string]string{
		"GREETING": "hello", "ZAVU_API_KEY": "zv_test_1", "ZAVUDEV_BASE_URL": "http://127.0.0.1:1",
		"SWITCHBOARD_FUNCTION_ID": "fn_env", "SWITCHBOARD_DEPLOYMENT_ID": "env",
		"SWITCHBOARD_SECRET_KEYS": "GREETING,ZAVUDEV_BASE_URL,ZAVU_API_KEY",
		"TZ":                      "UTC", "NODE_ENV": "production",
	}
	if fmt.Sprint(v.Env) != fmt.Sprint(wantEnv) {
		t.Errorf("env %v\nwant %v", v.Env, wantEnv)
	}
	if os.Getenv("PATH") != "" && v.Env["PATH"] != "" {
		t.Error("the host's PATH leaked in")
	}
	if want := map[string]string{"GREETING": "hello", "ZAVU_API_KEY": "zv_test_1"}; fmt.Sprint(v.Secrets) != fmt.Sprint(want) {
		t.Errorf("secrets %v, want %v", v.Secrets, want)
	}
	if !v.Frozen || !v.Same || v.TZ != 0 {
		t.Errorf("frozen %v, env is process.env %v, timezone offset %d", v.Frozen, v.Same, v.TZ)
	}
}

func TestLoadFailures(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var processLogs []string
	l := newLocal(t, LocalOptions{OnProcessLog: func(id string, line LogLine) {
		mu.Lock()
		defer mu.Unlock()
		processLogs = append(processLogs, id+" "+line.Stream+" "+line.Message)
	}})
	for _, tc := range []struct{ name, bundle, want string }{
		{"syntax", `module.exports.default = (async (event) => { return 1 ;`, "SyntaxError"},
		{"noexport", `exports.helper = () => 1;`, "the entry module must export default defineFunction(...)"},
		{"notfunction", `const { defineFunction } = require('@switchboard/functions'); exports.default = defineFunction('x');`, "TypeError: defineFunction expects a function"},
		{"throws", `console.log('loading'); throw new Error('config missing');`, "config missing"},
		{"exits", `process.exit(5);`, "exited with code 5 before the function loaded"},
	} {
		r := invoke(t, l, deployment(tc.name, tc.bundle), "i", `{}`)
		wantFail(t, r, ReasonCrash, tc.want)
		if !r.Cold {
			t.Errorf("%s: not cold", tc.name)
		}
	}
	// Output outside any invocation goes to OnProcessLog.
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(processLogs, "throws log loading") {
		t.Errorf("process logs %q", processLogs)
	}
}

func TestResultLimit(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{MaxResultBytes: 1 << 10})
	d := deployment("big", handler(`return 'x'.repeat(event.n);`))
	wantOK(t, invoke(t, l, d, "small", `{"n":1000}`), `"`+strings.Repeat("x", 1000)+`"`)
	wantFail(t, invoke(t, l, d, "big", `{"n":5000}`), ReasonError, "larger than 1 KiB")
	// Past what a frame may carry: the runner's line is dropped, the run still fails cleanly.
	wantFail(t, invoke(t, l, d, "huge", `{"n":500000}`), ReasonError, "larger than 1 KiB")
	wantOK(t, invoke(t, l, d, "after", `{"n":1}`), `"x"`)
}

func TestRetireAndClose(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	l, err := NewLocal(LocalOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pidOf := func(d *Deployment) int {
		r := invoke(t, l, d, "pid", `{}`)
		var pid int
		if err := json.Unmarshal(r.Value, &pid); err != nil || pid == 0 {
			t.Fatalf("pid %s (%s)", r.Value, r.Error)
		}
		return pid
	}
	body := handler(`if (event.wait) await new Promise((r) => setTimeout(r, 10000)); return process.pid;`)
	a, b := deployment("a", body), deployment("b", body)
	pa, pb := pidOf(a), pidOf(b)
	procA := running(l, "a")
	if !alive(pa) || !alive(pb) {
		t.Fatal("processes not running")
	}

	// An invocation in flight fails when its deployment retires.
	var wg sync.WaitGroup
	var inflight Result
	wg.Go(func() { inflight = invoke(t, l, a, "inflight", `{"wait":true}`) })
	eventually(t, "the invocation in flight", func() bool {
		return inFlight(procA) == 1
	})
	l.Retire("a")
	wg.Wait()
	wantFail(t, inflight, ReasonCrash, "retired")
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the folder of a retired deployment: %v", err)
	}
	if alive(pa) {
		t.Error("the retired process still runs")
	}
	if procA.cmd.ProcessState == nil {
		t.Error("the retired process was not waited for")
	}
	l.Retire("a") // idempotent
	l.Retire("never")
	if _, err := os.Stat(filepath.Join(dir, "b", "bundle.js")); err != nil {
		t.Errorf("the other deployment's folder: %v", err)
	}

	// A retired deployment can serve again, from a new process.
	pa2 := pidOf(a)
	if pa2 == pa {
		t.Error("same process after Retire")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{pa2, pb} {
		if alive(pid) {
			t.Errorf("process %d outlived Close", pid)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("Close left %d entries in Dir", len(entries))
	}
	if _, err := l.Invoke(context.Background(), a, Invocation{ID: "late"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Invoke after Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestCloseRemovesOwnDir(t *testing.T) {
	t.Parallel()
	l := newLocal(t, LocalOptions{})
	wantOK(t, invoke(t, l, deployment("own", handler(`return 1;`)), "i", `{}`), `1`)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close left its directory: %v", err)
	}
}

func TestNewLocalRefusesOldNode(t *testing.T) {
	t.Parallel()
	fake := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho v18.19.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := NewLocal(LocalOptions{Node: fake}); err == nil || !strings.Contains(err.Error(), "Node 20 or later") {
		t.Errorf("NewLocal with node 18: %v", err)
	}
	if _, err := NewLocal(LocalOptions{Node: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("NewLocal without node succeeded")
	}
}
