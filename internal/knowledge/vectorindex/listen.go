package vectorindex

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Backoff between attempts to listen again after the connection drops: doubling from
// listenBackoffMin to listenBackoffMax, jittered so that replicas do not reconnect in step after
// Postgres restarts.
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 30 * time.Second
)

// Listen holds a connection from pool LISTENing on channel and calls x.Invalidate(payload) for
// each notification (the payload is the key); senders run SELECT pg_notify(channel, key) in the
// transaction that changes the key's items, so the notification arrives once the change is
// visible. When the connection drops it reconnects with backoff, and once listening again it
// invalidates every graph: notifications sent while it was away are lost. It does the same when
// it first listens, for the graphs loaded before. Until then, searches are served from the graphs
// held, which may be stale; without Postgres they could not be reloaded anyway.
//
// The connection is taken out of the pool (it is in LISTEN state for good) and closed when Listen
// returns, which is when ctx ends; the error is then nil.
func (x *Index) Listen(ctx context.Context, pool *pgxpool.Pool, channel string, log logr.Logger) error {
	if channel == "" {
		return errors.New("vectorindex: Listen needs a channel")
	}
	backoff, again := listenBackoffMin, false
	for {
		listened, err := x.listenOnce(ctx, pool, channel, log, again)
		if ctx.Err() != nil {
			return nil
		}
		if listened {
			backoff = listenBackoffMin
		}
		again = true
		wait := backoff/2 + rand.N(backoff/2+1)
		log.Error(err, "listening for knowledge index invalidations; listening again", "channel", channel, "in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		backoff = min(2*backoff, listenBackoffMax)
	}
}

// listenOnce listens on one connection until it fails; listened reports whether it got as far as
// LISTEN. again says an earlier connection failed, which is worth a log line once listening.
func (x *Index) listenOnce(ctx context.Context, pool *pgxpool.Pool, channel string, log logr.Logger, again bool) (listened bool, err error) {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	conn := pc.Hijack()
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return false, err
	}
	x.InvalidateAll()
	if again {
		log.Info("listening for knowledge index invalidations again; dropped every graph", "channel", channel)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		x.Invalidate(n.Payload)
	}
}
