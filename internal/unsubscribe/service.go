package unsubscribe

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Lifetime is how long a token is honoured after the mail that carried it was sent: mail is
// read, and its links followed, long after it arrived.
const Lifetime = 365 * 24 * time.Hour

// Recipient is what a token names: one address of one broadcast of a project, in its mode
// (test and live keep separate suppression lists).
type Recipient struct {
	ID        string // the broadcast recipient
	Project   string
	TestMode  bool
	Broadcast string
	Address   string
}

// Suppressor records an unsubscribe: address goes on project's suppression list in its mode,
// noting broadcastID. Recording it again changes nothing.
type Suppressor interface {
	Unsubscribe(ctx context.Context, project string, testMode bool, address, broadcastID string) error
}

// Service turns tokens into unsubscribes, and makes the header fields that carry them.
type Service struct {
	signer     *Signer
	pool       *pgxpool.Pool
	suppressor Suppressor
	// baseURL is where the api role serves Path (the dashboard URL); mailHost the inbound
	// listener's host name, "" when this installation receives no mail (no mailto: then).
	baseURL, mailHost string
	now               func() time.Time
}

// NewService returns a Service whose links point under baseURL and whose mailto: addresses are
// at mailHost ("" for none).
func NewService(signer *Signer, pool *pgxpool.Pool, suppressor Suppressor, baseURL, mailHost string) *Service {
	return &Service{signer: signer, pool: pool, suppressor: suppressor, baseURL: strings.TrimSuffix(baseURL, "/"),
		mailHost: strings.ToLower(mailHost), now: time.Now}
}

// Headers are the header fields of a broadcast's email to the recipient recipientID:
// List-Unsubscribe with the one-click URL (ownURL when the broadcast names its own, else this
// installation's) and the mailto: address, and List-Unsubscribe-Post (RFC 8058).
func (s *Service) Headers(recipientID, ownURL string) (map[string]string, error) {
	token, err := s.signer.Token(recipientID)
	if err != nil {
		return nil, err
	}
	link := ownURL
	if link == "" {
		link = s.baseURL + Path + token
	}
	list := "<" + link + ">"
	if s.mailHost != "" {
		list += ", <mailto:" + MailPrefix + token + "@" + s.mailHost + ">"
	}
	return map[string]string{"List-Unsubscribe": list, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}, nil
}

// Resolve returns the recipient token names: ErrInvalid when this installation did not sign
// it, its recipient is gone, or its mail went more than Lifetime ago.
func (s *Service) Resolve(ctx context.Context, token string) (Recipient, error) {
	id, err := s.signer.Parse(token)
	if err != nil {
		return Recipient{}, err
	}
	row, err := db.Planned(s.pool).UnsubscribeRecipient(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Recipient{}, ErrInvalid
	}
	if err != nil {
		return Recipient{}, fmt.Errorf("read the recipient of an unsubscribe token: %w", err)
	}
	if s.now().Sub(row.SentAt) > Lifetime {
		return Recipient{}, ErrInvalid
	}
	return Recipient{ID: row.ID, Project: row.Project, TestMode: row.TestMode, Broadcast: row.BroadcastID, Address: row.Recipient}, nil
}

// Unsubscribe puts the recipient token names on its project's suppression list.
func (s *Service) Unsubscribe(ctx context.Context, token string) (Recipient, error) {
	r, err := s.Resolve(ctx, token)
	if err != nil {
		return Recipient{}, err
	}
	if err := s.suppressor.Unsubscribe(ctx, r.Project, r.TestMode, r.Address, r.Broadcast); err != nil {
		return Recipient{}, err
	}
	return r, nil
}

// The placeholders a broadcast's own unsubscribe URL may hold, replaced for each recipient.
const (
	PlaceholderEmail       = "{email}"
	PlaceholderBroadcastID = "{broadcastId}"
	PlaceholderRecipientID = "{recipientId}"
)

// MaxURLLength bounds a broadcast's own unsubscribe URL.
const MaxURLLength = 2000

// CheckURL says why a broadcast's own unsubscribe URL cannot be used, "" when it can: it must
// be an absolute https URL (RFC 8058), without credentials, and at most MaxURLLength long.
func CheckURL(raw string) string {
	if len(raw) > MaxURLLength {
		return fmt.Sprintf("must be at most %d characters", MaxURLLength)
	}
	probe := strings.NewReplacer(PlaceholderEmail, "x", PlaceholderBroadcastID, "x", PlaceholderRecipientID, "x").Replace(raw)
	u, err := url.Parse(probe)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return "must be an absolute URL"
	case u.Scheme != "https":
		return "must be an https URL: mailbox providers use only https links for one-click unsubscribe"
	case u.User != nil:
		return "must not hold credentials"
	case strings.ContainsAny(raw, "<>\"\\ \t\r\n,"):
		return "must not hold spaces, commas, quotes or angle brackets"
	}
	return ""
}

// ExpandURL is a broadcast's own unsubscribe URL for one recipient: its placeholders replaced
// by the recipient's values, escaped for a URL's query or path.
func ExpandURL(raw string, r Recipient) string {
	return strings.NewReplacer(PlaceholderEmail, url.QueryEscape(r.Address), PlaceholderBroadcastID, url.QueryEscape(r.Broadcast),
		PlaceholderRecipientID, url.QueryEscape(r.ID)).Replace(raw)
}
