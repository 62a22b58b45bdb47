package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/pkg/webhook"
)

// MaxAttempts is how many times one delivery is tried (spec: Retries 1).
const MaxAttempts = 5

// Schedule is when attempts 2 to 5 happen, counted from the first (spec: Retries 1).
var Schedule = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}

// ClaimHorizon is how far back the worker looks for due deliveries: the schedule ends 81 minutes
// after a delivery is made, and an attempt a busy receiver put off comes back within seconds, so
// a week holds every delivery still pending while touching a week of partitions, not a year's.
const ClaimHorizon = 7 * 24 * time.Hour

// responseKept is how much of a receiver's answer the attempt log keeps.
const responseKept = 1024

// WorkerOptions configure the worker.
type WorkerOptions struct {
	Client ClientOptions
	// Schedule replaces the spec's schedule (tests).
	Schedule []time.Duration
	// Concurrency is how many attempts one process makes at once; 0 is DefaultConcurrency.
	Concurrency int
	// PerHostConcurrency bounds the attempts in flight to one host; 0 is
	// DefaultPerHostConcurrency.
	PerHostConcurrency int
	// Log receives what goes wrong with the queue itself (never a payload or a secret).
	Log logr.Logger
	// Metrics, when set, gets the attempts' counter and latency (metrics.go).
	Metrics prometheus.Registerer
}

// DefaultConcurrency is how many attempts one worker process makes at once: they mostly wait on
// receivers.
const DefaultConcurrency = 200

// The queue's rhythm. A claimed delivery is leased for claimLease: a worker that dies with it
// leaves it due again after that (the HTTP attempt itself is bounded by 10 s). An idle worker
// looks for due deliveries every idlePoll; a busy one claims again once claimBatch slots are
// free. Outcomes are recorded in batches of up to recordBatch, at most recordDelay after the
// first of them. A shutdown gives attempts under way shutdownGrace to finish.
const (
	claimLease    = time.Minute
	idlePoll      = 50 * time.Millisecond
	busyPoll      = 5 * time.Millisecond
	claimBatch    = 20
	recordBatch   = 200
	recordDelay   = 10 * time.Millisecond
	shutdownGrace = 15 * time.Second
)

// Worker makes delivery attempts: it claims due deliveries from webhook_deliveries in batches,
// makes their attempts concurrently, and records the outcomes in batches. Every worker process
// runs one; they share the table without coordination (FOR UPDATE SKIP LOCKED).
type Worker struct {
	pool     *pgxpool.Pool
	resolver resolver
	client   *http.Client
	opts     WorkerOptions
	now      func() time.Time
	hosts    *hostSlots
	metrics  *workerMetrics
}

// NewWorker returns the delivery worker: it reads endpoints through reader (the informer cache)
// and a signing Secret the cache has not seen yet through live (the API server).
func NewWorker(pool *pgxpool.Pool, reader, live client.Reader, o WorkerOptions) *Worker {
	if o.Schedule == nil {
		o.Schedule = Schedule
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return &Worker{pool: pool, resolver: resolver{reader: reader, live: live}, client: newHTTPClient(o.Client), opts: o, now: time.Now,
		hosts: newHostSlots(o.PerHostConcurrency), metrics: newWorkerMetrics(o.Metrics)}
}

// NeedLeaderElection: every worker replica delivers.
func (w *Worker) NeedLeaderElection() bool { return false }

// Start delivers until ctx ends, then gives the attempts under way shutdownGrace to finish and
// records them; those cut off are attempted again when their lease ends.
func (w *Worker) Start(ctx context.Context) error {
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	results := make(chan outcome, w.opts.Concurrency)
	recorded := make(chan struct{})
	go func() { defer close(recorded); w.record(results) }()

	slots := make(chan struct{}, w.opts.Concurrency)
	var running sync.WaitGroup
	lastClaim := time.Time{}
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			done := make(chan struct{})
			go func() { running.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(shutdownGrace):
				cancelWork()
				<-done
			}
			close(results)
			<-recorded
			return nil
		case <-time.After(wait):
		}
		free := cap(slots) - len(slots)
		if free == 0 || (free < claimBatch && time.Since(lastClaim) < idlePoll) {
			wait = busyPoll
			continue
		}
		lastClaim = time.Now()
		now := w.now().UTC()
		claimed, err := db.Planned(w.pool).ClaimWebhookDeliveries(ctx, db.ClaimWebhookDeliveriesParams{
			Now: now, LeaseUntil: now.Add(claimLease), Max: int32(free), MadeSince: now.Add(-ClaimHorizon)})
		if err != nil {
			if ctx.Err() == nil {
				w.opts.Log.Error(err, "claim webhook deliveries; trying again in 1 s")
			}
			wait = time.Second
			continue
		}
		for _, d := range claimed {
			slots <- struct{}{}
			running.Add(1)
			go func() {
				defer running.Done()
				defer func() { <-slots }()
				results <- w.attempt(work, d)
			}()
		}
		wait = idlePoll
		if len(claimed) == free {
			wait = 0 // there may be more due
		}
	}
}

// outcome is what became of one claimed delivery.
type outcome struct {
	id      string
	attempt int32
	// made: a request was sent (or could not be); false gives the claim's count back.
	made       bool
	status     string // pending, delivered, failed, cancelled
	next       time.Time
	startedAt  time.Time
	url        string
	statusCode int32
	latencyMs  int32
	err        string
	body       string
}

// record writes outcomes in batches until results is closed.
func (w *Worker) record(results <-chan outcome) {
	var batch []outcome
	flush := func() {
		if len(batch) > 0 {
			w.flush(batch)
			batch = batch[:0]
		}
	}
	for {
		r, ok := <-results
		if !ok {
			flush()
			return
		}
		batch = append(batch, r)
		deadline := time.After(recordDelay)
	fill:
		for len(batch) < recordBatch {
			select {
			case r, ok := <-results:
				if !ok {
					flush()
					return
				}
				batch = append(batch, r)
			case <-deadline:
				break fill
			}
		}
		flush()
	}
}

// flush records a batch, trying again while Postgres is away; a batch it cannot record is
// attempted again when its leases end (at least once, never lost).
func (w *Worker) flush(batch []outcome) {
	var p db.FinishWebhookAttemptsParams
	finished := w.now().UTC()
	for _, r := range batch {
		p.Ids = append(p.Ids, r.id)
		p.Attempts = append(p.Attempts, r.attempt)
		p.Made = append(p.Made, r.made)
		p.Statuses = append(p.Statuses, r.status)
		p.NextAttemptsAt = append(p.NextAttemptsAt, r.next)
		p.StartedAt = append(p.StartedAt, r.startedAt)
		p.Urls = append(p.Urls, r.url)
		p.StatusCodes = append(p.StatusCodes, r.statusCode)
		p.LatenciesMs = append(p.LatenciesMs, r.latencyMs)
		p.Errors = append(p.Errors, r.err)
		p.ResponseBodies = append(p.ResponseBodies, r.body)
		p.FinishedAt = append(p.FinishedAt, finished)
	}
	p.CreatedFrom, p.CreatedTo = partition.Bounds(p.Ids)
	backoff := 100 * time.Millisecond
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := db.Planned(w.pool).FinishWebhookAttempts(ctx, p)
		cancel()
		if err == nil {
			w.metrics.recorded(batch)
			return
		}
		if try == 8 {
			w.opts.Log.Error(err, "record webhook attempts; they will be attempted again when their lease ends", "deliveries", len(batch))
			return
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
}

// attempt makes the attempt of one claimed delivery.
func (w *Worker) attempt(ctx context.Context, d db.WebhookDelivery) outcome {
	now := w.now().UTC()
	r := outcome{id: d.ID, attempt: d.Attempts, status: "pending", startedAt: now}
	ep, err := w.resolver.resolve(ctx, Kind(d.EndpointKind), d.Project, d.EndpointName, d.Event)
	// A webhook without its signing secret (a user's Secret not created yet) fails this
	// attempt, to be retried on the schedule: nothing unsigned is sent.
	noSecret := errors.Is(err, errNoSecret)
	if errors.Is(err, ErrDisabled) {
		// Nothing goes to a disabled endpoint: the delivery fails without an attempt, to be
		// replayed once the endpoint works again (enabling it replays nothing by itself).
		r.status, r.err = "failed", err.Error()
		return r
	}
	if errors.Is(err, errSecretNotYet) {
		// The controller makes it within seconds: not an attempt.
		r.next, r.err = now.Add(2*time.Second), err.Error()
		return r
	}
	if err != nil && !noSecret {
		// The endpoint could not be read (the cache is not ready): not an attempt.
		r.next, r.err = now.Add(5*time.Second), err.Error()
		return r
	}
	if ep == nil {
		r.status, r.err = "cancelled", "the endpoint was removed, switched off or unsubscribed before this attempt"
		return r
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
			r.next = now.Add(busyHostWait())
			return r
		}
		defer w.hosts.release(host)
		statusCode, body, sendErr = w.send(ctx, d, ep, Mode(d.Mode), now)
		if ctx.Err() != nil {
			// Cut off by a shutdown: not the receiver's failure, and not an attempt.
			r.next = now
			return r
		}
	}
	r.made, r.url, r.latencyMs = true, withoutUserinfo(ep.url), int32(w.now().Sub(now).Milliseconds())
	if statusCode > 0 {
		r.statusCode, r.body = int32(statusCode), keep(body)
	}
	ok := sendErr == nil && statusCode >= 200 && statusCode < 300
	// A URL this installation never delivers to fails the delivery now: retrying cannot help.
	var badURL *URLError
	// A replay is one attempt more than the delivery had: its limit.
	last := d.Attempts >= d.AttemptLimit || errors.As(sendErr, &badURL)
	if !ok {
		r.err = fmt.Sprintf("receiver answered %d", statusCode)
		if sendErr != nil {
			r.err = sendErr.Error()
		}
	}
	switch {
	case ok:
		r.status = "delivered"
	case last:
		r.status = "failed"
	default:
		r.next = nextAttempt(d.CreatedAt, int(d.Attempts), w.opts.Schedule, w.now())
	}
	return r
}

// nextAttempt puts attempt n+1 at the schedule's offset from the delivery's creation, or at once
// when that time has passed.
func nextAttempt(first time.Time, attempt int, schedule []time.Duration, now time.Time) time.Time {
	i := min(max(attempt-1, 0), len(schedule)-1)
	if at := first.Add(schedule[i]); at.After(now) {
		return at
	}
	return now
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
