package cli_test

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/cli"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Execute(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestUsageErrorsExitTwoWithUsageOnStderr(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	for name, args := range map[string][]string{
		"unknown role":                   {"switchboard-everything"},
		"unknown flag":                   {"api", "--no-such-flag"},
		"flag of another role":           {"worker", "--listen", ":8080"},
		"extra argument":                 {"migrate", "now"},
		"missing database":               {"api"},
		"bad log level":                  {"migrate", "--log-level", "loud", "--database-url", "postgres://x@127.0.0.1:1/x"},
		"negative credit":                {"balance", "credit", "--project", "acme", "--amount", "-5", "--database-url", "postgres://x@127.0.0.1:1/x"},
		"zero credit":                    {"balance", "credit", "--project", "acme", "--amount", "0.00", "--database-url", "postgres://x@127.0.0.1:1/x"},
		"balance of nobody":              {"balance", "show", "--database-url", "postgres://x@127.0.0.1:1/x"},
		"decide nothing":                 {"review", "approve", "--database-url", "postgres://x@127.0.0.1:1/x"},
		"decide no broadcast":            {"broadcast", "refuse", "--database-url", "postgres://x@127.0.0.1:1/x"},
		"decide no url":                  {"review", "urls", "approve", "--database-url", "postgres://x@127.0.0.1:1/x"},
		"interval below zero":            {"manager", "--template-sync-interval", "-1s", "--database-url", "postgres://x@127.0.0.1:1/x"},
		"smtp conns below 0":             {"api", "--smtp-max-connections-per-ip", "-1", "--database-url", "postgres://x@127.0.0.1:1/x"},
		"retention of 0 days":            {"worker", "--retain-messages-days", "0", "--database-url", "postgres://x@127.0.0.1:1/x"},
		"keys kept too long":             {"api", "--retain-idempotency-keys-days", "31", "--database-url", "postgres://x@127.0.0.1:1/x"},
		"attempts past their deliveries": {"all", "--retain-webhook-deliveries-days", "10", "--retain-webhook-attempts-days", "11", "--database-url", "postgres://x@127.0.0.1:1/x"},
		"smtp budget too low":            {"api", "--smtp-listen", "127.0.0.1:0", "--smtp-max-buffered-bytes", "1024", "--database-url", "postgres://x@127.0.0.1:1/x"},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := run(t, args...)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", code, stderr)
			}
			if !strings.HasPrefix(stderr, "Error: ") || !strings.Contains(stderr, "Usage:") {
				t.Errorf("stderr %q, want the error and the usage", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	code, stdout, _ := run(t, "--help")
	for _, role := range []string{"manager", "api", "worker", "all", "dev", "migrate", "version"} {
		if code != 0 || !strings.Contains(stdout, "\n  "+role+" ") {
			t.Errorf("--help (exit %d) does not list %s:\n%s", code, role, stdout)
		}
	}
	code, stdout, _ = run(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "switchboard ") {
		t.Errorf("version = %d %q", code, stdout)
	}
}

func TestMigrate(t *testing.T) {
	url := pgtest.NewEmptyDatabase(t)
	code, stdout, stderr := run(t, "migrate", "--database-url", url)
	if code != 0 || !strings.HasPrefix(stdout, "schema at version ") {
		t.Fatalf("migrate = %d %q %q", code, stdout, stderr)
	}
	code, stdout, _ = run(t, "migrate", "--database-url", url)
	if code != 0 || !strings.Contains(stdout, "applied now: 0 Switchboard, 0 job queue") {
		t.Fatalf("second migrate = %d %q", code, stdout)
	}
}

// oneLine checks a runtime failure: exit 1 and one line on stderr that says what and how to fix.
func oneLine(t *testing.T, code int, stderr, want string) {
	t.Helper()
	if code != 1 {
		t.Errorf("exit code %d, want 1 (stderr %q)", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "switchboard: ") || !strings.Contains(last, want) {
		t.Errorf("last stderr line %q, want one saying %q", last, want)
	}
}

func TestRefusedDatabase(t *testing.T) {
	code, _, stderr := run(t, "migrate", "--database-url", "postgres://postgres@127.0.0.1:1/x?sslmode=disable")
	oneLine(t, code, stderr, "connection refused; start Postgres there or point DATABASE_URL at a running server")
	if strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("stderr has more than one line: %q", stderr)
	}
}

func TestDevFailsEarlyAndLeavesNothingRunning(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free := freeAddr(t)

	cases := map[string]struct {
		args []string
		want string
	}{
		"port taken": {[]string{"--listen", taken.Addr().String()},
			"address already in use; stop what uses it or pass --listen"},
		"no control plane": {[]string{"--listen", free, "--control-plane-assets", t.TempDir()},
			"run `make envtest-assets`"},
		"database refuses": {[]string{"--listen", free, "--database-url", "postgres://postgres@127.0.0.1:1/x?sslmode=disable"},
			"connection refused"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			args := append([]string{"dev", "--state-dir", state}, c.args...)
			if name != "no control plane" {
				args = append(args, "--control-plane-assets", assetsDir(t))
			}
			code, stdout, stderr := run(t, args...)
			oneLine(t, code, stderr, c.want)
			if strings.Contains(stdout, "Switchboard is running") {
				t.Errorf("printed the banner although it failed")
			}
			if _, err := os.Stat(filepath.Join(state, "dev.env")); !os.IsNotExist(err) {
				t.Errorf("dev.env written although dev failed")
			}
			// The address it bound is free again.
			if name != "port taken" {
				l, err := net.Listen("tcp", free)
				if err != nil {
					t.Errorf("%s still bound after the failure: %v", free, err)
				} else {
					l.Close()
				}
			}
		})
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func assetsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set; run the tests through `make test`")
	}
	return dir
}

func TestAPIKeyCreateListRevoke(t *testing.T) {
	url := pgtest.NewDatabase(t)
	code, stdout, stderr := run(t, "apikey", "create", "--database-url", url, "--project", "acme", "--name", "ci",
		"--environment", "live", "--permissions", "messages:send,messages:read")
	if code != 0 || !strings.HasPrefix(stdout, "svc_live_") || !strings.Contains(stderr, "not shown again") {
		t.Fatalf("create = %d %q %q", code, stdout, stderr)
	}
	secret := strings.TrimSpace(stdout)

	code, stdout, _ = run(t, "apikey", "list", "--database-url", url, "--project", "acme")
	if code != 0 || !strings.Contains(stdout, "messages:send,messages:read") || strings.Contains(stdout, secret) {
		t.Fatalf("list = %d %q (must never show the key)", code, stdout)
	}
	id := strings.Fields(strings.Split(stdout, "\n")[1])[0]

	code, _, stderr = run(t, "apikey", "revoke", "--database-url", url, "--project", "other", id)
	oneLine(t, code, stderr, "has no API key")
	code, stdout, _ = run(t, "apikey", "revoke", "--database-url", url, "--project", "acme", id)
	if code != 0 || !strings.HasPrefix(stdout, "revoked "+id) {
		t.Fatalf("revoke = %d %q", code, stdout)
	}

	for name, args := range map[string][]string{
		"no project":          {"apikey", "list", "--database-url", url},
		"no name":             {"apikey", "create", "--database-url", url, "--project", "acme"},
		"unknown permission":  {"apikey", "create", "--database-url", url, "--project", "acme", "--name", "x", "--permissions", "all"},
		"unknown environment": {"apikey", "create", "--database-url", url, "--project", "acme", "--name", "x", "--environment", "prod"},
		"revoke without id":   {"apikey", "revoke", "--database-url", url, "--project", "acme"},
	} {
		if code, _, stderr := run(t, args...); code != 2 {
			t.Errorf("%s: exit %d, want 2 (%q)", name, code, stderr)
		}
	}
}
