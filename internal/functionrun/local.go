package functionrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// LocalOptions configures Local.
type LocalOptions struct {
	// Node is the path of node; default "node" looked up in PATH. Node 20 or later.
	Node string
	// Dir is where deployments are unpacked; default a new temporary directory that Close
	// removes.
	Dir string
	// MaxLogBytes caps an invocation's output (default 256 KiB): past it one "platform" line
	// "[output truncated: …]", and the rest is dropped.
	MaxLogBytes int
	// MaxLineBytes caps a line (default 8 KiB): longer ones are cut and end with "…".
	MaxLineBytes int
	// MaxResultBytes caps the JSON of a return value (default 6 MiB): a larger one fails the
	// run with ReasonError.
	MaxResultBytes int
	// Concurrency is how many invocations a process runs at once (default 64); more wait,
	// within their context.
	Concurrency int
	// OnProcessLog receives the output no single invocation can be blamed for (optional). It
	// is called from the goroutines reading the process: it must not block for long.
	OnProcessLog func(deploymentID string, l LogLine)
	// Log is the platform's own log. It never gets event contents, env values or output.
	Log logr.Logger
}

// Defaults of LocalOptions.
const (
	DefaultMaxLogBytes    = 256 << 10
	DefaultMaxLineBytes   = 8 << 10
	DefaultMaxResultBytes = 6 << 20
	DefaultConcurrency    = 64
)

// stopGrace is how long a process has between SIGTERM and SIGKILL.
const stopGrace = time.Second

// Local runs deployments in warm Node.js processes on this machine, one per deployment,
// sandboxed by Node's permission model.
type Local struct {
	o      LocalOptions
	node   string
	flags  []string // node's flags before --allow-fs-read
	dir    string
	ownDir bool

	mu     sync.Mutex
	slots  map[string]*slot // by deployment id
	closed bool
}

var _ Runtime = (*Local)(nil)

// slot is a deployment's place in Local.
type slot struct {
	mu   sync.Mutex // serialises starting and retiring its process
	p    *process
	gone bool // retired: look the deployment up again
}

// NewLocal checks node (its version once) and prepares Dir.
func NewLocal(o LocalOptions) (*Local, error) {
	if o.MaxLogBytes <= 0 {
		o.MaxLogBytes = DefaultMaxLogBytes
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Node == "" {
		o.Node = "node"
	}
	node, err := exec.LookPath(o.Node)
	if err != nil {
		return nil, fmt.Errorf("functionrun: finding node: %w", err)
	}
	flags, err := nodeFlags(context.Background(), node)
	if err != nil {
		return nil, err
	}
	l := &Local{o: o, node: node, flags: flags, slots: map[string]*slot{}}
	if o.Dir == "" {
		if l.dir, err = os.MkdirTemp("", "functionrun-"); err != nil {
			return nil, fmt.Errorf("functionrun: %w", err)
		}
		l.ownDir = true
	} else {
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("functionrun: %w", err)
		}
		l.dir = o.Dir
	}
	// Node's permission checks compare real paths.
	if l.dir, err = filepath.Abs(l.dir); err == nil {
		l.dir, err = filepath.EvalSymlinks(l.dir)
	}
	if err != nil {
		l.removeOwnDir()
		return nil, fmt.Errorf("functionrun: %w", err)
	}
	return l, nil
}

var nodeVersion = regexp.MustCompile(`^v(\d+)\.(\d+)\.`)

// nodeFlags checks node's version and returns the sandbox's flags it understands.
func nodeFlags(ctx context.Context, node string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--version")
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("functionrun: %s --version: %w", node, err)
	}
	m := nodeVersion.FindStringSubmatch(strings.TrimSpace(string(out)))
	if m == nil {
		return nil, fmt.Errorf("functionrun: %s --version printed %q", node, strings.TrimSpace(string(out)))
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < 20 {
		return nil, fmt.Errorf("functionrun: node %s is too old: functions need Node 20 or later", strings.TrimSpace(string(out)))
	}
	flags := []string{"--permission"}
	if major < 23 {
		flags = []string{"--experimental-permission"}
	}
	// The permission model's "experimental" warning would otherwise open every process's stderr.
	if major >= 22 || major == 21 && minor >= 3 || major == 20 && minor >= 11 {
		flags = append(flags, "--disable-warning=ExperimentalWarning")
	}
	return flags, nil
}

// Invoke runs inv on d's warm process, starting one if there is none.
func (l *Local) Invoke(ctx context.Context, d *Deployment, inv Invocation) (Result, error) {
	if err := checkID(d.ID); err != nil {
		return Result{}, err
	}
	if inv.ID == "" {
		return Result{}, errors.New("functionrun: an invocation needs an id")
	}
	memoryMB, timeout := d.MemoryMB, d.Timeout
	if memoryMB <= 0 {
		memoryMB = DefaultMemoryMB
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// A process that goes away while the invocation waits for a slot never saw it: try the
	// next one, a few times.
	for attempt := 0; ; attempt++ {
		p, cold, err := l.process(d, memoryMB)
		if err != nil {
			return Result{}, err
		}
		r, retry, err := p.invoke(ctx, inv, timeout, cold)
		if retry && attempt < 3 {
			continue
		}
		if retry {
			return Result{Reason: ReasonCrash, Error: "the runtime kept stopping before the invocation could run"}, nil
		}
		return r, err
	}
}

// checkID refuses deployment ids that are not a plain folder name.
func checkID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`+"\x00") {
		return fmt.Errorf("functionrun: invalid deployment id %q", id)
	}
	return nil
}

// process returns d's live process, starting it (cold) when there is none.
func (l *Local) process(d *Deployment, memoryMB int) (*process, bool, error) {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, false, ErrClosed
		}
		s := l.slots[d.ID]
		if s == nil {
			s = &slot{}
			l.slots[d.ID] = s
		}
		l.mu.Unlock()

		s.mu.Lock()
		if s.gone {
			s.mu.Unlock()
			continue
		}
		if s.p != nil && !s.p.isStopping() {
			p := s.p
			s.mu.Unlock()
			return p, false, nil
		}
		p, err := l.start(d, memoryMB)
		if err == nil {
			s.p = p
		}
		s.mu.Unlock()
		return p, err == nil, err
	}
}

func (l *Local) start(d *Deployment, memoryMB int) (*process, error) {
	dir := filepath.Join(l.dir, d.ID)
	if err := writeDeployment(dir, d.Bundle); err != nil {
		return nil, fmt.Errorf("functionrun: unpacking deployment %s: %w", d.ID, err)
	}
	p, err := startProcess(l, d, dir, memoryMB)
	if err != nil {
		return nil, err
	}
	l.o.Log.V(1).Info("started a function process", "deployment", d.ID, "function", d.FunctionID, "pid", p.cmd.Process.Pid)
	return p, nil
}

// Retire stops a deployment's process and removes its folder. Invocations in flight fail
// with ReasonCrash.
func (l *Local) Retire(deploymentID string) {
	l.mu.Lock()
	s := l.slots[deploymentID]
	l.mu.Unlock()
	if s == nil {
		return
	}
	l.retire(deploymentID, s, "the runtime was stopped: the deployment was retired")
}

func (l *Local) retire(id string, s *slot, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	if s.p != nil {
		s.p.stop(why, stopGrace)
		s.p = nil
	}
	if err := os.RemoveAll(filepath.Join(l.dir, id)); err != nil {
		l.o.Log.Error(err, "removing a deployment's folder", "deployment", id)
	}
	l.mu.Lock()
	if l.slots[id] == s {
		delete(l.slots, id)
	}
	l.mu.Unlock()
	s.gone = true
}

// Close stops every process and removes the folder NewLocal made.
func (l *Local) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	slots := make(map[string]*slot, len(l.slots))
	for id, s := range l.slots {
		slots[id] = s
	}
	l.mu.Unlock()

	var wg sync.WaitGroup
	for id, s := range slots {
		wg.Go(func() { l.retire(id, s, "the runtime was stopped: it is shutting down") })
	}
	wg.Wait()
	return l.removeOwnDir()
}

func (l *Local) removeOwnDir() error {
	if !l.ownDir {
		return nil
	}
	if err := os.RemoveAll(l.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("functionrun: %w", err)
	}
	return nil
}
