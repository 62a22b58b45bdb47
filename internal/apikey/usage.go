package apikey

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// usageGranularity: lastUsedAt is kept to the minute. Requests never write to the key's row; a
// replica enqueues at most one touch job per key per minute, and the queue drops duplicates.
const usageGranularity = time.Minute

// TouchArgs is the job that moves a key's lastUsedAt forward.
type TouchArgs struct {
	KeyID  string    `json:"keyId" river:"unique"`
	UsedAt time.Time `json:"usedAt"`
}

// Kind names the job kind in the queue.
func (TouchArgs) Kind() string { return "api_key.touch" }

// InsertOpts makes touches of one key unique per minute across every replica.
func (TouchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByPeriod: usageGranularity}}
}

// TouchWorker works TouchArgs jobs.
type TouchWorker struct {
	river.WorkerDefaults[TouchArgs]
	Keys *Service
}

// Work records the use.
func (w *TouchWorker) Work(ctx context.Context, job *river.Job[TouchArgs]) error {
	return w.Keys.Touch(ctx, job.Args.KeyID, job.Args.UsedAt)
}

// UsageRecorder turns authenticated requests into touch jobs, at most one per key per minute per
// replica, off the request's path.
type UsageRecorder struct {
	queue *river.Client[pgx.Tx]
	log   logr.Logger
	mu    sync.Mutex
	last  map[string]time.Time
}

// NewUsageRecorder returns a recorder that enqueues through queue.
func NewUsageRecorder(queue *river.Client[pgx.Tx], log logr.Logger) *UsageRecorder {
	return &UsageRecorder{queue: queue, log: log, last: map[string]time.Time{}}
}

// Record notes that keyID was used at at.
func (u *UsageRecorder) Record(keyID string, at time.Time) {
	u.mu.Lock()
	if prev, ok := u.last[keyID]; ok && at.Sub(prev) < usageGranularity {
		u.mu.Unlock()
		return
	}
	u.last[keyID] = at
	u.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := u.queue.Insert(ctx, TouchArgs{KeyID: keyID, UsedAt: at.UTC()}, nil); err != nil {
			u.log.Error(err, "enqueue api key touch", "apiKeyId", keyID)
		}
	}()
}
