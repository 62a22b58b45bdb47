package vectorindex

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/postgres/pgnotify"
)

// Listen holds a connection from pool LISTENing on channel and calls x.Invalidate(payload) for
// each notification (the payload is the key); senders run SELECT pg_notify(channel, key) in the
// transaction that changes the key's items, so the notification arrives once the change is
// visible. When the connection drops it reconnects with backoff, and once listening again it
// invalidates every graph: notifications sent while it was away are lost. It does the same when
// it first listens, for the graphs loaded before. Until then, searches are served from the graphs
// held, which may be stale; without Postgres they could not be reloaded anyway.
//
// It returns when ctx ends, with a nil error (pgnotify.Listen).
func (x *Index) Listen(ctx context.Context, pool *pgxpool.Pool, channel string, log logr.Logger) error {
	return pgnotify.Listen(ctx, pool, channel, pgnotify.Handler{
		Listening: func(again bool) {
			x.InvalidateAll()
			if again {
				log.Info("listening for knowledge index invalidations again; dropped every graph", "channel", channel)
			}
		},
		Notify: x.Invalidate,
	}, log)
}
