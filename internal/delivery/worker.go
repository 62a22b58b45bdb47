package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/pkg/webhook"
)

// MaxAttempts is how many times one delivery is tried (spec: Retries 1).
const MaxAttempts = 5

// Schedule is when attempts 2 to 5 happen, counted from the first (spec: Retries 1).
var Schedule = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}

// responseKept is how much of a receiver's answer the attempt log keeps.
const responseKept = 1024

// DeliverArgs is the job that makes one attempt of one delivery.
type DeliverArgs struct {
	DeliveryID string `json:"deliveryId"`
	// Mode is the event's mode, sent as X-Service-Mode; empty for events about neither, and for
	// jobs enqueued before deliveries carried it.
	Mode Mode `json:"mode,omitempty"`
}

// Kind names the job kind in the queue.
func (DeliverArgs) Kind() string { return "webhook.deliver" }

// InsertOpts: five attempts, on their own queue so a slow receiver never holds up other jobs.
func (DeliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: MaxAttempts, Queue: Queue}
}

// Queue is the queue of deliveries.
const Queue = "webhooks"

// WorkerOptions configure the worker.
type WorkerOptions struct {
	Client ClientOptions
	// Schedule replaces the spec's schedule (tests).
	Schedule []time.Duration
	// PerHostConcurrency bounds the attempts in flight to one host; 0 is
	// DefaultPerHostConcurrency.
	PerHostConcurrency int
}

// Worker makes delivery attempts.
type Worker struct {
	river.WorkerDefaults[DeliverArgs]
	pool     *pgxpool.Pool
	resolver resolver
	client   *http.Client
	opts     WorkerOptions
	now      func() time.Time
	hosts    *hostSlots
}

// NewWorker returns the delivery worker: it reads endpoints through reader (the informer cache)
// and a signing Secret the cache has not seen yet through live (the API server).
func NewWorker(pool *pgxpool.Pool, reader, live client.Reader, o WorkerOptions) *Worker {
	if o.Schedule == nil {
		o.Schedule = Schedule
	}
	return &Worker{pool: pool, resolver: resolver{reader: reader, live: live}, client: newHTTPClient(o.Client), opts: o, now: time.Now,
		hosts: newHostSlots(o.PerHostConcurrency)}
}

// NextRetry puts attempt n+1 at the schedule's offset from the delivery's first attempt, or
// at once when that time has passed.
func (w *Worker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	return nextAttempt(job.CreatedAt, job.Attempt, w.opts.Schedule, w.now())
}

func nextAttempt(first time.Time, attempt int, schedule []time.Duration, now time.Time) time.Time {
	i := min(max(attempt-1, 0), len(schedule)-1)
	if at := first.Add(schedule[i]); at.After(now) {
		return at
	}
	return now
}

// Timeout bounds a job: the HTTP attempt has its own, shorter timeout (10 s). It stays below
// worker.RescueStuckJobsAfter, so a job whose process died is run again soon after.
func (w *Worker) Timeout(*river.Job[DeliverArgs]) time.Duration { return 20 * time.Second }

// Work makes one attempt and records it. A failed attempt returns an error so the queue tries
// again on schedule; after the last one, the delivery is marked failed.
func (w *Worker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	q := db.New(w.pool)
	d, err := q.GetWebhookDelivery(ctx, job.Args.DeliveryID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // removed with its project
	}
	if err != nil {
		return fmt.Errorf("read delivery %s: %w", job.Args.DeliveryID, err)
	}
	if d.Status != "pending" {
		return nil
	}
	ep, err := w.resolver.resolve(ctx, Kind(d.EndpointKind), d.Project, d.EndpointName, d.Event)
	// A webhook without its signing secret (a user's Secret not created yet) fails this
	// attempt, to be retried on the schedule: nothing unsigned is sent.
	noSecret := errors.Is(err, errNoSecret)
	if err != nil && !noSecret {
		return err
	}
	now := w.now().UTC()
	if ep == nil {
		reason := "the endpoint was removed, switched off or unsubscribed before this attempt"
		return q.FinishWebhookDelivery(ctx, db.FinishWebhookDeliveryParams{ID: d.ID, Status: "cancelled", FinishedAt: &now, LastError: &reason})
	}

	var statusCode int
	var body []byte
	var sendErr error
	if noSecret {
		sendErr = err
	} else {
		// A receiver at its bound waits its turn without taking a slot others could use.
		host := hostOf(ep.url)
		if !w.hosts.acquire(ctx, host, hostWait) {
			return river.JobSnooze(busyHostWait())
		}
		defer w.hosts.release(host)
		statusCode, body, sendErr = w.send(ctx, d, ep, job.Args.Mode, now)
	}
	latency := int32(w.now().Sub(now).Milliseconds())
	rec := db.RecordWebhookAttemptParams{
		DeliveryID: d.ID, Attempt: int32(job.Attempt), StartedAt: now, Url: withoutUserinfo(ep.url), LatencyMs: latency,
		Status: "pending",
	}
	if statusCode > 0 {
		code := int32(statusCode)
		rec.StatusCode = &code
		kept := keep(body)
		rec.ResponseBody = &kept
	}
	ok := sendErr == nil && statusCode >= 200 && statusCode < 300
	// A URL this installation never delivers to fails the delivery now: retrying cannot help.
	var badURL *URLError
	last := job.Attempt >= MaxAttempts || errors.As(sendErr, &badURL)
	if !ok {
		msg := fmt.Sprintf("receiver answered %d", statusCode)
		if sendErr != nil {
			msg = sendErr.Error()
		}
		rec.Error = &msg
	}
	finished := w.now().UTC()
	switch {
	case ok:
		rec.Status, rec.FinishedAt = "delivered", &finished
	case last:
		rec.Status, rec.FinishedAt = "failed", &finished
	}
	if err := q.RecordWebhookAttempt(ctx, rec); err != nil {
		return fmt.Errorf("record attempt %d of delivery %s: %w", job.Attempt, d.ID, err)
	}
	if ok || last {
		return nil
	}
	return fmt.Errorf("delivery %s attempt %d: %s", d.ID, job.Attempt, *rec.Error)
}

// send makes the HTTP request: the body in the endpoint's envelope, signed with its current
// secret and signature version, with the event's mode when it has one.
func (w *Worker) send(ctx context.Context, d db.WebhookDelivery, ep *endpoint, mode Mode, now time.Time) (int, []byte, error) {
	u, err := w.opts.Client.URLPolicy().Check(ep.url)
	if err != nil {
		return 0, nil, err
	}
	body, err := render(d, now)
	if err != nil {
		return 0, nil, fmt.Errorf("render delivery: %w", err)
	}
	sig, err := webhook.Sign(ep.secret, body, now, ep.signatureVersion)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Switchboard-Webhooks/1")
	req.Header.Set(webhook.SignatureHeader, sig)
	req.Header.Set(webhook.EventHeader, d.Event)
	if mode != "" {
		req.Header.Set(ModeHeader, string(mode))
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	kept, _ := io.ReadAll(io.LimitReader(resp.Body, responseKept))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection is reused
	return resp.StatusCode, kept, nil
}

// keep returns the kept part of an answer as valid UTF-8 text.
func keep(b []byte) string {
	if len(b) > responseKept {
		b = b[:responseKept]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
