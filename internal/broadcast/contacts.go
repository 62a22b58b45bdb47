package broadcast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// ContactInput is one recipient of an add-contacts request, as it came: the variables are
// checked to be objects of strings here, so one bad recipient does not refuse the others.
type ContactInput struct {
	Recipient               *string         `json:"recipient"`
	TemplateVariables       json.RawMessage `json:"templateVariables"`
	TemplateHeaderVariables json.RawMessage `json:"templateHeaderVariables"`
	TemplateButtonVariables json.RawMessage `json:"templateButtonVariables"`
}

// ContactError says why a recipient was not added.
type ContactError struct {
	Recipient string `json:"recipient,omitempty"`
	Reason    string `json:"reason"`
}

// Added is the answer to an add-contacts request.
type Added struct {
	Added      int            `json:"added"`
	Duplicates int            `json:"duplicates"`
	Invalid    int            `json:"invalid"`
	Errors     []ContactError `json:"errors,omitempty"`
}

// SetMaxRecipients bounds the recipients of one broadcast (n < 1: DefaultMaxRecipients): the
// estimate, the fan-out and a draft's storage grow with them.
func (s *Service) SetMaxRecipients(n int) { s.maxRecips = n }

func (s *Service) maxRecipients() int {
	if s.maxRecips < 1 {
		return DefaultMaxRecipients
	}
	return s.maxRecips
}

// AddContacts adds up to MaxContactsPerRequest recipients to a draft. A recipient that is not of
// the channel's kind, or whose variables are not objects of strings, is counted invalid with its
// reason; one already in the broadcast (from this request or an earlier one) is a duplicate.
func (s *Service) AddContacts(ctx context.Context, k Key, id string, contacts []ContactInput) (Added, error) {
	if len(contacts) == 0 {
		return Added{}, apperror.InvalidFields(apperror.FieldError{Path: "contacts", Message: "is required: one to 1000 recipients"})
	}
	if len(contacts) > MaxContactsPerRequest {
		return Added{}, apperror.InvalidFields(apperror.FieldError{Path: "contacts",
			Message: fmt.Sprintf("must have at most %d recipients per request, not %d", MaxContactsPerRequest, len(contacts))})
	}
	b, err := s.Get(ctx, k, id)
	if err != nil {
		return Added{}, err
	}
	var out Added
	rows := make([]checked, 0, len(contacts))
	for _, c := range contacts {
		row, fault := checkContact(b.Channel, c)
		if fault != nil {
			out.Invalid++
			out.Errors = append(out.Errors, ContactError{Recipient: deref(c.Recipient), Reason: fault.reason})
			continue
		}
		rows = append(rows, row)
	}
	out.Added, out.Duplicates, err = s.insert(ctx, k, id, "contacts", rows)
	return out, err
}

// insert stores checked recipients in a draft, each once, and counts them in; it returns how
// many were added and how many were already there (or twice in rows). Recipients that would
// take the broadcast past the installation's maximum refuse the request (400 on field, the
// request's list) and add nothing.
func (s *Service) insert(ctx context.Context, k Key, id, field string, rows []checked) (added, duplicates int, err error) {
	// Tried again once when the broadcast's day has no partition yet (a broadcast made while no
	// process kept the partitions ahead).
	err = partition.Retry(ctx, s.pool, func() error { return s.insertTx(ctx, k, id, field, rows, &added, &duplicates) })
	if err != nil {
		return 0, 0, err
	}
	return added, duplicates, nil
}

// insertTx is insert's transaction.
func (s *Service) insertTx(ctx context.Context, k Key, id, field string, rows []checked, added, duplicates *int) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if _, err := draft(ctx, q, k, id, "recipients are added to"); err != nil {
			return err
		}
		*added, *duplicates = 0, 0
		now := s.now().UTC()
		p := db.AddBroadcastContactsParams{BroadcastID: id}
		seen := map[string]bool{}
		for _, r := range rows {
			if seen[r.recipient] {
				*duplicates++
				continue
			}
			seen[r.recipient] = true
			cid, err := recipientID(id)
			if err != nil {
				return err
			}
			p.Ids = append(p.Ids, cid)
			p.CreatedAt = append(p.CreatedAt, now.Add(time.Duration(len(p.Ids))*time.Microsecond))
			p.Recipients = append(p.Recipients, r.recipient)
			p.RecipientTypes = append(p.RecipientTypes, r.kind)
			p.TemplateVariables = append(p.TemplateVariables, r.vars[0])
			p.TemplateHeaderVariables = append(p.TemplateHeaderVariables, r.vars[1])
			p.TemplateButtonVariables = append(p.TemplateButtonVariables, r.vars[2])
			p.VariableLengths = append(p.VariableLengths, variableLengths(r.vars[0]))
		}
		if len(p.Ids) > 0 {
			ids, err := q.AddBroadcastContacts(ctx, p)
			if err != nil {
				return fmt.Errorf("add recipients: %w", err)
			}
			*added = len(ids)
			*duplicates += len(p.Ids) - len(ids)
		}
		total, err := q.CountDraftContacts(ctx, db.CountDraftContactsParams{ID: id, N: int32(*added), Now: now})
		if err != nil {
			return fmt.Errorf("count recipients of %s: %w", id, err)
		}
		if limit := s.maxRecipients(); int(total) > limit {
			return apperror.InvalidFields(apperror.FieldError{Path: field, Message: fmt.Sprintf(
				"would take the broadcast to %d recipients; it may have at most %d (it has %d): nothing of this request was added",
				total, limit, int(total)-*added)})
		}
		return nil
	})
}

// recipientID makes the id of a recipient of broadcast: it carries the broadcast's time, not
// its own, since the recipients lie in their broadcast's partition (broadcast_at), which a
// lookup by the recipient's id alone (a message's recipient, an unsubscribe link) then names.
// A broadcast made before ids carried their time gives untimed ids, as it always did.
func recipientID(broadcast string) (string, error) {
	if at, ok := randid.TimeOf(broadcast); ok {
		return randid.Timed("bcc_", at)
	}
	return randid.Prefixed("bcc_", 20)
}

// checked is a recipient ready to store: normalised, with its type and its three variable
// objects as JSON (nil when absent).
type checked struct {
	recipient, kind string
	vars            [3][]byte
}

// contactFault is what is wrong with a recipient: the field (recipient, or one of the variable
// objects) and why.
type contactFault struct{ field, reason string }

var variableFields = [3]string{"templateVariables", "templateHeaderVariables", "templateButtonVariables"}

// checkContact checks a recipient for the channel.
func checkContact(channel string, c ContactInput) (checked, *contactFault) {
	if c.Recipient == nil || *c.Recipient == "" {
		return checked{}, &contactFault{"recipient", "recipient is required"}
	}
	recipient, kind, reason := recipientOf(channel, *c.Recipient)
	if reason != "" {
		return checked{}, &contactFault{"recipient", reason}
	}
	out := checked{recipient: recipient, kind: kind}
	for i, raw := range []json.RawMessage{c.TemplateVariables, c.TemplateHeaderVariables, c.TemplateButtonVariables} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			return checked{}, &contactFault{variableFields[i], variableFields[i] + " must be an object of strings"}
		}
		out.vars[i], _ = json.Marshal(m)
	}
	return out, nil
}

// Contacts lists a broadcast's recipients, one status's when status is not empty.
func (s *Service) Contacts(ctx context.Context, k Key, id, status string, p Page) ([]Contact, error) {
	if status != "" && !slices.Contains(ContactStatuses, status) {
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "status", Message: "must be a recipient status"})
	}
	if _, err := s.Get(ctx, k, id); err != nil {
		return nil, err
	}
	rows, err := db.Planned(s.pool).BroadcastContacts(ctx, db.BroadcastContactsParams{BroadcastID: id, Status: status,
		AfterTime: p.AfterTime, AfterID: p.AfterID, MaxRows: int32(p.Limit)})
	if err != nil {
		return nil, fmt.Errorf("list recipients: %w", err)
	}
	out := make([]Contact, len(rows))
	for i, r := range rows {
		out[i] = contactOf(r)
	}
	return out, nil
}

// RemoveContact takes a recipient out of a draft.
func (s *Service) RemoveContact(ctx context.Context, k Key, id, contactID string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if _, err := draft(ctx, q, k, id, "recipients are removed from"); err != nil {
			return err
		}
		if _, err := q.DeleteBroadcastContact(ctx, db.DeleteBroadcastContactParams{ID: contactID, BroadcastID: id}); err != nil {
			return notFoundContact(err, contactID)
		}
		_, err := q.CountDraftContacts(ctx, db.CountDraftContactsParams{ID: id, N: -1, Now: s.now().UTC()})
		return err
	})
}

func notFoundContact(err error, id string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return apperror.NotFoundf("No recipient %s in this broadcast.", id)
	}
	return fmt.Errorf("remove recipient %s: %w", id, err)
}
