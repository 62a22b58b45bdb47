// Package functionrun runs functions' bundles (internal/functionbuild) in warm Node.js
// processes: one process per deployment, reused by its invocations, talking NDJSON with the
// supervisor over two extra pipes (runner.js). The runtime module the bundles import,
// @zavudev/functions (and its alias @switchboard/functions), is functions.js.
//
// Runtime is the interface the platform uses; Local is the implementation for one machine
// (`make run`), with Node's permission model as the sandbox: a function reads its own folder
// only, writes no file and starts no process. Kubernetes runs each function in pods of its own
// (runner.js in serve mode behind a Service), the pod being the sandbox.
//
// A bundle may declare an agent and its tools (defineAgent, defineTool) besides or instead of
// a default handler. Describe reads what it declares once, at deploy; an invocation whose event
// is {"type":"tool","data":{"tool":"<name>","arguments":{...}}} then runs that tool.
package functionrun

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Deployment is one built version of a function, as a runtime runs it.
type Deployment struct {
	ID         string // unique deployment id; names the warm process
	FunctionID string
	Bundle     []byte // bundle.js (CommonJS)
	// Env is the function's environment (its secrets and platform variables). Nothing of the
	// host's environment leaks in; TZ=UTC and NODE_ENV=production are set, and
	// SWITCHBOARD_FUNCTION_ID and SWITCHBOARD_DEPLOYMENT_ID when Env lacks them. NODE_OPTIONS
	// is dropped: it could lift the sandbox.
	Env      map[string]string
	MemoryMB int           // heap limit (--max-old-space-size); 0 means DefaultMemoryMB
	Timeout  time.Duration // per invocation; 0 means DefaultTimeout

	// What the kubernetes runtime needs besides (Local ignores them):
	// Namespace is the project's namespace, where the function's objects live.
	Namespace string
	// OwnerUID and OwnerName are the Function resource (messaging.switchboard.io/v1alpha1,
	// kind Function) that owns the objects: deleting it deletes them. OwnerName is the
	// function's name, which names them (fn-<name>).
	OwnerUID  types.UID
	OwnerName string
	// BundleSHA256 is the bundle's sha256 (hex): a pod fetches the bundle by it and checks it.
	BundleSHA256 string
	// Architecture is the CPU architecture the pods are scheduled on (kubernetes.io/arch):
	// "", amd64 or arm64; "" is any.
	Architecture string
}

// Defaults of a Deployment's zero fields.
const (
	DefaultMemoryMB = 128
	DefaultTimeout  = 3 * time.Second
)

// Invocation is one run of the handler, or of a tool.
type Invocation struct {
	ID string // invocation id; every log line carries it
	// Event is the `event` argument (a JSON object); nil means {}. A tool event,
	// {"type":"tool","data":{"tool":"<name>","arguments":{...}}}, runs the tool of that name
	// with the arguments ({} when absent) instead of the default handler; an unknown tool, or
	// another event on a bundle without a default handler, fails the run with ReasonError.
	Event json.RawMessage
}

// LogLine is one line a run printed.
type LogLine struct {
	Time time.Time
	// Stream is "log", "info", "warn", "error", "debug" (console.* and ctx.log = "log"),
	// "stdout", "stderr" (raw writes), or "platform" (the runtime's own lines: timeouts,
	// crashes, truncation).
	Stream  string
	Message string
}

// Streams of LogLine.
const (
	StreamLog      = "log"
	StreamStdout   = "stdout"
	StreamStderr   = "stderr"
	StreamPlatform = "platform"
)

// Reason says why a run failed.
type Reason string

// Reasons of a failed run.
const (
	ReasonNone    Reason = ""
	ReasonError   Reason = "error"   // the handler threw or rejected
	ReasonTimeout Reason = "timeout" // it ran past Timeout
	ReasonMemory  Reason = "memory"  // the process ran out of heap
	ReasonCrash   Reason = "crash"   // the process exited or could not load the bundle
)

// Result is the outcome of one invocation.
type Result struct {
	// Value is the JSON of the handler's (or tool's) return value ("null" for undefined); nil
	// on failure.
	Value  json.RawMessage
	Reason Reason
	// Error is a human-readable reason, "" on success: the thrown error's message and stack,
	// "timed out after 3s", "out of memory (128 MB)", "the runtime exited with code 3".
	Error string
	Logs  []LogLine
	// Duration is the run's time from the request to its answer: it leaves out starting the
	// process and waiting for a free slot.
	Duration time.Duration
	Cold     bool // this invocation started the process
}

// Runtime runs deployments.
type Runtime interface {
	// Invoke runs inv on d's process, starting it if needed. It returns an error only when the
	// platform itself failed (node missing, a pipe broke before the request was written) or
	// ctx ended; a function's own failure is a Result with a Reason.
	Invoke(ctx context.Context, d *Deployment, inv Invocation) (Result, error)
	// Retire stops the warm process of a deployment that no longer serves (idempotent).
	Retire(deploymentID string)
	// Close stops every process.
	Close() error
}

// ErrClosed is Invoke's error after Close.
var ErrClosed = errors.New("functionrun: the runtime is closed")
