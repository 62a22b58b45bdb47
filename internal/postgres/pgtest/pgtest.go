// Package pgtest gives tests a real Postgres: a fresh database per test, copied from a template
// migrated once per test binary, and dropped when the test ends. The server is TEST_DATABASE_URL
// (a role that may create databases), else 127.0.0.1:5432, else a throwaway one.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/localpg"
	"github.com/switchboard-io/switchboard/internal/postgres"
)

var (
	once     sync.Once
	server   *localpg.Server
	template string
	setupErr error
)

// Main runs the package's tests, cleans up (see Run) and exits. Call it from TestMain.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run runs the package's tests, then drops the template database and stops a throwaway server,
// and returns the exit code; for a TestMain with more to clean up than Postgres.
func Run(m *testing.M) int {
	code := m.Run()
	if server != nil {
		if template != "" {
			_ = localpg.DropDatabase(context.Background(), server.AdminURL, template)
		}
		server.Stop()
	}
	return code
}

func setup() {
	ctx := context.Background()
	server, setupErr = localpg.Start(ctx, logr.Discard(), os.Getenv("TEST_DATABASE_URL"))
	if setupErr != nil {
		return
	}
	dropStale(ctx)
	name := "switchboard_tmpl_" + suffix()
	url, err := localpg.CreateDatabaseFrom(ctx, server.AdminURL, name, "")
	if err != nil {
		setupErr = err
		return
	}
	template = name
	pool, err := postgres.Open(ctx, url)
	if err != nil {
		setupErr = err
		return
	}
	defer pool.Close()
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		setupErr = fmt.Errorf("migrate template database: %w", err)
	}
}

// NewDatabase returns the URL of a fresh, migrated database that is dropped when t ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return createDatabase(t, true)
}

// NewPool returns a pool on a fresh, migrated database, closed and dropped when t ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return openPool(t, NewDatabase(t))
}

// NewEmptyPool returns a pool on a database with no schema, closed and dropped when t ends.
func NewEmptyPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return openPool(t, NewEmptyDatabase(t))
}

func openPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(pool.Close) // runs before the drop: cleanups run last-in first-out
	return pool
}

// suffix names a test database: its creation time (Unix seconds) and random bytes.
func suffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%d_%s", time.Now().Unix(), hex.EncodeToString(b))
}

// staleAfter is how old a test database must be before a later test run drops it: a test binary
// that crashed (a panic, a kill) leaves its databases behind.
const staleAfter = 2 * time.Hour

// dropStale drops test databases that earlier, crashed runs left behind on a shared server.
func dropStale(ctx context.Context) {
	conn, err := pgx.Connect(ctx, server.AdminURL)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'switchboard\_test\_%' OR datname LIKE 'switchboard\_tmpl\_%'`)
	if err != nil {
		return
	}
	names, _ := pgx.CollectRows(rows, pgx.RowTo[string])
	for _, n := range names {
		parts := strings.Split(n, "_") // switchboard, test|tmpl, seconds, random
		if len(parts) != 4 {
			continue
		}
		secs, err := strconv.ParseInt(parts[2], 10, 64)
		if err != nil || time.Since(time.Unix(secs, 0)) < staleAfter {
			continue
		}
		_ = localpg.DropDatabase(ctx, server.AdminURL, n)
	}
}

// NewEmptyDatabase returns the URL of a database with no schema at all, dropped when t ends.
func NewEmptyDatabase(t testing.TB) string {
	t.Helper()
	return createDatabase(t, false)
}

// createDatabase creates a database, a copy of the migrated template or an empty one, dropped
// when t ends.
func createDatabase(t testing.TB, migrated bool) string {
	t.Helper()
	once.Do(setup)
	if setupErr != nil {
		t.Fatalf("postgres for tests: %v", setupErr)
	}
	from := ""
	if migrated {
		from = template
	}
	name := "switchboard_test_" + suffix()
	url, err := localpg.CreateDatabaseFrom(context.Background(), server.AdminURL, name, from)
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		if err := localpg.DropDatabase(context.Background(), server.AdminURL, name); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	return url
}

// WithDatabase returns the test server's URL pointed at database name (which may not exist).
func WithDatabase(t testing.TB, name string) string {
	t.Helper()
	once.Do(setup)
	if setupErr != nil {
		t.Fatalf("postgres for tests: %v", setupErr)
	}
	url, err := localpg.WithDatabase(server.AdminURL, name)
	if err != nil {
		t.Fatal(err)
	}
	return url
}
