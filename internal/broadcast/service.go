package broadcast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// Service keeps a project's broadcasts, per mode: a test key's broadcasts go to the sandbox and
// are not a live key's.
type Service struct {
	pool       *pgxpool.Pool
	reader     client.Reader
	queue      Queue
	deliveries Deliveries
	policies   Policies
	tenDLC     TenDLC
	money      Money
	send       SendPath
	pacer      Pacer
	// maxRecips bounds a broadcast's recipients (0: DefaultMaxRecipients).
	maxRecips int
	now       func() time.Time
	// claimed is where this process's last chunk of each sending broadcast ended (claim.go).
	claimed claimMarks
}

// NewService returns the broadcasts over pool; reader reads Projects, Senders and Templates;
// queue takes their jobs, deliveries their events, and policies review them.
func NewService(pool *pgxpool.Pool, reader client.Reader, queue Queue, deliveries Deliveries, policies Policies) *Service {
	return &Service{pool: pool, reader: reader, queue: queue, deliveries: deliveries, policies: policies, now: time.Now}
}

// Key is who asks: a project, in a mode.
type Key struct {
	Project  string
	TestMode bool
}

// ErrDuplicate is a create whose idempotency key made a broadcast already; Original is it.
type ErrDuplicate struct{ Original Broadcast }

func (e *ErrDuplicate) Error() string { return "broadcast already created with this idempotency key" }

// Create stores a draft broadcast.
func (s *Service) Create(ctx context.Context, k Key, in Input) (Broadcast, error) {
	var f fields
	errs := in.apply(&f, true, s.now())
	if len(errs) == 0 {
		refErrs, err := s.checkReferences(ctx, k, f)
		if err != nil {
			return Broadcast{}, err
		}
		errs = refErrs
	}
	if len(errs) > 0 {
		return Broadcast{}, apperror.InvalidFields(errs...)
	}
	// The id carries the broadcast's time, which names its recipients' partition (recipientID).
	now := s.now().UTC()
	id, err := randid.Timed("bc_", now)
	if err != nil {
		return Broadcast{}, err
	}
	content, metadata := jsonOrNil(f.content), jsonOrNil(f.metadata)
	row, err := db.Planned(s.pool).InsertBroadcast(ctx, db.InsertBroadcastParams{ID: id, Project: k.Project, TestMode: k.TestMode,
		Name: f.name, Channel: f.channel, MessageType: f.messageType, Text: f.text, Content: content, EmailSubject: f.emailSubject,
		EmailHtmlBody: f.htmlBody, UnsubscribeUrl: f.unsubscribeURL, SenderID: f.senderID, Metadata: metadata, IdempotencyKey: in.IdempotencyKey,
		ScheduledAt: f.scheduledAt, Now: now})
	if errors.Is(err, pgx.ErrNoRows) && in.IdempotencyKey != nil {
		orig, err := db.Planned(s.pool).BroadcastByIdempotencyKey(ctx, db.BroadcastByIdempotencyKeyParams{Project: k.Project,
			TestMode: k.TestMode, IdempotencyKey: in.IdempotencyKey})
		if err != nil {
			return Broadcast{}, fmt.Errorf("read broadcast of idempotency key: %w", err)
		}
		return Broadcast{}, &ErrDuplicate{Original: viewOf(orig)}
	}
	if err != nil {
		return Broadcast{}, fmt.Errorf("store broadcast: %w", err)
	}
	return viewOf(row), nil
}

// checkReferences checks the sender (it exists and carries the channel) and the template (it
// is the project's).
func (s *Service) checkReferences(ctx context.Context, k Key, f fields) ([]apperror.FieldError, error) {
	var errs []apperror.FieldError
	if f.senderID != nil {
		var snd v1alpha1.Sender
		err := s.reader.Get(ctx, client.ObjectKey{Namespace: k.Project, Name: *f.senderID}, &snd)
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, apperror.FieldError{Path: "senderId", Message: "is not a sender of this project"})
		case err != nil:
			return nil, fmt.Errorf("read sender %s: %w", *f.senderID, err)
		case f.channel != "smart" && snd.Address(v1alpha1.Channel(f.channel)) == "":
			errs = append(errs, apperror.FieldError{Path: "senderId", Message: fmt.Sprintf("sender %s has no %s channel", snd.Name, f.channel)})
		}
	}
	if f.content != nil && f.content.TemplateID != nil && *f.content.TemplateID != "" {
		var t v1alpha1.Template
		err := s.reader.Get(ctx, client.ObjectKey{Namespace: k.Project, Name: *f.content.TemplateID}, &t)
		switch {
		case apierrors.IsNotFound(err):
			errs = append(errs, apperror.FieldError{Path: "content.templateId", Message: "is not a template of this project"})
		case err != nil:
			return nil, fmt.Errorf("read template %s: %w", *f.content.TemplateID, err)
		}
	}
	return errs, nil
}

// Get returns one broadcast.
func (s *Service) Get(ctx context.Context, k Key, id string) (Broadcast, error) {
	var out Broadcast
	err := s.snapshot(ctx, func(q *db.Queries) error {
		row, err := q.Broadcast(ctx, db.BroadcastParams{ID: id, Project: k.Project, TestMode: k.TestMode})
		if err != nil {
			return notFound(err, id)
		}
		out, err = viewIn(ctx, q, row)
		return err
	})
	return out, err
}

// CurvePoint is how many of a broadcast's recipients reached a status within one bucket of time.
type CurvePoint struct {
	At         time.Time
	Status     string
	Recipients int64
}

// SendCurve returns how the broadcast's recipients were processed over time, in buckets of
// bucket (at least a second), for the console's chart, in one read; another project's broadcast
// has none.
func (s *Service) SendCurve(ctx context.Context, k Key, id string, bucket time.Duration) ([]CurvePoint, error) {
	rows, err := db.Planned(s.pool).BroadcastSendCurve(ctx, db.BroadcastSendCurveParams{BroadcastID: id,
		BucketSeconds: max(bucket, time.Second).Seconds(), Project: k.Project, TestMode: k.TestMode})
	if err != nil {
		return nil, fmt.Errorf("read the send of broadcast %s: %w", id, err)
	}
	out := make([]CurvePoint, len(rows))
	for i, r := range rows {
		out[i] = CurvePoint{At: r.At, Status: r.Status, Recipients: r.Recipients}
	}
	return out, nil
}

// snapshot runs read in one snapshot of the database. A broadcast's counters are its row plus
// the changes not folded into it yet (unfolded): read at two moments, a fold between them would
// move changes from the second read into the row after the first read saw it, and the counters
// would miss them.
func (s *Service) snapshot(ctx context.Context, read func(q *db.Queries) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error { return read(db.Planned(tx)) })
}

// Page is where a list starts: after the item of this creation time and id.
type Page struct {
	AfterTime time.Time
	AfterID   string
	Limit     int
}

// List lists a project's broadcasts, one status's when status is not empty.
func (s *Service) List(ctx context.Context, k Key, status string, p Page) ([]Broadcast, error) {
	if status != "" && !slices.Contains(Statuses, status) {
		return nil, apperror.InvalidFields(apperror.FieldError{Path: "status", Message: "must be a broadcast status"})
	}
	var rows []db.Broadcast
	err := s.snapshot(ctx, func(q *db.Queries) error {
		var err error
		rows, err = q.Broadcasts(ctx, db.BroadcastsParams{Project: k.Project, TestMode: k.TestMode, Status: status,
			AfterTime: p.AfterTime, AfterID: p.AfterID, MaxRows: int32(p.Limit)})
		if err != nil {
			return fmt.Errorf("list broadcasts: %w", err)
		}
		return unfolded(ctx, q, rows)
	})
	if err != nil {
		return nil, err
	}
	out := make([]Broadcast, len(rows))
	for i, r := range rows {
		out[i] = viewOf(r)
	}
	return out, nil
}

// draft locks a broadcast that must be a draft for what is asked (v1 answers 400 otherwise;
// v2's campaigns 409 invalid_status, which WrongStatus tells apart).
func draft(ctx context.Context, q *db.Queries, k Key, id, what string) (db.Broadcast, error) {
	row, err := q.BroadcastForUpdate(ctx, db.BroadcastForUpdateParams{ID: id, Project: k.Project, TestMode: k.TestMode})
	if err != nil {
		return db.Broadcast{}, notFound(err, id)
	}
	if row.Status != StatusDraft {
		return db.Broadcast{}, &WrongStatus{Status: row.Status,
			Err: apperror.New(apperror.Invalid, "invalid_request", fmt.Sprintf("Broadcast %s is %s: %s only a draft.", id, row.Status, what))}
	}
	return row, nil
}

// WrongStatus is an operation on a broadcast in a state that does not allow it.
type WrongStatus struct {
	Status string
	Err    *apperror.Error
}

func (e *WrongStatus) Error() string { return e.Err.Error() }
func (e *WrongStatus) Unwrap() error { return e.Err }

// Update changes a draft.
func (s *Service) Update(ctx context.Context, k Key, id string, in Input) (Broadcast, error) {
	var out Broadcast
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		row, err := draft(ctx, q, k, id, "one changes")
		if err != nil {
			return err
		}
		f := fieldsOf(row)
		if errs := in.apply(&f, false, s.now()); len(errs) > 0 {
			return apperror.InvalidFields(errs...)
		}
		refErrs, err := s.checkReferences(ctx, k, f)
		if err != nil {
			return err
		}
		if len(refErrs) > 0 {
			return apperror.InvalidFields(refErrs...)
		}
		row, err = q.UpdateBroadcastDraft(ctx, db.UpdateBroadcastDraftParams{ID: id, Name: f.name, Text: f.text,
			Content: jsonOrNil(f.content), EmailSubject: f.emailSubject, EmailHtmlBody: f.htmlBody, UnsubscribeUrl: f.unsubscribeURL,
			Metadata: jsonOrNil(f.metadata),
			Now:      s.now().UTC()})
		out = viewOf(row)
		return err
	})
	return out, err
}

// Delete deletes a draft and its recipients.
func (s *Service) Delete(ctx context.Context, k Key, id string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		if _, err := draft(ctx, q, k, id, "one deletes"); err != nil {
			return err
		}
		return q.DeleteBroadcast(ctx, id)
	})
}

func notFound(err error, id string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return apperror.NotFoundf("No broadcast %s in this project.", id)
	}
	return fmt.Errorf("read broadcast %s: %w", id, err)
}

func jsonOrNil(v any) []byte {
	switch x := v.(type) {
	case *Content:
		if x == nil {
			return nil
		}
	case map[string]string:
		if x == nil {
			return nil
		}
	}
	b, _ := json.Marshal(v)
	return b
}
