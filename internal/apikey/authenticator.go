package apikey

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// revokedChannel is the Postgres channel Revoke notifies.
const revokedChannel = "switchboard_api_key_revoked"

// Cache lifetimes. A revocation reaches every replica through LISTEN/NOTIFY at once; the
// lifetimes only bound memory and how long a key created after a failed probe stays unknown.
const (
	validTTL   = 5 * time.Minute
	invalidTTL = 10 * time.Second
	maxEntries = 100_000
)

// Authenticator checks keys with a cache in front of Postgres. The cache is used only while its
// LISTEN connection is up: without it, every request asks Postgres, so a revoked key never
// outlives its revocation.
type Authenticator struct {
	keys *Service
	pool *pgxpool.Pool
	log  logr.Logger
	now  func() time.Time

	listening atomic.Bool
	mu        sync.Mutex
	entries   map[[32]byte]entry
	// generation moves on every revocation; a lookup that raced one does not fill the cache.
	generation uint64
}

type entry struct {
	key     Key
	err     error
	expires time.Time
}

// NewAuthenticator returns an Authenticator; Start runs its listener.
func NewAuthenticator(keys *Service, pool *pgxpool.Pool, log logr.Logger) *Authenticator {
	return &Authenticator{keys: keys, pool: pool, log: log, now: time.Now, entries: map[[32]byte]entry{}}
}

// Authenticate returns the key behind secret, like Service.Authenticate.
func (a *Authenticator) Authenticate(ctx context.Context, secret string) (Key, error) {
	if !WellFormed(secret) {
		return Key{}, apperror.Unauthenticated()
	}
	if !a.listening.Load() {
		return a.keys.Authenticate(ctx, secret)
	}
	hash := sha256.Sum256([]byte(secret))
	now := a.now()
	a.mu.Lock()
	e, ok := a.entries[hash]
	gen := a.generation
	a.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.key, e.err
	}

	key, err := a.keys.Authenticate(ctx, secret)
	if err != nil && apperror.As(err) == nil {
		return Key{}, err // Postgres failed: nothing to remember
	}
	ttl := validTTL
	if err != nil {
		ttl = invalidTTL
	}
	a.mu.Lock()
	if a.generation == gen && a.listening.Load() {
		if len(a.entries) >= maxEntries {
			clear(a.entries)
		}
		a.entries[hash] = entry{key: key, err: err, expires: now.Add(ttl)}
	}
	a.mu.Unlock()
	return key, err
}

// forget drops the key with the given hash and stops in-flight lookups from caching.
func (a *Authenticator) forget(hashHex string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.generation++
	var hash [32]byte
	if b, err := hex.DecodeString(hashHex); err == nil && len(b) == len(hash) {
		copy(hash[:], b)
		delete(a.entries, hash)
		return
	}
	clear(a.entries) // a payload we cannot read: forget everything
}

func (a *Authenticator) reset(listening bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.generation++
	clear(a.entries)
	a.listening.Store(listening)
}

// Start listens for revocations until ctx ends, reconnecting after a lost connection. While it is
// not listening the cache is off.
func (a *Authenticator) Start(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := a.listen(ctx)
		a.reset(false)
		if ctx.Err() != nil {
			return nil
		}
		a.log.Error(err, "listening for API key revocations; the key cache is off until it reconnects")
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	return nil
}

func (a *Authenticator) listen(ctx context.Context) error {
	pooled, err := a.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection ends in LISTEN state: take it out of the pool and close it afterwards.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{revokedChannel}.Sanitize()); err != nil {
		return err
	}
	// Whatever was cached before LISTEN may have missed a revocation.
	a.reset(true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return nil
			}
			return err
		}
		a.forget(n.Payload)
	}
}

// NeedLeaderElection: every api replica keeps its own cache.
func (a *Authenticator) NeedLeaderElection() bool { return false }

// Listening tells whether the cache is on (its revocation listener is connected).
func (a *Authenticator) Listening() bool { return a.listening.Load() }
