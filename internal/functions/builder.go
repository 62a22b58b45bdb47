package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/functionbuild"
	"github.com/switchboard-io/switchboard/internal/functiongit"
	"github.com/switchboard-io/switchboard/internal/functionrun"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// BuilderOptions configure the builder.
type BuilderOptions struct {
	// NPM is the npm command (default "npm" from PATH).
	NPM string
	// Registry is the npm registry dependencies are installed from ("": npm's configured one).
	Registry string
	// CacheDir is npm's cache, kept between builds (default: a folder under the user's cache).
	CacheDir string
	// InstallTimeout bounds installing a deployment's dependencies (default 3 minutes).
	InstallTimeout time.Duration
	// MaxModulesBytes bounds the installed node_modules (default 256 MiB).
	MaxModulesBytes int64
	// Lease is how long a build may hold its deployment before another builder takes it over
	// (default 10 minutes).
	Lease time.Duration
	// Poll is how often an idle builder looks for pending deployments (default 200 ms).
	Poll time.Duration
	// Env is the environment a function's bundle is loaded in to read what it declares (its
	// secrets: an agent template reads SENDER_ID at load); nil: the platform's variables only.
	Env func(ctx context.Context, project, function string) (map[string]string, error)
	// Node is the node command that reads what a bundle declares (its agent and tools) before it
	// goes live ("": node from PATH).
	Node string
	// GitBase is where linked repositories are cloned from: owner/repo under it (default
	// https://github.com).
	GitBase string
	// Activated is told about each deployment that went live (the controller's status, the
	// runtime's warm processes).
	Activated func(ctx context.Context, project, function string)
	Log       logr.Logger
}

// MaxBuildLogs bounds what a deployment keeps of its build's output.
const MaxBuildLogs = 64 << 10

// Builder builds pending deployments: it installs their dependencies with npm, bundles them
// with esbuild and makes the result the function's active deployment. Every worker runs one;
// they share the table (FOR UPDATE SKIP LOCKED), and a build whose worker died is taken over
// when its lease ends.
type Builder struct {
	pool *pgxpool.Pool
	opts BuilderOptions
	now  func() time.Time
}

// NewBuilder returns a builder.
func NewBuilder(pool *pgxpool.Pool, o BuilderOptions) *Builder {
	if o.NPM == "" {
		o.NPM = "npm"
	}
	if o.InstallTimeout <= 0 {
		o.InstallTimeout = 3 * time.Minute
	}
	if o.MaxModulesBytes <= 0 {
		o.MaxModulesBytes = 256 << 20
	}
	if o.Lease <= 0 {
		o.Lease = 10 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 200 * time.Millisecond
	}
	if o.CacheDir == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			o.CacheDir = filepath.Join(dir, "switchboard", "npm")
		}
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return &Builder{pool: pool, opts: o, now: time.Now}
}

// NeedLeaderElection: every worker builds.
func (b *Builder) NeedLeaderElection() bool { return false }

// Start builds until ctx ends.
func (b *Builder) Start(ctx context.Context) error {
	for {
		built, err := b.BuildOne(ctx)
		if err != nil && ctx.Err() == nil {
			b.opts.Log.Error(err, "function builds; trying again in 1 s")
		}
		wait := time.Duration(0)
		switch {
		case err != nil:
			wait = time.Second
		case !built:
			wait = b.opts.Poll
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// BuildOne builds the oldest pending deployment; false when there was none.
func (b *Builder) BuildOne(ctx context.Context) (bool, error) {
	now := b.now().UTC()
	row, err := db.Planned(b.pool).ClaimFunctionDeployment(ctx, db.ClaimFunctionDeploymentParams{Now: now, LeaseUntil: now.Add(b.opts.Lease)})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim a function deployment: %w", err)
	}
	log := b.opts.Log.WithValues("deployment", row.ID, "function", row.FunctionName, "project", row.Project)
	if row.Attempts > 3 {
		return true, b.fail(ctx, row, "the build was interrupted three times (its worker stopped); deploy again", "")
	}
	if row.Source == SourceGit && row.SourceBytes == 0 {
		if row, err = b.fetchLinked(ctx, row); err != nil {
			var be *buildError
			if errors.As(err, &be) {
				return true, b.fail(ctx, row, be.summary, be.logs)
			}
			return true, err
		}
	}
	res, err := b.build(ctx, row)
	if err != nil {
		var be *buildError
		if errors.As(err, &be) {
			log.V(1).Info("function build failed")
			return true, b.fail(ctx, row, be.summary, be.logs)
		}
		return true, err // the lease ends and the build is tried again
	}
	if err := b.setStep(ctx, row.ID, "publishing"); err != nil {
		return true, err
	}
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if err := q.LockFunction(ctx, row.FunctionUid); err != nil {
			return err
		}
		if _, err := q.SupersedeFunctionDeployments(ctx, db.SupersedeFunctionDeploymentsParams{FunctionUid: row.FunctionUid, ID: row.ID}); err != nil {
			return err
		}
		n, err := q.ActivateFunctionDeployment(ctx, db.ActivateFunctionDeploymentParams{ID: row.ID, Bundle: res.bundle.Code,
			BundleSha256: &res.bundle.SHA256, BundleBytes: ptr(int32(len(res.bundle.Code))), BuildLogs: &res.logs,
			PackageLock: res.lock, Manifest: res.manifest, Now: b.now().UTC()})
		if err == nil && n == 0 {
			err = errors.New("another builder finished it")
		}
		return err
	})
	if err != nil {
		return true, fmt.Errorf("activate deployment %s: %w", row.ID, err)
	}
	log.V(1).Info("function deployed", "version", row.Version, "bytes", len(res.bundle.Code))
	if row.Source == SourceGit {
		b.linkRun(ctx, row, "deployed", nil)
	}
	if b.opts.Activated != nil {
		b.opts.Activated(ctx, row.Project, row.FunctionName)
	}
	return true, nil
}

// buildError is a build that failed because of the function: it ends its deployment.
type buildError struct {
	summary string
	logs    string
}

func (e *buildError) Error() string { return e.summary }

type buildResult struct {
	bundle   functionbuild.Bundle
	logs     string
	lock     *string
	manifest []byte
}

func (b *Builder) build(ctx context.Context, row db.FunctionDeployment) (buildResult, error) {
	var logs strings.Builder
	d, err := draftOf(row.Files, row.Entrypoint, row.Dependencies)
	if err != nil {
		return buildResult{}, &buildError{summary: "the deployment's source cannot be read: " + err.Error()}
	}
	if errs := d.Validate(""); len(errs) > 0 {
		return buildResult{}, &buildError{summary: fmt.Sprintf("the source is not a function's: %s %s", errs[0].Path, errs[0].Message)}
	}
	var res buildResult
	nodeModules := ""
	if len(d.Dependencies) > 0 {
		dir, err := os.MkdirTemp("", "switchboard-build-")
		if err != nil {
			return buildResult{}, err
		}
		defer os.RemoveAll(dir)
		lock, err := b.install(ctx, dir, d.Dependencies, row.PackageLock, &logs)
		if err != nil {
			return buildResult{}, err
		}
		res.lock = lock
		nodeModules = filepath.Join(dir, "node_modules")
	}
	bundle, err := functionbuild.Build(functionbuild.Source{Files: d.Files, Entrypoint: d.Entrypoint, NodeModules: nodeModules})
	if err != nil {
		var ce *functionbuild.Error
		switch {
		case errors.As(err, &ce):
			logs.WriteString("esbuild:\n" + strings.Join(ce.Messages, "\n") + "\n")
			return buildResult{}, &buildError{summary: "the code does not compile: " + ce.Messages[0], logs: capLogs(logs.String())}
		case errors.Is(err, functionbuild.ErrInvalid):
			return buildResult{}, &buildError{summary: err.Error(), logs: capLogs(logs.String())}
		}
		return buildResult{}, err
	}
	fmt.Fprintf(&logs, "esbuild: bundled %d files into %d bytes (sha256 %s)\n", len(d.Files), len(bundle.Code), bundle.SHA256)
	// The bundle is loaded once before it goes live: what it declares (an agent, tools) is read,
	// and a bundle that cannot load fails here rather than at its first run.
	env := map[string]string{}
	if b.opts.Env != nil {
		if env, err = b.opts.Env(ctx, row.Project, row.FunctionName); err != nil {
			return buildResult{}, err
		}
	}
	env[EnvFunctionID], env[EnvDeploymentID], env[EnvProject] = row.FunctionName, row.ID, row.Project
	manifest, err := functionrun.Describe(ctx, b.opts.Node, bundle.Code, env, describeTimeout)
	if err != nil {
		var fe *functionrun.DescribeError
		if errors.As(err, &fe) {
			logs.WriteString("load:\n" + fe.Message + "\n")
			return buildResult{}, &buildError{summary: "the bundle does not load: " + firstLine(fe.Message), logs: capLogs(logs.String())}
		}
		if ctx.Err() != nil {
			return buildResult{}, err
		}
		// Node missing or too old on this worker: the build cannot finish here, and saying so
		// beats leaving it pending.
		return buildResult{}, &buildError{summary: "this installation cannot load functions: " + err.Error(), logs: capLogs(logs.String())}
	}
	if res.manifest, err = json.Marshal(manifest); err != nil {
		return buildResult{}, err
	}
	fmt.Fprintf(&logs, "load: a default handler: %t; an agent: %t; %d tools\n", manifest.HasHandler, len(manifest.Agent) > 0, len(manifest.Tools))
	if err := b.setStep(ctx, row.ID, "uploading"); err != nil {
		return buildResult{}, err
	}
	res.bundle, res.logs = bundle, capLogs(logs.String())
	return res, nil
}

// install installs deps into dir with npm: from the lockfile an earlier deployment recorded (npm
// ci: the same versions again), else resolved now, and returns the lockfile to record.
func (b *Builder) install(ctx context.Context, dir string, deps map[string]string, lock *string, logs *strings.Builder) (*string, error) {
	pkg, _ := json.Marshal(map[string]any{"name": "function", "version": "1.0.0", "private": true, "dependencies": deps})
	if err := os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o600); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, b.opts.InstallTimeout)
	defer cancel()
	if lock == nil {
		if err := b.npm(ctx, dir, logs, "install", "--package-lock-only"); err != nil {
			return nil, err
		}
	} else if err := os.WriteFile(filepath.Join(dir, "package-lock.json"), []byte(*lock), 0o600); err != nil {
		return nil, err
	}
	if err := b.npm(ctx, dir, logs, "ci"); err != nil {
		return nil, err
	}
	size, err := dirSize(filepath.Join(dir, "node_modules"), b.opts.MaxModulesBytes)
	if err != nil {
		return nil, err
	}
	if size > b.opts.MaxModulesBytes {
		return nil, &buildError{summary: fmt.Sprintf("the dependencies install more than %d MiB", b.opts.MaxModulesBytes>>20), logs: capLogs(logs.String())}
	}
	fmt.Fprintf(logs, "npm: node_modules holds %d bytes\n", size)
	written, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return nil, err
	}
	s := string(written)
	return &s, nil
}

// npm runs one npm command: scripts never run, nothing is audited, output goes to the logs.
func (b *Builder) npm(ctx context.Context, dir string, logs *strings.Builder, args ...string) error {
	args = append(args, "--ignore-scripts", "--no-audit", "--no-fund", "--omit=dev", "--loglevel=error", "--logs-max=0")
	if b.opts.CacheDir != "" {
		args = append(args, "--cache", b.opts.CacheDir)
	}
	cmd := exec.CommandContext(ctx, b.opts.NPM, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if b.opts.Registry != "" {
		cmd.Env = append(cmd.Env, "npm_config_registry="+b.opts.Registry)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	fmt.Fprintf(logs, "$ npm %s\n%s", args[0], out.String())
	if ctx.Err() == context.DeadlineExceeded {
		return &buildError{summary: fmt.Sprintf("installing the dependencies took longer than %s", b.opts.InstallTimeout), logs: capLogs(logs.String())}
	}
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return &buildError{summary: "npm could not install the dependencies: " + npmReason(out.String()), logs: capLogs(logs.String())}
		}
		return fmt.Errorf("run npm: %w", err)
	}
	return nil
}

func (b *Builder) setStep(ctx context.Context, id, status string) error {
	return db.Planned(b.pool).SetFunctionDeploymentStep(ctx, db.SetFunctionDeploymentStepParams{ID: id, Status: status, LeaseUntil: b.now().UTC().Add(b.opts.Lease)})
}

func (b *Builder) fail(ctx context.Context, row db.FunctionDeployment, summary, logs string) error {
	err := db.Planned(b.pool).FailFunctionDeployment(ctx, db.FailFunctionDeploymentParams{ID: row.ID, ErrorMessage: &summary, BuildLogs: &logs})
	if err != nil {
		return fmt.Errorf("fail deployment %s: %w", row.ID, err)
	}
	if row.Source == SourceGit {
		b.linkRun(ctx, row, "failed", &summary)
	}
	if b.opts.Activated != nil {
		b.opts.Activated(ctx, row.Project, row.FunctionName)
	}
	return nil
}

// dirSize adds up the files under dir, stopping once past limit.
func dirSize(dir string, limit int64) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
			if n > limit {
				return fs.SkipAll
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	return n, err
}

func capLogs(s string) string {
	if len(s) <= MaxBuildLogs {
		return s
	}
	return "[…]\n" + s[len(s)-MaxBuildLogs:]
}

// npmReason is the line of npm's output that says what went wrong: the registry's "is not in
// this registry", else its first error line that is not bookkeeping.
func npmReason(s string) string {
	var first string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "npm error"))
		if l == "" || strings.HasPrefix(l, "code ") || strings.HasPrefix(l, "A complete log") || strings.HasPrefix(l, "$ npm") || len(l) <= 4 {
			continue
		}
		if strings.Contains(l, "is not in this registry") {
			return strings.Join(strings.Fields(strings.Trim(l, "404 ")), " ")
		}
		if first == "" {
			first = l
		}
	}
	if first == "" {
		return "npm failed"
	}
	return first
}

func ptr[T any](v T) *T { return &v }

// describeTimeout bounds loading a bundle to read what it declares.
const describeTimeout = 20 * time.Second

// fetchLinked fetches the commit a Git deployment is of (its link's branch head when it names
// none) and records it as the deployment's source.
func (b *Builder) fetchLinked(ctx context.Context, row db.FunctionDeployment) (db.FunctionDeployment, error) {
	link, err := db.Planned(b.pool).FunctionGitLinkOf(ctx, row.FunctionUid)
	if errors.Is(err, pgx.ErrNoRows) {
		return row, &buildError{summary: "the function is no longer linked to a repository"}
	}
	if err != nil {
		return row, err
	}
	repo := functiongit.Repo{URL: functiongit.URLFor(b.opts.GitBase, link.Owner, link.Repo), Branch: link.Branch}
	if link.RootDir != nil {
		repo.RootDir = *link.RootDir
	}
	commit := ""
	if row.GitCommit != nil {
		commit = *row.GitCommit
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	snap, err := functiongit.Fetch(ctx, repo, commit)
	if err != nil {
		var fe *functiongit.FetchError
		if errors.As(err, &fe) && !fe.Temporary {
			return row, &buildError{summary: "the repository could not be fetched: " + fe.Reason}
		}
		return row, err
	}
	files, _ := json.Marshal(snap.Files)
	deps, _ := json.Marshal(snap.Dependencies)
	d := Draft{Files: snap.Files}
	err = db.Planned(b.pool).SetFunctionDeploymentSource(ctx, db.SetFunctionDeploymentSourceParams{ID: row.ID, Files: files,
		Entrypoint: snap.Entrypoint, Dependencies: deps, SourceBytes: int32(d.Bytes()), GitCommit: &snap.Commit, GitMessage: &snap.Message})
	if err != nil {
		return row, fmt.Errorf("record the source of deployment %s: %w", row.ID, err)
	}
	row.Files, row.Entrypoint, row.Dependencies, row.SourceBytes = files, snap.Entrypoint, deps, int32(d.Bytes())
	row.GitCommit, row.GitMessage = &snap.Commit, &snap.Message
	return row, nil
}

// linkRun records how a Git deployment ended on its link (lastStatus, lastError).
func (b *Builder) linkRun(ctx context.Context, row db.FunctionDeployment, status string, reason *string) {
	err := db.Planned(b.pool).SetFunctionGitLinkRun(ctx, db.SetFunctionGitLinkRunParams{FunctionUid: row.FunctionUid, LastStatus: &status,
		LastError: reason, LastCommitSha: row.GitCommit, LastCommitMsg: row.GitMessage, Now: b.now().UTC()})
	if err != nil {
		b.opts.Log.Error(err, "record a linked deploy", "deployment", row.ID)
	}
}
