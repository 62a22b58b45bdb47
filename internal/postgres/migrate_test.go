package postgres_test

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestMigrateAppliesEverythingOnceEvenConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewEmptyPool(t)

	// Three migrators at once, as replicas starting together would: the lock serialises them, so
	// exactly one applies each migration and none fails.
	results := make([]postgres.Applied, 3)
	var g errgroup.Group
	for i := range results {
		g.Go(func() error {
			var err error
			results[i], err = postgres.Migrate(ctx, pool)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("concurrent migrate: %v", err)
	}
	var ours, river int
	for _, r := range results {
		ours += len(r.Switchboard)
		river += len(r.River)
	}
	current, latest, err := postgres.SchemaVersion(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if latest < 1 || current != latest {
		t.Fatalf("schema at %d, want the latest embedded version %d", current, latest)
	}
	if ours != int(latest) {
		t.Errorf("Switchboard migrations applied %d times in all, want %d (each once)", ours, latest)
	}
	if river == 0 {
		t.Errorf("no job queue migration applied")
	}

	for _, table := range []string{"api_keys", "river_job", "river_leader"} {
		var exists bool
		if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil || !exists {
			t.Errorf("table %s missing after migrate (err %v)", table, err)
		}
	}

	again, err := postgres.Migrate(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Switchboard) != 0 || len(again.River) != 0 {
		t.Errorf("second migrate applied %+v, want nothing", again)
	}
}

func TestSchemaVersionOfAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewEmptyPool(t)
	current, latest, err := postgres.SchemaVersion(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if current != 0 || latest < 1 {
		t.Fatalf("empty database: current %d latest %d, want 0 and at least 1", current, latest)
	}
}

func TestOpenExplainsFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := map[string]struct{ url, want string }{
		"refused":     {"postgres://postgres@127.0.0.1:1/x?sslmode=disable", "connection refused; start Postgres"},
		"no database": {pgtest.WithDatabase(t, "switchboard_no_such_db"), "create it (createdb)"},
		"not a URL":   {"postgres://user:s3cret@[::1", "not a valid postgres:// URL"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := postgres.Open(ctx, c.url)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open(%s) = %v, want an error saying %q", name, err, c.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error repeats the password: %v", err)
			}
		})
	}
}

// A plan_cache_mode in the database URL reaches every connection (force_custom_plan plans every
// statement, as Switchboard's connections did before db.Planned); by default Postgres chooses.
func TestOpenKeepsThePlanCacheModeOfTheURL(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewEmptyDatabase(t)
	for _, c := range []struct{ url, want string }{
		{url, "auto"},
		{url + map[bool]string{true: "&", false: "?"}[strings.Contains(url, "?")] + "plan_cache_mode=force_custom_plan", "force_custom_plan"},
	} {
		pool, err := postgres.Open(ctx, c.url)
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		err = pool.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode)
		pool.Close()
		if err != nil || mode != c.want {
			t.Errorf("plan_cache_mode = %q, %v; want %q", mode, err, c.want)
		}
	}
}
