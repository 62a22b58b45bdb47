package functionrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// overdueGrace is how long past its timeout an invocation may stay unanswered before the
// supervisor decides the event loop is blocked and kills the process. The runner answers a
// timeout itself whenever its loop is free.
const overdueGrace = time.Second

// stderrTailLines is how many of the last stderr lines a process keeps to explain a death
// before loading.
const stderrTailLines = 5

// process is one node process running one deployment: a runner and the calls in flight on it.
type process struct {
	l          *Local
	deployment string
	memoryMB   int
	cmd        *exec.Cmd
	req        *os.File      // our end of the runner's fd 3
	writeMu    sync.Mutex    // one request at a time on req
	slots      chan struct{} // a token per call in flight (LocalOptions.Concurrency)
	ready      chan struct{} // closed once the bundle loaded, or the process is gone
	readyOnce  sync.Once
	exited     chan struct{} // closed once the process was waited for and its calls settled

	mu         sync.Mutex
	calls      map[string]*call // by invocation id
	loaded     bool
	fatal      string     // the loader's error
	stopping   bool       // killed or exiting: takes no more requests
	cause      *stopCause // why the supervisor stopped it
	oom        bool       // stderr told of heap exhaustion
	stderrTail []string   // the last stderr lines
	end        Result     // the outcome for callers that waited for a process that never loaded
}

// stopCause is why the supervisor stopped a process: a call that ran past its timeout with
// the event loop blocked, or msg (retired, closed).
type stopCause struct {
	overdue *call
	msg     string
}

// call is an invocation in flight.
type call struct {
	id        string
	timeout   time.Duration
	logs      *logSink
	timer     *time.Timer // the overdue watchdog
	sent      time.Time
	result    chan Result // buffered: settle never blocks
	abandoned bool        // its caller left (p.mu)
}

// frame is a line of the runner on fd 4.
type frame struct {
	T      string          `json:"t"`
	ID     string          `json:"id"`
	S      string          `json:"s"`
	M      string          `json:"m"`
	TS     int64           `json:"ts"`
	OK     bool            `json:"ok"`
	Value  json.RawMessage `json:"value"`
	Error  string          `json:"error"`
	Reason string          `json:"reason"`
}

// startProcess starts node on a deployment's folder, which holds its files already.
func startProcess(l *Local, d *Deployment, dir string, memoryMB int) (*process, error) {
	cmd := exec.Command(l.node, nodeArgs(l.flags, dir, memoryMB)...)
	cmd.Dir = dir
	cmd.Env = environ(d)
	cmd.SysProcAttr = sysProcAttr()

	var pipes [8]*os.File // reqR, reqW, frR, frW, outR, outW, errR, errW
	for i := 0; i < len(pipes); i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(pipes[:i]...)
			return nil, fmt.Errorf("functionrun: %w", err)
		}
		pipes[i], pipes[i+1] = r, w
	}
	reqR, reqW, frR, frW, outR, outW, errR, errW := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4], pipes[5], pipes[6], pipes[7]
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.ExtraFiles = []*os.File{reqR, frW} // fd 3 and fd 4
	err := cmd.Start()
	// The child holds its ends now: ours must go, or the readers never see the end.
	closeFiles(reqR, frW, outW, errW)
	if err != nil {
		closeFiles(reqW, frR, outR, errR)
		return nil, fmt.Errorf("functionrun: starting node: %w", err)
	}
	p := &process{
		l:          l,
		deployment: d.ID,
		memoryMB:   memoryMB,
		cmd:        cmd,
		req:        reqW,
		slots:      make(chan struct{}, l.o.Concurrency),
		ready:      make(chan struct{}),
		exited:     make(chan struct{}),
		calls:      map[string]*call{},
	}
	var readers sync.WaitGroup
	readers.Go(func() { p.readFrames(frR) })
	readers.Go(func() { p.readRaw(outR, StreamStdout) })
	readers.Go(func() { p.readRaw(errR, StreamStderr) })
	go func() {
		// Wait only once the pipes are drained, so stderr's last words (out of memory) count.
		readers.Wait()
		_ = cmd.Wait()
		p.exit()
	}()
	return p, nil
}

// nodeArgs are node's arguments to run the runner of the folder dir (a real path) in the
// sandbox: it reads dir only, with a heap of memoryMB.
func nodeArgs(flags []string, dir string, memoryMB int, runnerArgs ...string) []string {
	args := slices.Clone(flags)
	args = append(args,
		"--allow-fs-read="+dir+string(filepath.Separator),
		fmt.Sprintf("--max-old-space-size=%d", memoryMB),
		filepath.Join(dir, "runner.js"))
	return append(args, runnerArgs...)
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// environ is the process's whole environment: the deployment's, and what the runtime sets.
func environ(d *Deployment) []string {
	env := functionEnv(d.Env, 4)
	if _, ok := d.Env["SWITCHBOARD_FUNCTION_ID"]; !ok {
		env = append(env, "SWITCHBOARD_FUNCTION_ID="+d.FunctionID)
	}
	if _, ok := d.Env["SWITCHBOARD_DEPLOYMENT_ID"]; !ok {
		env = append(env, "SWITCHBOARD_DEPLOYMENT_ID="+d.ID)
	}
	return append(env, "TZ=UTC", "NODE_ENV=production")
}

// functionEnv is a function's own variables as exec takes them, with room for extra more: those
// exec would refuse are skipped, and TZ, NODE_ENV and NODE_OPTIONS, which the runtime sets or
// drops.
func functionEnv(vars map[string]string, extra int) []string {
	env := make([]string, 0, len(vars)+extra+1)
	var keys []string
	for k, v := range vars {
		switch {
		case k == "" || strings.ContainsAny(k, "=,\x00") || strings.ContainsRune(v, 0):
			continue // exec would refuse it
		case k == "TZ" || k == "NODE_ENV" || k == "NODE_OPTIONS" || k == SecretKeysVar:
			continue
		}
		env = append(env, k+"="+v)
		keys = append(keys, k)
	}
	// The names of the function's own variables: ctx.secrets holds those only, whatever else
	// the process's environment has (a pod's image sets PATH, HOME and more).
	slices.Sort(keys)
	return append(env, SecretKeysVar+"="+strings.Join(keys, ","))
}

// SecretKeysVar lists the function's variables (comma-separated) for ctx.secrets.
const SecretKeysVar = "SWITCHBOARD_SECRET_KEYS"

// invoke runs inv once the process loaded. retry reports that the process went away before
// the request was sent, so the caller may start another.
func (p *process) invoke(ctx context.Context, inv Invocation, timeout time.Duration, cold bool) (res Result, retry bool, err error) {
	select {
	case <-p.ready:
	case <-ctx.Done():
		return Result{}, false, ctx.Err()
	}
	p.mu.Lock()
	loaded, fatal := p.loaded, p.fatal
	p.mu.Unlock()
	if !loaded {
		if fatal == "" {
			<-p.exited
		}
		p.mu.Lock()
		r := p.end
		p.mu.Unlock()
		r.Cold = cold
		return r, false, nil
	}

	select {
	case p.slots <- struct{}{}:
	case <-p.exited:
		return Result{}, true, nil
	case <-ctx.Done():
		return Result{}, false, ctx.Err()
	}
	event := inv.Event
	if len(event) == 0 {
		event = json.RawMessage("{}")
	}
	// Marshal compacts the event: a request is one line.
	req, err := json.Marshal(struct {
		ID        string          `json:"id"`
		Event     json.RawMessage `json:"event"`
		TimeoutMs int64           `json:"timeoutMs"`
	}{inv.ID, event, timeout.Milliseconds()})
	if err != nil {
		<-p.slots
		return Result{}, false, fmt.Errorf("functionrun: the event is not JSON: %w", err)
	}
	req = append(req, '\n')

	c := &call{
		id:      inv.ID,
		timeout: timeout,
		logs:    newLogSink(p.l.o.MaxLineBytes, p.l.o.MaxLogBytes),
		result:  make(chan Result, 1),
	}
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		<-p.slots
		return Result{}, true, nil
	}
	if _, dup := p.calls[inv.ID]; dup {
		p.mu.Unlock()
		<-p.slots
		return Result{}, false, fmt.Errorf("functionrun: invocation %q is already running", inv.ID)
	}
	c.sent = time.Now()
	c.timer = time.AfterFunc(timeout+overdueGrace, func() { p.overdue(c) })
	p.calls[inv.ID] = c
	p.mu.Unlock()

	p.writeMu.Lock()
	_, err = p.req.Write(req)
	p.writeMu.Unlock()
	if err != nil {
		if p.take(inv.ID) == c {
			c.timer.Stop()
			<-p.slots
			return Result{}, false, fmt.Errorf("functionrun: sending the request: %w", err)
		}
		// The process ended meanwhile and settled the call.
	}

	select {
	case r := <-c.result:
		r.Cold = cold
		return r, false, nil
	case <-ctx.Done():
		p.mu.Lock()
		c.abandoned = true
		p.mu.Unlock()
		return Result{}, false, ctx.Err()
	}
}

// take removes a call from those in flight; the one who takes it settles it.
func (p *process) take(id string) *call {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls[id]
	delete(p.calls, id)
	return c
}

// settle hands a taken call its result and frees its slot.
func (p *process) settle(c *call, r Result) {
	c.timer.Stop()
	r.Logs = c.logs.take()
	r.Duration = time.Since(c.sent)
	c.result <- r
	<-p.slots
}

func (p *process) closeReady() { p.readyOnce.Do(func() { close(p.ready) }) }

// stopping reports whether the process takes no more requests.
func (p *process) isStopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

func (p *process) readFrames(f *os.File) {
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	limit := p.l.o.MaxResultBytes + 64<<10 // a done frame is its value and a little
	for {
		line, cut, err := readLine(br, limit)
		if err != nil {
			return
		}
		if cut {
			p.oversized(line)
			continue
		}
		var fr frame
		if err := json.Unmarshal(line, &fr); err != nil {
			// Not err itself: it may quote the function's output.
			p.l.o.Log.Info("malformed frame from a function process dropped", "deployment", p.deployment, "bytes", len(line))
			continue
		}
		switch fr.T {
		case "ready":
			p.mu.Lock()
			p.loaded = true
			p.mu.Unlock()
			p.closeReady()
		case "fatal":
			p.loadFailed(fr.Error)
		case "log":
			p.logFrame(fr)
		case "done":
			p.done(fr)
		}
	}
}

// oversized handles a frame longer than any allowed: a done frame whose value is too large
// (its id is in the head, where the runner writes it).
func (p *process) oversized(head []byte) {
	dec := json.NewDecoder(bytes.NewReader(head))
	var t, id string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return
	}
	for dec.More() && (t == "" || id == "") {
		key, err := dec.Token()
		if err != nil {
			break
		}
		var s string
		if err := dec.Decode(&s); err != nil {
			break
		}
		switch key {
		case "t":
			t = s
		case "id":
			id = s
		}
	}
	if t != "done" {
		p.l.o.Log.Info("oversized frame from a function process dropped", "deployment", p.deployment, "type", t)
		return
	}
	if c := p.take(id); c != nil {
		p.settle(c, Result{Reason: ReasonError, Error: p.tooLarge()})
	}
}

func (p *process) tooLarge() string {
	return fmt.Sprintf("the return value is larger than %s of JSON", formatBytes(p.l.o.MaxResultBytes))
}

func (p *process) loadFailed(msg string) {
	p.mu.Lock()
	p.fatal = msg
	p.stopping = true
	p.end = Result{Reason: ReasonCrash, Error: "the function could not load: " + msg,
		Logs: []LogLine{{Time: time.Now(), Stream: StreamPlatform, Message: "the function could not load: " + msg}}}
	p.mu.Unlock()
	p.l.o.Log.Info("a function failed to load", "deployment", p.deployment)
	p.closeReady()
	p.kill()
}

func (p *process) done(fr frame) {
	c := p.take(fr.ID)
	if c == nil {
		return // a late answer: the call timed out or was settled otherwise
	}
	var r Result
	switch {
	case fr.OK && len(fr.Value) > p.l.o.MaxResultBytes:
		r = Result{Reason: ReasonError, Error: p.tooLarge()}
	case fr.OK:
		r.Value = fr.Value
		if len(r.Value) == 0 {
			r.Value = json.RawMessage("null")
		}
	case fr.Reason == string(ReasonTimeout):
		r = Result{Reason: ReasonTimeout, Error: fr.Error}
		c.logs.platform("the invocation " + fr.Error)
	default:
		r = Result{Reason: ReasonError, Error: fr.Error}
	}
	p.settle(c, r)
}

// blame returns the call output belongs to: by id, or for a raw line the one call in flight.
func (p *process) blame(id string, raw bool) *call {
	p.mu.Lock()
	defer p.mu.Unlock()
	var c *call
	if raw {
		if len(p.calls) == 1 {
			for _, c = range p.calls {
			}
		}
	} else if id != "" {
		c = p.calls[id]
	}
	if c != nil && c.abandoned {
		return nil
	}
	return c
}

func (p *process) logFrame(fr frame) {
	switch fr.S {
	case "log", "info", "warn", "error", "debug", StreamStdout, StreamStderr:
	default:
		fr.S = StreamLog
	}
	t := time.Now()
	if fr.TS > 0 {
		t = time.UnixMilli(fr.TS)
	}
	if c := p.blame(fr.ID, false); c != nil {
		c.logs.add(t, fr.S, fr.M)
		return
	}
	p.processLog(LogLine{Time: t, Stream: fr.S, Message: cutLine(fr.M, p.l.o.MaxLineBytes)})
}

// readRaw reads the process's stdout or stderr: what the runner could not capture itself
// (native code, Node's own messages, writes outside any invocation).
func (p *process) readRaw(f *os.File, stream string) {
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, cut, err := readLine(br, p.l.o.MaxLineBytes)
		if err != nil {
			return
		}
		msg := string(line)
		if cut {
			msg = markCut(msg)
		}
		if stream == StreamStderr {
			p.mu.Lock()
			if strings.Contains(msg, "JavaScript heap out of memory") || strings.Contains(msg, "Reached heap limit") {
				p.oom = true
			}
			p.stderrTail = append(p.stderrTail, msg)
			if len(p.stderrTail) > stderrTailLines {
				p.stderrTail = p.stderrTail[1:]
			}
			p.mu.Unlock()
		}
		if c := p.blame("", true); c != nil {
			c.logs.add(time.Now(), stream, msg)
			continue
		}
		p.processLog(LogLine{Time: time.Now(), Stream: stream, Message: msg})
	}
}

func (p *process) processLog(l LogLine) {
	if f := p.l.o.OnProcessLog; f != nil {
		f(p.deployment, l)
	}
}

// overdue fires when a call got no answer by its timeout and the grace: the runner's own
// timer could not run, so the event loop is blocked and only a kill frees it.
func (p *process) overdue(c *call) {
	p.mu.Lock()
	if p.calls[c.id] != c {
		p.mu.Unlock()
		return
	}
	if p.cause == nil {
		p.cause = &stopCause{overdue: c}
	}
	p.stopping = true
	p.mu.Unlock()
	p.l.o.Log.Info("a function blocked its event loop past its timeout: killing the process", "deployment", p.deployment)
	p.kill()
}

func (p *process) kill() { _ = p.cmd.Process.Kill() }

// stop ends the process: SIGTERM, then SIGKILL after grace. It returns once it is gone.
func (p *process) stop(why string, grace time.Duration) {
	p.mu.Lock()
	if p.cause == nil {
		p.cause = &stopCause{msg: why}
	}
	p.stopping = true
	p.mu.Unlock()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.kill()
	}
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.kill()
		<-p.exited
	}
}

// exit runs once the process was waited for: it settles every call still in flight.
func (p *process) exit() {
	state := p.cmd.ProcessState
	how := "ended"
	if state != nil {
		if code := state.ExitCode(); code >= 0 {
			how = fmt.Sprintf("exited with code %d", code)
		} else {
			how = "was killed (" + state.String() + ")"
		}
	}
	p.mu.Lock()
	p.stopping = true
	calls := p.calls
	p.calls = map[string]*call{}
	cause, oom := p.cause, p.oom
	if !p.loaded && p.fatal == "" {
		msg := "the runtime " + how + " before the function loaded"
		if cause != nil && cause.msg != "" {
			msg = cause.msg
		} else if oom {
			msg = fmt.Sprintf("out of memory (%d MB) while loading the function", p.memoryMB)
		}
		lines := []LogLine{{Time: time.Now(), Stream: StreamPlatform, Message: msg}}
		for _, l := range p.stderrTail {
			lines = append(lines, LogLine{Time: time.Now(), Stream: StreamStderr, Message: l})
		}
		p.end = Result{Reason: ReasonCrash, Error: msg, Logs: lines}
		if oom && cause == nil {
			p.end.Reason = ReasonMemory
		}
	}
	p.mu.Unlock()
	p.req.Close()

	for _, c := range calls {
		var r Result
		switch {
		case cause != nil && cause.overdue == c:
			r = Result{Reason: ReasonTimeout, Error: "timed out after " + c.timeout.String()}
			c.logs.platform("the invocation timed out after " + c.timeout.String() + " with the event loop blocked: the runtime was restarted")
		case cause != nil && cause.overdue != nil:
			r = Result{Reason: ReasonCrash, Error: "the runtime was restarted: another invocation ran past its timeout"}
			c.logs.platform(r.Error)
		case cause != nil:
			r = Result{Reason: ReasonCrash, Error: cause.msg}
			c.logs.platform(cause.msg)
		case oom:
			r = Result{Reason: ReasonMemory, Error: fmt.Sprintf("out of memory (%d MB)", p.memoryMB)}
			c.logs.platform(fmt.Sprintf("the runtime ran out of memory (%d MB heap) and was restarted", p.memoryMB))
		default:
			r = Result{Reason: ReasonCrash, Error: "the runtime " + how}
			c.logs.platform("the runtime " + how + " during the invocation")
		}
		p.settle(c, r)
	}
	p.closeReady()
	close(p.exited)
	if cause == nil {
		p.l.o.Log.Info("a function process ended", "deployment", p.deployment, "how", how, "outOfMemory", oom, "inFlight", len(calls))
	} else {
		p.l.o.Log.V(1).Info("a function process was stopped", "deployment", p.deployment, "how", how, "inFlight", len(calls))
	}
}
