package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/switchboard-io/switchboard/api/v1alpha1"

	"github.com/switchboard-io/switchboard/internal/localpg"
)

// devProcess is `switchboard dev` running on a database of the test's own.
type devProcess struct {
	bin     string
	cmd     *exec.Cmd
	exited  chan error
	env     map[string]string
	envFile string
	stdout  *syncBuffer
}

// syncBuffer is a buffer the process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startDev builds the binary, runs `switchboard dev` with args on a fresh database and waits
// for dev.env, as scripts do. It is stopped with Ctrl-C when the test ends, unless the test
// stopped it.
func startDev(t *testing.T, args ...string) *devProcess {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set; run the tests through `make test`")
	}
	d := &devProcess{bin: buildBinary(t), exited: make(chan error, 1), stdout: &syncBuffer{}}
	state := t.TempDir()
	d.envFile = filepath.Join(state, "dev.env")

	// A database of the test's own, so a developer's dev database keeps only their traffic.
	ctx := context.Background()
	pg, err := localpg.Start(ctx, logr.Discard(), os.Getenv("TEST_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	dbName := fmt.Sprintf("switchboard_e2e_%d", time.Now().UnixNano())
	dbURL, err := localpg.EnsureDatabase(ctx, pg.AdminURL, dbName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = localpg.DropDatabase(context.Background(), pg.AdminURL, dbName) })

	stderr := &syncBuffer{}
	d.cmd = exec.Command(d.bin, append([]string{"dev", "--listen", "127.0.0.1:0", "--state-dir", state,
		"--control-plane-assets", assets, "--database-url", dbURL}, args...)...)
	d.cmd.Stdout, d.cmd.Stderr = d.stdout, stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			// Stop it as a user would, so it takes its control plane down with it.
			_ = d.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-d.exited:
			case <-time.After(60 * time.Second):
				_ = d.cmd.Process.Kill()
			}
		}
		if t.Failed() {
			t.Logf("dev stdout:\n%s\ndev stderr:\n%s", d.stdout.String(), stderr.String())
		}
	})

	deadline := time.Now().Add(3 * time.Minute)
	for d.env == nil {
		select {
		case err := <-d.exited:
			t.Fatalf("dev exited before it was ready: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("dev.env did not appear within 3 minutes")
		}
		d.env = readEnvFile(d.envFile)
	}
	return d
}

// liveKey makes a live API key of the "default" project with the documented CLI and dev.env's
// settings, and returns it.
func (d *devProcess) liveKey(t *testing.T) string {
	t.Helper()
	mk := exec.Command(d.bin, "apikey", "create", "--project", "default", "--name", "live", "--environment", "live")
	mk.Env = append(os.Environ(), "DATABASE_URL="+d.env["DATABASE_URL"])
	out, err := mk.CombinedOutput()
	key := regexp.MustCompile(`svc_live_[0-9A-Za-z]+`).FindString(string(out))
	if err != nil || key == "" {
		t.Fatalf("apikey create: %v\n%s", err, out)
	}
	return key
}

// kube is a client of the dev system's kube-apiserver, as kubectl with dev.env's KUBECONFIG.
func (d *devProcess) kube(t *testing.T) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", d.env["KUBECONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	// The client logs nothing worth reading here; without a logger, controller-runtime prints a
	// stack trace to stderr once the test process is 30s old.
	ctrllog.SetLogger(logr.Discard())
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return k8s
}
