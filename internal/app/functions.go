package app

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/switchboard-io/switchboard/internal/functionrun"
	"github.com/switchboard-io/switchboard/internal/functions"
	"github.com/switchboard-io/switchboard/internal/periodic"
	"github.com/switchboard-io/switchboard/internal/version"
)

// FunctionOptions say how functions are built and run (docs/functions.md).
type FunctionOptions struct {
	// Runtime runs functions: "local" (warm node processes of this machine; the default) or
	// "kubernetes" (pods of the runner image per function, in the project's namespace).
	Runtime string
	// Image is the kubernetes runtime's runner image (Dockerfile.function-runner; "":
	// functionrun.DefaultRunnerImage).
	Image string
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

// The function runtimes.
const (
	// RuntimeLocal is the runtime of warm node processes on the worker's machine.
	RuntimeLocal = "local"
	// RuntimeKubernetes runs every function in pods of its own (functionrun.Kubernetes).
	RuntimeKubernetes = "kubernetes"
)

// RunnerImage is the runner image of this build's version: tagged with the release (without its
// "v"), functionrun.DefaultRunnerImage for a build that is no release.
func RunnerImage() string {
	v := version.String()
	if !release.MatchString(v) {
		return functionrun.DefaultRunnerImage
	}
	return "ghcr.io/switchboard-io/function-runner:" + strings.TrimPrefix(v, "v")
}

var release = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+(-(alpha|beta|rc)\.?[0-9]*)?$`)

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
			// A machine without Node.js runs everything else: its functions' runs fail with the
			// reason (and their builds, which load the bundle with node, too).
			cfg.Log.Error(err, "functions cannot run here: install Node.js 20 or later, or set --node")
			rt = unavailable{err: err}
			break
		}
		// The node processes end with the manager.
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { <-ctx.Done(); return local.Close() })); err != nil {
			return nil, err
		}
		rt = local
	case RuntimeKubernetes:
		if cfg.InstallationNamespace == "" {
			return nil, fmt.Errorf("the kubernetes function runtime needs the installation namespace")
		}
		base := cfg.functionsBaseURL()
		image := o.Image
		if image == "" {
			image = RunnerImage()
		}
		rt = functionrun.NewKubernetes(functionrun.KubernetesOptions{
			Client: mgr.GetClient(),
			// Reads go to the API server: the cache would watch every Deployment of the cluster,
			// and it holds only labelled Secrets.
			Reader: mgr.GetAPIReader(),
			Image:  image,
			BundleURL: func(sha256 string) string {
				return base + "/v1/functions/bundles/" + sha256
			},
			InstallationNamespace: cfg.InstallationNamespace,
			Log:                   cfg.Log.WithName("functions"),
		})
	default:
		return nil, fmt.Errorf("function runtime %q: the runtimes are %s and %s", o.Runtime, RuntimeLocal, RuntimeKubernetes)
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

// unavailable is the runtime of a process that cannot run functions: every run fails with why.
type unavailable struct{ err error }

func (u unavailable) Invoke(context.Context, *functionrun.Deployment, functionrun.Invocation) (functionrun.Result, error) {
	return functionrun.Result{}, fmt.Errorf("functions cannot run here: %w", u.err)
}
func (unavailable) Retire(string) {}
func (unavailable) Close() error  { return nil }
