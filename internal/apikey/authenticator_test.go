package apikey_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAuthenticatorForgetsARevokedKeyOnEveryReplica(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool := pgtest.NewPool(t)
	keys := apikey.NewService(pool)

	// Two replicas, each with its own cache and listener.
	replicas := []*apikey.Authenticator{
		apikey.NewAuthenticator(keys, pool, testr.New(t)),
		apikey.NewAuthenticator(keys, pool, testr.New(t)),
	}
	for _, a := range replicas {
		go func() { _ = a.Start(ctx) }()
		waitUntil(t, "listener up", a.Listening)
	}

	secret, k, err := keys.Create(ctx, "acme", "backend", apikey.Live, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := keys.Create(ctx, "acme", "other", apikey.Live, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range replicas {
		for _, s := range []string{secret, other} {
			if _, err := a.Authenticate(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The cache answers: a change made behind the service's back is not seen...
	if _, err := pool.Exec(ctx, "UPDATE api_keys SET revoked_at = now() WHERE id = $1", k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := replicas[0].Authenticate(ctx, secret); err != nil {
		t.Fatalf("cached key refused before any notification: %v", err)
	}
	// ...but a revocation is, on every replica, through the notification.
	if _, err := keys.Revoke(ctx, "acme", k.ID); err != nil {
		t.Fatal(err)
	}
	for i, a := range replicas {
		waitUntil(t, "revoked key refused", func() bool {
			_, err := a.Authenticate(ctx, secret)
			e := apperror.As(err)
			return e != nil && e.Kind == apperror.Unauthorized
		})
		if _, err := a.Authenticate(ctx, other); err != nil {
			t.Errorf("replica %d: the other key is refused too: %v", i, err)
		}
	}
}

func TestAuthenticatorWithoutListenerAsksPostgres(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	pool := pgtest.NewPool(t)
	keys := apikey.NewService(pool)
	a := apikey.NewAuthenticator(keys, pool, testr.New(t))
	stopped := make(chan struct{})
	go func() { _ = a.Start(ctx); close(stopped) }()
	waitUntil(t, "listener up", a.Listening)

	secret, k, err := keys.Create(ctx, "acme", "backend", apikey.Test, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-stopped
	if a.Listening() {
		t.Fatal("still listening after stop")
	}
	// With the listener gone, a revocation that no notification announces is seen at once.
	if _, err := pool.Exec(context.Background(), "UPDATE api_keys SET revoked_at = now() WHERE id = $1", k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(context.Background(), secret); apperror.As(err) == nil {
		t.Fatalf("Authenticate of a revoked key without listener = %v, want unauthorized", err)
	}
}

func TestRevokeAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keys := apikey.NewService(pgtest.NewPool(t))
	_, a, err := keys.Create(ctx, "acme", "a", apikey.Live, []string{"messages:send", "messages:read", "messages:send"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Permissions) != 2 || !a.Allows(apikey.PermissionMessagesSend) || a.Allows(apikey.PermissionContactsRead) {
		t.Fatalf("permissions %v", a.Permissions)
	}
	if _, _, err := keys.Create(ctx, "acme", "b", apikey.Live, []string{"messages:delete"}); apperror.As(err) == nil {
		t.Fatalf("unknown permission accepted: %v", err)
	}
	if _, _, err := keys.Create(ctx, "other", "c", apikey.Test, nil); err != nil {
		t.Fatal(err)
	}

	// Another project's key is not found and stays as it is.
	if _, err := keys.Revoke(ctx, "other", a.ID); apperror.As(err) == nil || apperror.As(err).Kind != apperror.NotFound {
		t.Fatalf("revoke across projects = %v, want not found", err)
	}
	first, err := keys.Revoke(ctx, "acme", a.ID)
	if err != nil || first.RevokedAt == nil {
		t.Fatalf("revoke = %+v %v", first, err)
	}
	again, err := keys.Revoke(ctx, "acme", a.ID)
	if err != nil || !again.RevokedAt.Equal(*first.RevokedAt) {
		t.Fatalf("second revoke moved revokedAt: %v → %v (%v)", first.RevokedAt, again.RevokedAt, err)
	}

	list, err := keys.List(ctx, "acme")
	if err != nil || len(list) != 1 || list[0].ID != a.ID || list[0].RevokedAt == nil {
		t.Fatalf("list = %+v %v", list, err)
	}
}
