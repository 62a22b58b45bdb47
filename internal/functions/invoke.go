package functions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/functionrun"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// ErrNotDeployed is an invocation of a function no deployment serves.
var ErrNotDeployed = errors.New("the function has no active deployment")

// Invoker runs a function's active deployment through a runtime, with the function's
// environment, and keeps what the run printed in its logs.
type Invoker struct {
	pool    *pgxpool.Pool
	reader  client.Reader // the informer cache: Functions and their Secrets
	live    client.Reader
	runtime functionrun.Runtime
	// baseURL is the API's address as a function reaches it (ZAVUDEV_BASE_URL).
	baseURL string
	now     func() time.Time

	mu sync.Mutex
	// warm is, per function uid, the runtime deployment that serves it: its deployment and
	// environment. A new one retires the old one's process.
	warm map[string]*functionrun.Deployment
}

// NewInvoker returns an invoker; baseURL is the API's address as functions reach it.
func NewInvoker(pool *pgxpool.Pool, reader, live client.Reader, rt functionrun.Runtime, baseURL string) *Invoker {
	return &Invoker{pool: pool, reader: reader, live: live, runtime: rt, baseURL: baseURL, now: time.Now,
		warm: map[string]*functionrun.Deployment{}}
}

// Outcome is a finished invocation.
type Outcome struct {
	functionrun.Result
	Deployment string
	// Invocation is the run's id (its log lines carry it).
	Invocation string
}

// Call runs f at once on an event of typ carrying data, as an HTTP request or an agent's tool
// call does: not queued, not tried again.
func (v *Invoker) Call(ctx context.Context, f *v1alpha1.Function, typ string, data any) (Outcome, error) {
	id, err := randid.Prefixed("fnr_", 20)
	if err != nil {
		return Outcome{}, err
	}
	eventID, err := randid.Prefixed("evt_", 24)
	if err != nil {
		return Outcome{}, err
	}
	event, err := json.Marshal(Event{ID: eventID, Type: typ, Timestamp: v.now().UTC(), Mode: string(modeOf(f)), Data: data})
	if err != nil {
		return Outcome{}, fmt.Errorf("encode the %s event of %s: %w", typ, f.Name, err)
	}
	return v.Invoke(ctx, f, id, event)
}

// Invoke runs the function's active deployment on event, as invocation id, and records its logs.
func (v *Invoker) Invoke(ctx context.Context, f *v1alpha1.Function, id string, event json.RawMessage) (Outcome, error) {
	d, err := v.deployment(ctx, f)
	if err != nil {
		return Outcome{}, err
	}
	depID := d.Env[EnvDeploymentID]
	start := v.now().UTC()
	res, err := v.runtime.Invoke(ctx, d, functionrun.Invocation{ID: id, Event: event})
	if err != nil {
		return Outcome{}, fmt.Errorf("invoke function %s: %w", f.Name, err)
	}
	lines := make([]functionrun.LogLine, 0, len(res.Logs)+3)
	lines = append(lines, functionrun.LogLine{Time: start, Stream: "platform", Message: fmt.Sprintf("START %s (deployment %s)", id, depID)})
	lines = append(lines, res.Logs...)
	if res.Reason != functionrun.ReasonNone {
		lines = append(lines, functionrun.LogLine{Time: v.now().UTC(), Stream: "platform", Message: fmt.Sprintf("ERROR %s (%s): %s", id, res.Reason, res.Error)})
	}
	end := fmt.Sprintf("END %s %d ms", id, res.Duration.Milliseconds())
	if res.Cold {
		end += " (cold start)"
	}
	lines = append(lines, functionrun.LogLine{Time: v.now().UTC(), Stream: "platform", Message: end})
	if err := v.record(ctx, f, depID, id, lines); err != nil {
		return Outcome{}, err
	}
	return Outcome{Result: res, Deployment: depID, Invocation: id}, nil
}

// record keeps an invocation's lines.
func (v *Invoker) record(ctx context.Context, f *v1alpha1.Function, deployment, invocation string, lines []functionrun.LogLine) error {
	p := db.InsertFunctionLogsParams{Project: f.Namespace, FunctionUid: string(f.UID), DeploymentID: deployment}
	for _, l := range lines {
		p.InvocationIds = append(p.InvocationIds, invocation)
		p.Ats = append(p.Ats, l.Time.UTC())
		p.Streams = append(p.Streams, l.Stream)
		p.Messages = append(p.Messages, l.Message)
	}
	if err := db.Planned(v.pool).InsertFunctionLogs(context.WithoutCancel(ctx), p); err != nil {
		return fmt.Errorf("record the logs of function %s: %w", f.Name, err)
	}
	return nil
}

// deployment is what the runtime runs for f now: its active bundle and its environment. A
// function whose deployment or secrets changed gets a new one, and the old process goes.
func (v *Invoker) deployment(ctx context.Context, f *v1alpha1.Function) (*functionrun.Deployment, error) {
	active, err := db.Planned(v.pool).ActiveFunctionDeployment(ctx, string(f.UID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotDeployed
	}
	if err != nil {
		return nil, fmt.Errorf("read the active deployment of %s: %w", f.Name, err)
	}
	env, err := v.env(ctx, f)
	if err != nil {
		return nil, err
	}
	env[EnvDeploymentID] = active.ID
	id := runtimeID(active.ID, env, f)

	v.mu.Lock()
	cur := v.warm[string(f.UID)]
	v.mu.Unlock()
	if cur != nil && cur.ID == id {
		return cur, nil
	}
	bundle, err := db.Planned(v.pool).FunctionBundle(ctx, active.ID)
	if err != nil {
		return nil, fmt.Errorf("read the bundle of deployment %s: %w", active.ID, err)
	}
	d := &functionrun.Deployment{ID: id, FunctionID: f.Name, Bundle: bundle.Bundle, Env: env,
		MemoryMB: int(f.Spec.MemoryMB), Timeout: time.Duration(f.Spec.TimeoutSeconds) * time.Second,
		Namespace: f.Namespace, OwnerUID: f.UID, OwnerName: f.Name, Architecture: f.Spec.Architecture}
	if active.BundleSha256 != nil {
		d.BundleSHA256 = *active.BundleSha256
	}
	if d.MemoryMB == 0 {
		d.MemoryMB = 256
	}
	if d.Timeout == 0 {
		d.Timeout = 10 * time.Second
	}
	v.mu.Lock()
	old := v.warm[string(f.UID)]
	if old != nil && old.ID == id {
		d = old
	} else {
		v.warm[string(f.UID)] = d
	}
	v.mu.Unlock()
	if old != nil && old.ID != id {
		v.runtime.Retire(old.ID)
	}
	return d, nil
}

// Retire stops what serves the function (deleted, paused).
func (v *Invoker) Retire(uid string) {
	v.mu.Lock()
	old := v.warm[uid]
	delete(v.warm, uid)
	v.mu.Unlock()
	if old != nil {
		v.runtime.Retire(old.ID)
	}
}

// Environment is the environment of project's function name, as its runs get it.
func (v *Invoker) Environment(ctx context.Context, project, name string) (map[string]string, error) {
	var f v1alpha1.Function
	if err := v.reader.Get(ctx, client.ObjectKey{Namespace: project, Name: name}, &f); err != nil {
		return nil, fmt.Errorf("read function %s: %w", name, err)
	}
	return v.env(ctx, &f)
}

// env is the function's environment: its secrets, its key, and where the API is.
func (v *Invoker) env(ctx context.Context, f *v1alpha1.Function) (map[string]string, error) {
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: f.Namespace, Name: SecretName(f)}
	err := v.reader.Get(ctx, key, &secret)
	if apierrors.IsNotFound(err) && v.live != nil {
		err = v.live.Get(ctx, key, &secret)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("read the secrets of function %s: %w", f.Name, err)
	}
	env := make(map[string]string, len(secret.Data)+6)
	for k, val := range secret.Data {
		env[k] = string(val)
	}
	env[EnvSDKAPIKey] = env[EnvAPIKey]
	env[EnvBaseURL] = v.baseURL
	env[EnvFunctionID] = f.Name
	env[EnvProject] = f.Namespace
	env[EnvMode] = string(f.Spec.Mode)
	if env[EnvMode] == "" {
		env[EnvMode] = string(v1alpha1.FunctionLive)
	}
	return env, nil
}

// runtimeID names a runtime deployment: the deployment, its environment and its limits.
func runtimeID(deployment string, env map[string]string, f *v1alpha1.Function) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(h, "%s=%s\x00", k, env[k])
	}
	fmt.Fprintf(h, "%d/%d", f.Spec.MemoryMB, f.Spec.TimeoutSeconds)
	return deployment + "-" + hex.EncodeToString(h.Sum(nil))[:12]
}
