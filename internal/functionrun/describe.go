package functionrun

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Manifest is what a bundle declares when it loads.
type Manifest struct {
	HasHandler bool            `json:"hasHandler"`
	Agent      json.RawMessage `json:"agent,omitempty"` // defineAgent's config, JSON; nil when none
	Tools      []ToolManifest  `json:"tools"`
}

// ToolManifest is a tool a bundle declares with defineTool.
type ToolManifest struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // its JSON Schema
}

// Describe's limits.
const (
	DescribeMemoryMB       = 256              // the heap of a describing process
	DefaultDescribeTimeout = 10 * time.Second // Describe's timeout when it is given none
	maxManifestBytes       = 8 << 20          // the longest manifest frame read
)

// DescribeError is Describe's error when the bundle itself cannot load: it threw, has a syntax
// error, declares neither a handler nor an agent or tools, exited, ran out of memory or took
// longer than the timeout. Message is for the function's author.
type DescribeError struct {
	Message string
}

func (e *DescribeError) Error() string { return "the function could not load: " + e.Message }

// Describe loads bundle in a node process of its own (the same permission flags as Local's, a
// heap of DescribeMemoryMB, an environment of env only plus TZ=UTC and NODE_ENV=production)
// and returns what it declares. It fails with a *DescribeError carrying the loader's message when
// the bundle cannot load (a throw at load, a syntax error, no handler and no agent or tools),
// or within timeout (DefaultDescribeTimeout when 0); with another error when node is missing
// or older than 20, or ctx ends. node is node's path ("" looks up "node" in PATH).
func Describe(ctx context.Context, node string, bundle []byte, env map[string]string, timeout time.Duration) (Manifest, error) {
	if timeout <= 0 {
		timeout = DefaultDescribeTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if node == "" {
		node = "node"
	}
	nodePath, err := exec.LookPath(node)
	if err != nil {
		return Manifest{}, fmt.Errorf("functionrun: finding node: %w", err)
	}
	flags, err := nodeFlags(ctx, nodePath)
	if err != nil {
		return Manifest{}, err
	}

	dir, err := os.MkdirTemp("", "functionrun-describe-")
	if err != nil {
		return Manifest{}, fmt.Errorf("functionrun: %w", err)
	}
	defer os.RemoveAll(dir)
	// Node's permission checks compare real paths.
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return Manifest{}, fmt.Errorf("functionrun: %w", err)
	}
	if err := writeDeployment(dir, bundle); err != nil {
		return Manifest{}, fmt.Errorf("functionrun: writing the bundle: %w", err)
	}

	cmd := exec.CommandContext(ctx, nodePath, nodeArgs(flags, dir, DescribeMemoryMB, "--describe")...)
	cmd.Dir = dir
	cmd.Env = append(functionEnv(env, 2), "TZ=UTC", "NODE_ENV=production")
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = time.Second
	stderr := &tailWriter{max: 4 << 10}
	cmd.Stderr = stderr // stdout: the null device
	frR, frW, err := os.Pipe()
	if err != nil {
		return Manifest{}, fmt.Errorf("functionrun: %w", err)
	}
	noRequests, err := os.Open(os.DevNull) // fd 3: describe mode reads no request
	if err != nil {
		closeFiles(frR, frW)
		return Manifest{}, fmt.Errorf("functionrun: %w", err)
	}
	cmd.ExtraFiles = []*os.File{noRequests, frW}
	err = cmd.Start()
	closeFiles(noRequests, frW)
	if err != nil {
		frR.Close()
		return Manifest{}, fmt.Errorf("functionrun: starting node: %w", err)
	}

	m, fatal, got, readErr := readManifest(frR)
	frR.Close()
	waitErr := cmd.Wait()
	switch {
	case got:
		if readErr != nil {
			return Manifest{}, readErr
		}
		return m, nil
	case fatal != "":
		return Manifest{}, &DescribeError{Message: fatal}
	case parent.Err() != nil:
		return Manifest{}, fmt.Errorf("functionrun: describing the function: %w", parent.Err())
	case ctx.Err() != nil:
		return Manifest{}, &DescribeError{Message: "it did not load within " + timeout.String()}
	}
	tail := stderr.String()
	if strings.Contains(tail, "JavaScript heap out of memory") || strings.Contains(tail, "Reached heap limit") {
		return Manifest{}, &DescribeError{Message: fmt.Sprintf("out of memory (%d MB) while loading the function", DescribeMemoryMB)}
	}
	how := "ended"
	if st := cmd.ProcessState; st != nil {
		if code := st.ExitCode(); code >= 0 {
			how = fmt.Sprintf("exited with code %d", code)
		} else {
			how = "was killed (" + st.String() + ")"
		}
	} else if waitErr != nil {
		how = "failed (" + waitErr.Error() + ")"
	}
	msg := "the runtime " + how + " before the function loaded"
	if lines := lastLines(tail, stderrTailLines); len(lines) > 0 {
		msg += "; it printed:\n" + strings.Join(lines, "\n")
	}
	return Manifest{}, &DescribeError{Message: msg}
}

// readManifest reads the runner's frames until its manifest or fatal frame, or the end. got
// reports a manifest frame (err says when it was malformed).
func readManifest(f *os.File) (m Manifest, fatal string, got bool, err error) {
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, cut, rerr := readLine(br, maxManifestBytes)
		if rerr != nil {
			return Manifest{}, "", false, nil
		}
		var head struct {
			T     string `json:"t"`
			Error string `json:"error"`
		}
		if cut {
			// Only a manifest is this long: its head says so.
			if strings.HasPrefix(string(line), `{"t":"manifest"`) {
				return Manifest{}, "", true, &DescribeError{Message: fmt.Sprintf("what the function declares is larger than %s of JSON", formatBytes(maxManifestBytes))}
			}
			continue
		}
		if json.Unmarshal(line, &head) != nil {
			continue
		}
		switch head.T {
		case "fatal":
			if head.Error == "" {
				head.Error = "unknown error"
			}
			return Manifest{}, head.Error, false, nil
		case "manifest":
			if err := json.Unmarshal(line, &m); err != nil {
				return Manifest{}, "", true, fmt.Errorf("functionrun: a malformed manifest from the runner: %w", err)
			}
			if string(m.Agent) == "null" {
				m.Agent = nil
			}
			if m.Tools == nil {
				m.Tools = []ToolManifest{}
			}
			for i, t := range m.Tools {
				if t.Name == "" {
					return Manifest{}, "", true, errors.New("functionrun: a malformed manifest from the runner: a tool without a name")
				}
				if len(t.Parameters) == 0 || string(t.Parameters) == "null" {
					m.Tools[i].Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
				}
			}
			return m, "", true, nil
		}
		// Log frames (console.* at load) are dropped.
	}
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	max int
	mu  sync.Mutex
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// lastLines returns the last n non-empty lines of s.
func lastLines(s string, n int) []string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimRight(l, "\r"); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
