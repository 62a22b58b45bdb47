package app

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/switchboard-io/switchboard/internal/functionrun"
	"github.com/switchboard-io/switchboard/internal/functions"
	"github.com/switchboard-io/switchboard/internal/periodic"
)

// FunctionOptions say how functions are built and run (docs/functions.md).
type FunctionOptions struct {
	// Runtime runs functions: "local" (warm node processes of this machine; the default).
	Runtime string
	// Node is the node command of the local runtime ("": node from PATH).
	Node string
	// Dir is where the local runtime unpacks deployments ("": a temporary folder).
	Dir string
	// NPM is the npm command builds install dependencies with ("": npm from PATH); Registry the
	// npm registry ("": npm's configured one); NPMCache npm's cache ("": the user's cache).
	NPM, Registry, NPMCache string
	// GitBase is where linked repositories are cloned from: owner/repo under it ("":
	// https://github.com; GitHub Enterprise or a mirror otherwise).
	GitBase string
	// RetrySchedule replaces functions.RetrySchedule (tests).
	RetrySchedule []time.Duration
	// BuildPoll and RunPoll replace the builder's and runner's idle polls (tests).
	BuildPoll, RunPoll time.Duration
}

// RuntimeLocal is the runtime of warm node processes on the worker's machine.
const RuntimeLocal = "local"

// functionParts are what the API serves of functions.
type functionParts struct {
	service *functions.Service
	http    http.Handler
	pushes  http.Handler
}

// functionInvoker returns the invoker the workers' runs and the API's public URLs share, on the
// configured runtime.
func functionInvoker(mgr ctrl.Manager, cfg Config) (*functions.Invoker, error) {
	o := cfg.Functions
	var rt functionrun.Runtime
	switch o.Runtime {
	case "", RuntimeLocal:
		local, err := functionrun.NewLocal(functionrun.LocalOptions{Node: o.Node, Dir: o.Dir, Log: cfg.Log.WithName("functions")})
		if err != nil {
			return nil, fmt.Errorf("start the local function runtime: %w", err)
		}
		// The node processes end with the manager.
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { <-ctx.Done(); return local.Close() })); err != nil {
			return nil, err
		}
		rt = local
	default:
		return nil, fmt.Errorf("function runtime %q: the runtimes are %s", o.Runtime, RuntimeLocal)
	}
	return functions.NewInvoker(cfg.Pool, mgr.GetClient(), mgr.GetAPIReader(), rt, cfg.functionsBaseURL()), nil
}

// functionsBaseURL is the API's address as functions reach it: the public URL, else the API's
// own listener.
func (c Config) functionsBaseURL() string {
	if c.PublicURL != "" {
		return c.PublicURL
	}
	if c.Listener != nil {
		return "http://" + c.Listener.Addr().String()
	}
	return ""
}

// addFunctionWorkers adds what a worker does for functions: builds, runs, cron ticks and the
// logs' retention.
func addFunctionWorkers(mgr ctrl.Manager, cfg Config, svc *functions.Service, invoker *functions.Invoker, log logr.Logger) error {
	o := cfg.Functions
	builder := functions.NewBuilder(cfg.Pool, functions.BuilderOptions{NPM: o.NPM, Registry: o.Registry, CacheDir: o.NPMCache,
		GitBase: o.GitBase, Node: o.Node, Env: invoker.Environment, Poll: o.BuildPoll, Log: log.WithName("builds")})
	runner := functions.NewRunner(cfg.Pool, mgr.GetClient(), invoker, functions.RunnerOptions{Schedule: o.RetrySchedule, Poll: o.RunPoll,
		Log: log.WithName("runs")})
	scheduler := functions.NewScheduler(cfg.Pool, log.WithName("cron"))
	trim := manager.RunnableFunc(func(ctx context.Context) error {
		periodic.Run(ctx, time.Hour, time.Hour, func(ctx context.Context) {
			if _, err := svc.TrimLogs(ctx); err != nil && ctx.Err() == nil {
				log.Error(err, "trim function logs")
			}
		})
		return nil
	})
	for _, r := range []manager.Runnable{builder, runner, scheduler, trim} {
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("add function %T: %w", r, err)
		}
	}
	return nil
}
