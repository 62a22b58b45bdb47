package localpg

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
)

func TestThrowawayServerStartsServesAndLeavesNothingBehind(t *testing.T) {
	if _, err := FindBinaries(); err != nil {
		t.Fatalf("this test needs the Postgres server binaries, as `make test` does: %v", err)
	}
	ctx := context.Background()
	s, err := startThrowaway(ctx, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()

	url, err := EnsureDatabase(ctx, s.AdminURL, "switchboard")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query throwaway server: %v", err)
	}
	_ = conn.Close(ctx)
	// A second EnsureDatabase finds it and does not fail.
	if _, err := EnsureDatabase(ctx, s.AdminURL, "switchboard"); err != nil {
		t.Fatal(err)
	}

	pid, dir := s.cmd.Process.Pid, s.dir
	s.Stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data directory %s still there after Stop (err %v)", dir, err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("postgres process %d still running after Stop", pid)
	}
	if answers(ctx, s.AdminURL) {
		t.Errorf("server still answers after Stop")
	}
}

func TestStartUsesTheGivenURLAsItIs(t *testing.T) {
	t.Parallel()
	s, err := Start(context.Background(), logr.Discard(), "postgres://u@db.example:5432/x")
	if err != nil || s.AdminURL != "postgres://u@db.example:5432/x" || s.Throwaway {
		t.Fatalf("Start with a URL = %+v, %v", s, err)
	}
	s.Stop() // does nothing for a server it did not start
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	got, err := WithDatabase("postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "other")
	if err != nil || got != "postgres://postgres@127.0.0.1:5432/other?sslmode=disable" {
		t.Fatalf("WithDatabase = %q, %v", got, err)
	}
	if _, err := WithDatabase("host=127.0.0.1 dbname=x", "other"); err == nil {
		t.Fatal("a key=value connection string cannot be re-pointed; want an error")
	}
}

func TestNoPostgresAnywhereNamesWhatToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := debianBinGlob
	debianBinGlob = filepath.Join(t.TempDir(), "*", "bin")
	defer func() { debianBinGlob = saved }()

	_, err := FindBinaries()
	if err == nil || !strings.Contains(err.Error(), "apt-get install postgresql") || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Fatalf("FindBinaries with no Postgres = %v, want an error naming what to install", err)
	}
}

func TestARestartedThrowawayServerKeepsItsAddressAndData(t *testing.T) {
	ctx := context.Background()
	s, err := StartThrowaway(ctx, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	url := s.AdminURL
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx, logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if err := conn.Ping(ctx); err == nil {
		t.Error("a session survived the restart")
	}
	if s.AdminURL != url {
		t.Errorf("address %s after the restart, was %s", s.AdminURL, url)
	}
	conn, err = pgx.Connect(ctx, s.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != 7 {
		t.Errorf("after the restart: %d %v", v, err)
	}
}
