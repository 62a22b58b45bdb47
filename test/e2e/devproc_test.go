package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"

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
