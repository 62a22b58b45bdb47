package apikey_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var keyShape = regexp.MustCompile(`^svc_(live|test)_[0-9A-Za-z]{32}$`)

func TestCreateThenAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	keys := apikey.NewService(pool)

	for _, env := range []apikey.Environment{apikey.Test, apikey.Live} {
		secret, created, err := keys.Create(ctx, "acme", "backend", env, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !keyShape.MatchString(secret) || !strings.HasPrefix(secret, env.Prefix()) {
			t.Fatalf("key %q does not have the shape %s", secret, keyShape)
		}
		if created.Environment != env || created.TestMode() != (env == apikey.Test) {
			t.Errorf("created %+v for environment %s", created, env)
		}
		if len(created.Permissions) != 1 || created.Permissions[0] != "*" {
			t.Errorf("default permissions %v, want [*]", created.Permissions)
		}
		got, err := keys.Authenticate(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != created.ID || got.Project != "acme" || got.Prefix != secret[:len(env.Prefix())+4] {
			t.Errorf("authenticated %+v, created %+v", got, created)
		}
	}

	// Only a hash is stored: the key appears in no column.
	secret, _, err := keys.Create(ctx, "acme", "other", apikey.Test, nil)
	if err != nil {
		t.Fatal(err)
	}
	var leaks int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM api_keys k WHERE strpos(k::text, $1) > 0", secret[9:]).Scan(&leaks); err != nil {
		t.Fatal(err)
	}
	if leaks != 0 {
		t.Fatalf("the key is stored in clear in %d rows", leaks)
	}
}

func TestAuthenticateRefusesEveryBadKeyAlike(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	keys := apikey.NewService(pool)
	revoked, k, err := keys.Create(ctx, "acme", "old", apikey.Live, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "UPDATE api_keys SET revoked_at = now() WHERE id = $1", k.ID); err != nil {
		t.Fatal(err)
	}

	for name, secret := range map[string]string{
		"empty":                 "",
		"no prefix":             "abc",
		"unknown prefix":        "sk_live_0123456789abcdefghijklmnopqrstuv",
		"short tail":            "svc_test_abc",
		"long tail":             "svc_test_0123456789abcdefghijklmnopqrstuvw",
		"bad characters":        "svc_test_0123456789abcdefghijklmnopqrs-_",
		"valid shape, unknown":  "svc_test_0123456789abcdefghijklmnopqrstuv",
		"revoked":               revoked,
		"revoked, other prefix": "svc_test_" + revoked[9:],
	} {
		_, err := keys.Authenticate(ctx, secret)
		e := apperror.As(err)
		if e == nil || e.Kind != apperror.Unauthorized || e.Code != "unauthorized" {
			t.Errorf("%s: Authenticate = %v, want unauthorized", name, err)
		}
	}
}

func TestTouchOnlyMovesForward(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keys := apikey.NewService(pgtest.NewPool(t))
	secret, k, err := keys.Create(ctx, "acme", "backend", apikey.Test, nil)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if err := keys.Touch(ctx, k.ID, later); err != nil {
		t.Fatal(err)
	}
	if err := keys.Touch(ctx, k.ID, later.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := keys.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastUsedAt == nil || !got.LastUsedAt.Equal(later) {
		t.Fatalf("lastUsedAt = %v, want %v", got.LastUsedAt, later)
	}
}

func TestCreateRefusesAnUnknownEnvironment(t *testing.T) {
	t.Parallel()
	keys := apikey.NewService(pgtest.NewPool(t))
	_, _, err := keys.Create(context.Background(), "acme", "x", "staging", nil)
	if e := apperror.As(err); e == nil || e.Kind != apperror.Invalid {
		t.Fatalf("Create(staging) = %v, want invalid", err)
	}
}
