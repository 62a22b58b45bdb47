// Package whatsappsync syncs the WhatsApp Business app data of a coexistence number
// (docs/whatsapp-sync.md): a number onboarded from the WhatsApp Business app keeps using the
// app, and its contacts and chat history can each be synced once. Contacts become the project's
// contacts (named as the app names them); history and the messages the business keeps sending
// from the app are mirrored into the conversations, never announced, answered by an agent or
// counted toward the Free plan's allowance.
package whatsappsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
)

// The kinds of sync, as the API and the table name them.
const (
	KindContacts = "contacts"
	KindHistory  = "history"
)

// The statuses of a sync (the client's).
const (
	StatusNotRequested = "not_requested"
	StatusPending      = "pending"
	StatusSyncing      = "syncing"
	StatusCompleted    = "completed"
	StatusRejected     = "rejected"
)

// Starter asks Meta to start a sync (the transport registry).
type Starter interface {
	StartWhatsAppSync(ctx context.Context, snd *v1alpha1.Sender, syncType string) (string, error)
}

// Service keeps the syncs.
type Service struct {
	Pool     *pgxpool.Pool
	Reader   client.Reader
	Starter  Starter
	Messages *message.Service
	Clock    func() time.Time
}

func (s *Service) now() time.Time {
	if s.Clock != nil {
		return s.Clock().UTC()
	}
	return time.Now().UTC()
}

// Status is a sender's sync status (the client's WhatsAppSyncStatus).
type Status struct {
	Status        string   `json:"status"`
	IsCoexistence bool     `json:"isCoexistence"`
	Contacts      Contacts `json:"contacts"`
	History       History  `json:"history"`
}

// Contacts is the contacts sync.
type Contacts struct {
	CanSync     bool       `json:"canSync"`
	Status      string     `json:"status"`
	RequestedAt *time.Time `json:"requestedAt"`
}

// History is the history sync.
type History struct {
	CanSync     bool       `json:"canSync"`
	Status      string     `json:"status"`
	RequestedAt *time.Time `json:"requestedAt"`
	CompletedAt *time.Time `json:"completedAt"`
}

// sender reads the key's project's sender id, which must have a WhatsApp number.
func (s *Service) sender(ctx context.Context, key apikey.Key, id string) (*v1alpha1.Sender, error) {
	snd, err := kubewrite.Read[v1alpha1.Sender](ctx, s.Reader, key.Project, id, "sender")
	if err != nil {
		return nil, err
	}
	if snd.Spec.WhatsApp == nil {
		return nil, apperror.New(apperror.Invalid, "invalid_request", fmt.Sprintf("Sender %s has no WhatsApp number.", id))
	}
	return snd, nil
}

// Get is the sender's sync status for the key's mode.
func (s *Service) Get(ctx context.Context, key apikey.Key, senderID string) (Status, error) {
	snd, err := s.sender(ctx, key, senderID)
	if err != nil {
		return Status{}, err
	}
	return s.status(ctx, snd, key.TestMode())
}

func (s *Service) status(ctx context.Context, snd *v1alpha1.Sender, testMode bool) (Status, error) {
	wa := snd.Spec.WhatsApp
	st := Status{Status: "disconnected", IsCoexistence: wa.Coexistence,
		Contacts: Contacts{Status: StatusNotRequested}, History: History{Status: StatusNotRequested}}
	if wa.Active {
		st.Status = "active"
	}
	rows, err := db.Planned(s.Pool).WhatsAppSyncs(ctx, db.WhatsAppSyncsParams{Project: snd.Namespace, Sender: snd.Name, TestMode: testMode})
	if err != nil {
		return Status{}, err
	}
	for _, r := range rows {
		requested := r.RequestedAt.UTC()
		switch r.Kind {
		case KindContacts:
			st.Contacts.Status, st.Contacts.RequestedAt = r.Status, &requested
		case KindHistory:
			st.History.Status, st.History.RequestedAt = r.Status, &requested
			if r.CompletedAt != nil {
				done := r.CompletedAt.UTC()
				st.History.CompletedAt = &done
			}
		}
	}
	// Meta lets each be started once, for a coexistence number whose account is active.
	able := st.IsCoexistence && st.Status == "active"
	st.Contacts.CanSync = able && st.Contacts.Status == StatusNotRequested
	st.History.CanSync = able && st.History.Status == StatusNotRequested
	return st, nil
}

// Start starts a sync of kind for the sender: Meta is asked (test keys: the sandbox, which
// completes it at once with nothing to import); a sync that cannot be started is 400 and
// changes nothing. It returns the message the API shows with the status.
func (s *Service) Start(ctx context.Context, key apikey.Key, senderID, kind string) (string, Status, error) {
	snd, err := s.sender(ctx, key, senderID)
	if err != nil {
		return "", Status{}, err
	}
	st, err := s.status(ctx, snd, key.TestMode())
	if err != nil {
		return "", Status{}, err
	}
	can := st.Contacts.CanSync
	if kind == KindHistory {
		can = st.History.CanSync
	}
	if !can {
		why := "its number was not onboarded from the WhatsApp Business app (spec.whatsapp.coexistence)"
		switch {
		case st.IsCoexistence && st.Status != "active":
			why = "its WhatsApp account is not active"
		case st.IsCoexistence:
			why = "it was started already: WhatsApp allows each sync once"
		}
		return "", Status{}, apperror.New(apperror.Invalid, "invalid_request", fmt.Sprintf("Sender %s cannot start a %s sync: %s.", senderID, kind, why))
	}
	q := db.Planned(s.Pool)
	now := s.now()
	if _, err := q.StartWhatsAppSync(ctx, db.StartWhatsAppSyncParams{Project: snd.Namespace, Sender: snd.Name, TestMode: key.TestMode(),
		Kind: kind, Now: now}); errors.Is(err, pgx.ErrNoRows) {
		return "", Status{}, apperror.New(apperror.Invalid, "invalid_request", fmt.Sprintf("Sender %s's %s sync was started already.", senderID, kind))
	} else if err != nil {
		return "", Status{}, err
	}
	if key.TestMode() {
		if err := q.AdvanceWhatsAppSync(ctx, db.AdvanceWhatsAppSyncParams{Status: StatusCompleted, Project: snd.Namespace, Sender: snd.Name,
			TestMode: true, Kind: kind, Now: now}); err != nil {
			return "", Status{}, err
		}
	} else {
		syncType := meta.SyncContacts
		if kind == KindHistory {
			syncType = meta.SyncHistory
		}
		reqID, err := s.Starter.StartWhatsAppSync(ctx, snd, syncType)
		if err != nil {
			// Meta did not start it: it may be tried again.
			if ferr := q.ForgetWhatsAppSync(ctx, db.ForgetWhatsAppSyncParams{Project: snd.Namespace, Sender: snd.Name, TestMode: false, Kind: kind}); ferr != nil {
				return "", Status{}, errors.Join(err, ferr)
			}
			if f := transport.AsFailure(err); f != nil {
				return "", Status{}, apperror.New(apperror.Invalid, "invalid_request", "Meta refused to start the sync: "+f.Message)
			}
			return "", Status{}, apperror.New(apperror.Unavailable, "provider_unavailable", "Meta did not answer; try again.")
		}
		if err := q.NoteWhatsAppSyncRequest(ctx, db.NoteWhatsAppSyncRequestParams{RequestID: &reqID, Project: snd.Namespace, Sender: snd.Name,
			TestMode: false, Kind: kind}); err != nil {
			return "", Status{}, err
		}
	}
	st, err = s.status(ctx, snd, key.TestMode())
	msg := "Contacts sync started: the app's contacts arrive in a few minutes."
	if kind == KindHistory {
		msg = "History sync requested: the account owner approves sharing the chat history in the WhatsApp Business app, then it arrives."
	}
	if key.TestMode() {
		msg = "Sandbox sync completed: test keys sync nothing."
	}
	return msg, st, err
}

// Contacts takes a contacts sync's webhook for the sender: each contact the app added becomes
// a WhatsApp contact of the project, named as the app names it unless the project named it.
// Removals change nothing (the contact stays the project's).
func (s *Service) Contacts(ctx context.Context, snd *v1alpha1.Sender, cs meta.ContactSync) error {
	var named []message.NamedContact
	for _, c := range cs.Contacts {
		if c.Action == "remove" {
			continue
		}
		phone := c.PhoneNumber
		if phone != "" && !strings.HasPrefix(phone, "+") {
			phone = "+" + phone
		}
		name := c.FullName
		if name == "" {
			name = c.FirstName
		}
		named = append(named, message.NamedContact{Phone: phone, Name: name})
	}
	if _, err := s.Messages.NameContacts(ctx, snd.Namespace, named); err != nil {
		return err
	}
	return s.advance(ctx, snd, KindContacts, StatusCompleted, len(named))
}

// History takes a chunk of a history sync: its threads' messages mirrored into the
// conversations; the last chunk (progress 100) completes it, a declined one rejects it.
func (s *Service) History(ctx context.Context, snd *v1alpha1.Sender, hs meta.HistorySync) error {
	if hs.Declined {
		return s.advance(ctx, snd, KindHistory, StatusRejected, 0)
	}
	var ms []message.Mirror
	for _, th := range hs.Threads {
		contact := "+" + strings.TrimPrefix(th.WaID, "+")
		for _, m := range th.Messages {
			ms = append(ms, message.Mirror{Project: snd.Namespace, Sender: snd.Name, Kind: message.MirroredHistory,
				Outbound: m.From != contact, Inbound: m.Inbound})
		}
	}
	for _, m := range hs.Media {
		ms = append(ms, message.Mirror{Project: snd.Namespace, Sender: snd.Name, Kind: message.MirroredHistory, Inbound: m.Inbound})
	}
	n, err := s.Messages.ReceiveMirrored(ctx, ms)
	if err != nil {
		return err
	}
	status := StatusSyncing
	if hs.Progress >= 100 {
		status = StatusCompleted
	}
	return s.advance(ctx, snd, KindHistory, status, n)
}

// Echoes mirrors the messages the business sent from the app.
func (s *Service) Echoes(ctx context.Context, snd *v1alpha1.Sender, echoes []meta.HookMessage) error {
	ms := make([]message.Mirror, len(echoes))
	for i, m := range echoes {
		ms[i] = message.Mirror{Project: snd.Namespace, Sender: snd.Name, Kind: message.MirroredEcho, Outbound: true, Inbound: m.Inbound}
	}
	_, err := s.Messages.ReceiveMirrored(ctx, ms)
	return err
}

func (s *Service) advance(ctx context.Context, snd *v1alpha1.Sender, kind, status string, items int) error {
	return db.Planned(s.Pool).AdvanceWhatsAppSync(ctx, db.AdvanceWhatsAppSyncParams{Status: status, Items: int32(items), Project: snd.Namespace,
		Sender: snd.Name, TestMode: false, Kind: kind, Now: s.now()})
}
