// Package pgnotify listens for Postgres notifications on a connection of its own, and again after
// that connection drops.
package pgnotify

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Backoff between attempts to listen again after the connection drops: doubling from backoffMin
// to backoffMax, jittered so that replicas do not reconnect in step after Postgres restarts.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 30 * time.Second
)

// Handler is what a listener does.
type Handler struct {
	// Listening is called each time LISTEN has succeeded: first (again false) and after each
	// reconnection (again true). Notifications sent while nothing listened are lost, so this is
	// where a listener catches up.
	Listening func(again bool)
	// Notify is called with each notification's payload, in order, on the listening goroutine.
	Notify func(payload string)
}

// Listen holds a connection from pool LISTENing on channel and calls h for each notification.
// Senders notify (pg_notify) in the transaction that makes the change, so a notification arrives
// once its change is visible. When the connection drops it reconnects with backoff, logging each
// failure on log.
//
// The connection is taken out of the pool (it is in LISTEN state for good) and closed when Listen
// returns, which is when ctx ends; the error is then nil.
func Listen(ctx context.Context, pool *pgxpool.Pool, channel string, h Handler, log logr.Logger) error {
	if channel == "" {
		return errors.New("pgnotify: Listen needs a channel")
	}
	backoff, again := backoffMin, false
	for {
		listened, err := listenOnce(ctx, pool, channel, h, again)
		if ctx.Err() != nil {
			return nil
		}
		if listened {
			backoff = backoffMin
		}
		again = true
		wait := backoff/2 + rand.N(backoff/2+1)
		log.Error(err, "listening for notifications; listening again", "channel", channel, "in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// listenOnce listens on one connection until it fails; listened reports whether it got as far as
// LISTEN.
func listenOnce(ctx context.Context, pool *pgxpool.Pool, channel string, h Handler, again bool) (listened bool, err error) {
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
	if h.Listening != nil {
		h.Listening(again)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		if h.Notify != nil {
			h.Notify(n.Payload)
		}
	}
}
