// Package cluster runs the built switchboard binary as production does, for the benchmark and
// chaos tests: a local control plane (kube-apiserver and etcd) with the CRDs, one Postgres
// database, optionally Redis, and any number of processes of each role, which a test can kill
// with SIGKILL and start again. Everything listens on loopback.
package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/controlplane"
	"github.com/switchboard-io/switchboard/internal/localpg"
	"github.com/switchboard-io/switchboard/internal/localredis"
	"github.com/switchboard-io/switchboard/internal/tendlc"
)

// InstallationNamespace is the namespace of the installation (Providers serving every project,
// the manager's leader-election Lease).
const InstallationNamespace = "switchboard-system"

// Options shapes a cluster.
type Options struct {
	// OwnPostgres runs a throwaway Postgres server of the test's own, which RestartPostgres can
	// restart; otherwise a fresh database on the machine's server (TEST_DATABASE_URL or
	// 127.0.0.1:5432).
	OwnPostgres bool
	// Redis gives the api processes a shared Redis (TEST_REDIS_URL or 127.0.0.1:6379).
	Redis bool
	// TrustPEM is a CA certificate (PEM) the processes trust, e.g. a loopback HTTPS receiver's.
	TrustPEM []byte
}

// Cluster is a control plane, a database and the processes started on them.
type Cluster struct {
	t           testing.TB
	Bin         string
	Kubeconfig  string
	DatabaseURL string
	RedisURL    string
	// K8s writes resources as kubectl would.
	K8s client.Client
	// Pool is a connection to the database, for the test's own checks.
	Pool *pgxpool.Pool

	dir    string
	pg     *localpg.Server
	mu     sync.Mutex
	procs  []*Process
	env    []string
	logDir string
}

var built struct {
	once sync.Once
	path string
	err  error
}

// Binary builds cmd/switchboard once per test binary and returns its path; SWITCHBOARD_BINARY
// names a binary built beforehand instead (a benchmark's "before" of a before/after pair).
func Binary(t testing.TB) string {
	t.Helper()
	if path := os.Getenv("SWITCHBOARD_BINARY"); path != "" {
		return path
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "switchboard-cluster-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "switchboard")
		cmd := exec.Command("go", "build", "-o", built.path, "github.com/switchboard-io/switchboard/cmd/switchboard")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// RemoveBinary removes the binary Binary built; for TestMain, after the tests.
func RemoveBinary() {
	if built.path != "" {
		_ = os.RemoveAll(filepath.Dir(built.path))
	}
}

// Start starts a control plane and a database, migrated, for the test; both go when it ends.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set; run the tests through `make test`")
	}
	ctrllog.SetLogger(logr.Discard()) // the control plane's own start-up chatter
	c := &Cluster{t: t, Bin: Binary(t), dir: t.TempDir()}
	c.logDir = filepath.Join(c.dir, "logs")
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	cp, err := controlplane.Start(assets)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	c.Kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := cp.WriteKubeconfig(c.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	if c.K8s, err = client.New(cp.Config, client.Options{Scheme: app.Scheme()}); err != nil {
		t.Fatal(err)
	}
	if err := c.K8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: InstallationNamespace}}); err != nil {
		t.Fatal(err)
	}

	if o.OwnPostgres {
		c.pg, err = localpg.StartThrowaway(ctx, logr.Discard())
	} else {
		c.pg, err = localpg.Start(ctx, logr.Discard(), os.Getenv("TEST_DATABASE_URL"))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.pg.Stop)
	name := fmt.Sprintf("switchboard_cluster_%d", time.Now().UnixNano())
	if c.DatabaseURL, err = localpg.EnsureDatabase(ctx, c.pg.AdminURL, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = localpg.DropDatabase(context.Background(), c.pg.AdminURL, name) })
	if o.Redis {
		r, err := localredis.Start(ctx, localredis.URLFromEnv())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Stop)
		c.RedisURL = r.URL
	}
	if len(o.TrustPEM) > 0 {
		ca := filepath.Join(c.dir, "trusted-ca.pem")
		if err := os.WriteFile(ca, o.TrustPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		c.env = append(c.env, "SSL_CERT_FILE="+ca)
	}
	if out, err := exec.Command(c.Bin, "migrate", "--database-url", c.DatabaseURL).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if c.Pool, err = pgxpool.New(ctx, c.DatabaseURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Pool.Close)
	// Stop every process before the database and control plane go (cleanups run last first).
	t.Cleanup(c.stopAll)
	return c
}

// RestartPostgres restarts the cluster's own Postgres server (Options.OwnPostgres): every
// connection is cut, committed data is kept.
func (c *Cluster) RestartPostgres() {
	c.t.Helper()
	if err := c.RestartPostgresErr(); err != nil {
		c.t.Fatal(err)
	}
}

// RestartPostgresErr is RestartPostgres for a goroutine other than the test's.
func (c *Cluster) RestartPostgresErr() error {
	if c.pg == nil {
		return fmt.Errorf("restart Postgres: the cluster has no Postgres of its own (Options.OwnPostgres)")
	}
	return c.pg.Restart(context.Background(), logr.Discard())
}

// Project creates a namespace with a Project and a default Sender on the sandbox transport
// whose webhook, when webhookURL is not empty, receives every event; it returns a test API key
// of the project (the bearer secret).
func (c *Cluster) Project(name, webhookURL string) string {
	c.t.Helper()
	ctx := context.Background()
	snd := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "main"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "Main", Default: true, Transport: v1alpha1.TransportSandbox, PhoneNumber: "+15005550006",
		SMS: &v1alpha1.Activation{Active: true}}}
	if webhookURL != "" {
		snd.Spec.Webhook = &v1alpha1.SenderWebhook{URL: webhookURL}
	}
	// The request-rate limit and the sending ceilings are measured elsewhere: an agreed SMS
	// ceiling far above any run's.
	limit, sms := int32(1_000_000), int64(1_000_000_000)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&v1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "project"},
			Spec: v1alpha1.ProjectSpec{DisplayName: name, RequestRateLimit: &limit, Verification: v1alpha1.VerificationBusinessApproved,
				DailyLimits: &v1alpha1.DailyLimits{SMS: &sms}}},
		snd,
	} {
		if err := c.K8s.Create(ctx, o); err != nil {
			c.t.Fatal(err)
		}
	}
	secret, _, err := apikey.NewService(c.Pool).Create(ctx, name, "cluster", apikey.Test, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	// Its test sends go to +1 numbers, which need an approved 10DLC campaign.
	if err := tendlc.SeedApproved(ctx, c.Pool, name, true); err != nil {
		c.t.Fatal(err)
	}
	c.waitFor("the sender of "+name+" is ready with its webhook secret", 2*time.Minute, func() bool {
		var s v1alpha1.Sender
		return c.K8s.Get(ctx, client.ObjectKeyFromObject(snd), &s) == nil && s.IsReady() &&
			(webhookURL == "" || s.Status.WebhookSecret != nil)
	})
	return secret
}

// Process is one switchboard process of the cluster.
type Process struct {
	Role string
	// URL is the REST API's address (api and all roles).
	URL     string
	c       *Cluster
	args    []string
	health  string
	pprof   string
	metrics string
	listen  string
	cmd     *exec.Cmd
	exited  chan struct{}
	log     string
	starts  int
}

// Run starts a process of role (manager, api, worker, all) with extra flags and waits until
// it is ready.
func (c *Cluster) Run(role string, extra ...string) *Process {
	c.t.Helper()
	p := &Process{Role: role, c: c, health: freeAddr(c.t), pprof: freeAddr(c.t), metrics: freeAddr(c.t)}
	args := []string{role, "--kubeconfig", c.Kubeconfig, "--database-url", c.DatabaseURL,
		"--health-probe-bind-address", p.health, "--metrics-bind-address", p.metrics, "--pprof-bind-address", p.pprof,
		"--installation-namespace", InstallationNamespace, "--log-level", "info",
		// Tests point their projects' Providers at loopback peers.
		"--allow-project-provider-endpoints"}
	if role == "api" || role == "all" {
		p.listen = freeAddr(c.t)
		p.URL = "http://" + p.listen
		args = append(args, "--listen", p.listen)
		if c.RedisURL != "" {
			args = append(args, "--redis-url", c.RedisURL)
		}
	}
	if role == "worker" || role == "all" {
		args = append(args, "--webhook-allow-cidr", "127.0.0.0/8")
	}
	if role == "manager" || role == "all" {
		args = append(args, "--leader-election-namespace", InstallationNamespace)
	}
	p.args = append(args, extra...)
	c.mu.Lock()
	p.log = filepath.Join(c.logDir, fmt.Sprintf("%s-%d.log", role, len(c.procs)))
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	p.Start()
	return p
}

// Start starts the process (again, after Kill) on the same addresses and waits until it is
// ready; it fails the test otherwise.
func (p *Process) Start() {
	p.c.t.Helper()
	if err := p.Restart(); err != nil {
		p.c.t.Fatal(err)
	}
}

// Restart is Start for a goroutine other than the test's: it returns what went wrong.
func (p *Process) Restart() error {
	log, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.starts++
	fmt.Fprintf(log, "---- start %d ----\n", p.starts)
	p.cmd = exec.Command(p.c.Bin, p.args...)
	p.cmd.Env = append(os.Environ(), p.c.env...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	// Its own process group, so a kill reaches nothing else; killed with the test binary.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return err
	}
	exited := make(chan struct{})
	p.exited = exited
	cmd := p.cmd
	go func() { _ = cmd.Wait(); log.Close(); close(exited) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-exited:
			return fmt.Errorf("%s exited before it was ready; its log:\n%s", p.Role, p.Tail(40))
		default:
		}
		if resp, err := http.Get("http://" + p.health + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s process not ready within 2m; its log:\n%s", p.Role, p.Tail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Kill sends SIGKILL (kill -9) and waits until the process is gone.
func (p *Process) Kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Stop asks the process to shut down (SIGTERM), as Kubernetes does, and waits.
func (p *Process) Stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.Kill()
	}
}

// Running tells whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// PeakRSS is the process's peak resident memory (VmHWM) in bytes, 0 when unknown.
func (p *Process) PeakRSS() int64 {
	if p.cmd == nil || p.cmd.Process == nil || runtime.GOOS != "linux" {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// CPUProfile records the process's CPU profile for d into path (pprof format).
func (p *Process) CPUProfile(d time.Duration, path string) error {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.pprof, int(d.Seconds())))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile of %s: %s", p.Role, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// PoolWait is how long, in all, the process's statements have waited for a connection of its
// Postgres pool because every one was taken (pgxpool_empty_acquire_wait_time_ns on its /metrics).
func (p *Process) PoolWait() (time.Duration, error) {
	resp, err := http.Get("http://" + p.metrics + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "pgxpool_empty_acquire_wait_time_ns "); ok {
			ns, err := strconv.ParseFloat(v, 64)
			return time.Duration(ns), err
		}
	}
	return 0, fmt.Errorf("%s's /metrics has no pgxpool_empty_acquire_wait_time_ns", p.Role)
}

// Tail returns the last n lines of the process's log (every start of it).
func (p *Process) Tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (c *Cluster) stopAll() {
	c.mu.Lock()
	procs := append([]*Process(nil), c.procs...)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop() }()
	}
	wg.Wait()
	if c.t.Failed() {
		for _, p := range procs {
			c.t.Logf("%s log (last lines):\n%s", p.Role, p.Tail(30))
		}
	}
}

func (c *Cluster) waitFor(what string, within time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freeAddr returns a loopback address with a port free now.
func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// FreeAddr is a loopback address nothing listens on now, for a process started later to bind.
// Its port lies below the kernel's ephemeral range (32768 and up by default): a port the
// kernel hands out (":0", or the local end of any outgoing connection, such as a manager's
// to the API server) can be taken between this check and the child's bind, and the child
// then fails with "address already in use". Ports are handed out once per test binary, and
// the start is random so test binaries running side by side rarely try the same ones.
func FreeAddr() (string, error) {
	portMu.Lock()
	defer portMu.Unlock()
	if nextPort == 0 {
		nextPort = lowPort + rand.IntN(highPort-lowPort)
	}
	for range highPort - lowPort {
		port := nextPort
		nextPort++
		if nextPort >= highPort {
			nextPort = lowPort
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		return addr, nil
	}
	return "", fmt.Errorf("no free port in %d-%d", lowPort, highPort)
}

// The range FreeAddr takes ports from: under Linux's default ephemeral range (32768-60999)
// and above the registered services most machines run.
const lowPort, highPort = 20000, 32000

var (
	portMu   sync.Mutex
	nextPort int
)
