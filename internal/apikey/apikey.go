// Package apikey creates API keys and authenticates requests by them. A key is
// `svc_live_` or `svc_test_` followed by 32 base62 characters (190 random bits); only its SHA-256
// hash is stored, and the key itself is shown once, when it is created.
package apikey

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Environment says whether a key sends for real (live) or through the sandbox (test).
type Environment string

const (
	Live Environment = "live"
	Test Environment = "test"
)

const (
	secretLen = 32 // base62 characters after the prefix: 32·log2(62) ≈ 190 bits
	idLen     = 20
	alphabet  = randid.Base62
	// shownPrefixLen is how much of a key lists may show to tell keys apart.
	shownPrefixLen = 4
)

// Prefix returns the key prefix of the environment.
func (e Environment) Prefix() string { return "svc_" + string(e) + "_" }

// Valid tells whether e is live or test.
func (e Environment) Valid() bool { return e == Live || e == Test }

// Key is a stored API key. It never holds the key itself.
type Key struct {
	ID          string
	Project     string
	Name        string
	Environment Environment
	// Prefix is the key's environment prefix and first characters, to tell keys apart in lists.
	Prefix      string
	Permissions []string
	CreatedAt   time.Time
	LastUsedAt  *time.Time
	RevokedAt   *time.Time
}

// TestMode tells whether the key sends through the sandbox.
func (k Key) TestMode() bool { return k.Environment == Test }

// Service creates, lists, revokes and checks API keys.
type Service struct {
	pool *pgxpool.Pool
	q    *db.Queries
	now  func() time.Time
}

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool) *Service {
	return &Service{pool: pool, q: db.Planned(pool), now: time.Now}
}

// Create makes a key for project and returns it, the only time it is ever shown.
func (s *Service) Create(ctx context.Context, project, name string, env Environment, permissions []string) (string, Key, error) {
	if !env.Valid() {
		return "", Key{}, apperror.New(apperror.Invalid, "invalid_request", "environment must be live or test")
	}
	permissions, err := ParsePermissions(permissions)
	if err != nil {
		return "", Key{}, apperror.New(apperror.Invalid, "invalid_request", err.Error())
	}
	tail, err := randomString(secretLen)
	if err != nil {
		return "", Key{}, err
	}
	id, err := randomString(idLen)
	if err != nil {
		return "", Key{}, err
	}
	secret := env.Prefix() + tail
	hash := sha256.Sum256([]byte(secret))
	row, err := s.q.CreateAPIKey(ctx, db.CreateAPIKeyParams{
		ID:          "key_" + id,
		Project:     project,
		Name:        name,
		Environment: string(env),
		KeyPrefix:   secret[:len(env.Prefix())+shownPrefixLen],
		KeyHash:     hash[:],
		Permissions: permissions,
		CreatedAt:   s.now().UTC().Truncate(time.Microsecond),
	})
	if err != nil {
		return "", Key{}, fmt.Errorf("create api key for project %s: %w", project, err)
	}
	return secret, fromRow(row), nil
}

// Authenticate returns the key behind secret. A malformed, unknown or revoked key is
// apperror.Unauthenticated, the same for all three.
func (s *Service) Authenticate(ctx context.Context, secret string) (Key, error) {
	if !WellFormed(secret) {
		return Key{}, apperror.Unauthenticated()
	}
	hash := sha256.Sum256([]byte(secret))
	row, err := s.q.GetAPIKeyByHash(ctx, hash[:])
	if errors.Is(err, pgx.ErrNoRows) {
		return Key{}, apperror.Unauthenticated()
	}
	if err != nil {
		return Key{}, fmt.Errorf("look up api key: %w", err)
	}
	if row.RevokedAt != nil {
		return Key{}, apperror.Unauthenticated()
	}
	return fromRow(row), nil
}

// Revoke revokes the project's key id at once on every replica; revoking twice keeps the first
// time. A key of another project is not found.
func (s *Service) Revoke(ctx context.Context, project, id string) (Key, error) {
	var key Key
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		row, err := q.RevokeAPIKey(ctx, db.RevokeAPIKeyParams{ID: id, Project: project, RevokedAt: s.now().UTC()})
		if errors.Is(err, pgx.ErrNoRows) {
			return apperror.New(apperror.NotFound, "not_found", fmt.Sprintf("project %s has no API key %s", project, id))
		}
		if err != nil {
			return fmt.Errorf("revoke api key %s: %w", id, err)
		}
		key = fromRow(row)
		return q.NotifyAPIKeyRevoked(ctx, hex.EncodeToString(row.KeyHash))
	})
	return key, err
}

// RevokeAll revokes every key of the project still in force and returns how many.
func (s *Service) RevokeAll(ctx context.Context, project string) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		hashes, err := q.RevokeProjectAPIKeys(ctx, db.RevokeProjectAPIKeysParams{Project: project, RevokedAt: s.now().UTC()})
		if err != nil {
			return fmt.Errorf("revoke api keys of project %s: %w", project, err)
		}
		for _, h := range hashes {
			if err := q.NotifyAPIKeyRevoked(ctx, hex.EncodeToString(h)); err != nil {
				return fmt.Errorf("announce revocation: %w", err)
			}
		}
		n = len(hashes)
		return nil
	})
	return n, err
}

// List returns the project's keys, revoked ones included, oldest first.
func (s *Service) List(ctx context.Context, project string) ([]Key, error) {
	rows, err := s.q.ListAPIKeys(ctx, project)
	if err != nil {
		return nil, fmt.Errorf("list api keys of project %s: %w", project, err)
	}
	keys := make([]Key, len(rows))
	for i, r := range rows {
		keys[i] = fromRow(r)
	}
	return keys, nil
}

// Touch records that the key was used at usedAt; an older time never overwrites a newer one.
func (s *Service) Touch(ctx context.Context, id string, usedAt time.Time) error {
	if err := s.q.TouchAPIKey(ctx, db.TouchAPIKeyParams{ID: id, UsedAt: usedAt}); err != nil {
		return fmt.Errorf("record use of api key %s: %w", id, err)
	}
	return nil
}

// WellFormed tells whether secret has the shape of a key: a known prefix and 32 base62 characters.
func WellFormed(secret string) bool {
	var tail string
	switch {
	case strings.HasPrefix(secret, Live.Prefix()):
		tail = secret[len(Live.Prefix()):]
	case strings.HasPrefix(secret, Test.Prefix()):
		tail = secret[len(Test.Prefix()):]
	default:
		return false
	}
	if len(tail) != secretLen {
		return false
	}
	for i := 0; i < len(tail); i++ {
		if !strings.ContainsRune(alphabet, rune(tail[i])) {
			return false
		}
	}
	return true
}

func randomString(n int) (string, error) { return randid.String(alphabet, n) }

func fromRow(r db.APIKey) Key {
	return Key{
		ID:          r.ID,
		Project:     r.Project,
		Name:        r.Name,
		Environment: Environment(r.Environment),
		Prefix:      r.KeyPrefix,
		Permissions: r.Permissions,
		CreatedAt:   r.CreatedAt,
		LastUsedAt:  r.LastUsedAt,
		RevokedAt:   r.RevokedAt,
	}
}
