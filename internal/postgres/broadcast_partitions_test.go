package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/partition"
	"github.com/switchboard-io/switchboard/internal/postgres"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// An installation upgraded with broadcasts under way: migration 42 and the conversion that
// follows it keep every recipient, a broadcast made before ids carried their time goes on
// (its recipients list, take more, answer their unsubscribe links and move with their messages),
// and a broadcast made after lies in its own day's partition.
func TestBroadcastRecipientsConvertWithTheirBroadcasts(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewEmptyPool(t)
	if _, err := postgres.MigrateTo(ctx, pool, 41); err != nil {
		t.Fatal(err)
	}
	const old = "bc_0aZ9xY8wV7uT6sR5qP4o3n2m" // an untimed id: "bc_" and 24 characters
	if _, err := pool.Exec(ctx, `
		INSERT INTO broadcasts (id, project, test_mode, name, channel, message_type, status, created_at, updated_at)
		VALUES ($1, 'p', false, 'old', 'email', 'text', 'sending', now() - interval '3 days', now())`, old); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO broadcast_contacts (id, broadcast_id, recipient, recipient_type, status, created_at)
		SELECT 'bcc_' || lpad(i::text, 20, '0'), $1, 'r' || i || '@example.com', 'email', 'pending', now() - interval '3 days' + i * interval '1 ms'
		FROM generate_series(1, 1000) AS i`, old); err != nil {
		t.Fatal(err)
	}
	applied, err := postgres.Migrate(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(applied.Partitioned, "broadcast_contacts") {
		t.Fatalf("broadcast_contacts not converted: %+v", applied)
	}
	var legacy int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM broadcast_contacts_legacy WHERE broadcast_at = 'epoch'`).Scan(&legacy); err != nil {
		t.Fatal(err)
	}
	if legacy != 1000 {
		t.Fatalf("%d of the old broadcast's 1,000 recipients in the partition of earlier rows", legacy)
	}

	q := db.Planned(pool)
	page, err := q.BroadcastContacts(ctx, db.BroadcastContactsParams{BroadcastID: old, MaxRows: 50})
	if err != nil || len(page) != 50 || page[0].ID != "bcc_00000000000000000001" {
		t.Fatalf("the old broadcast's first page: %d rows, %v", len(page), err)
	}
	added, err := q.AddBroadcastContacts(ctx, addParams(old, []string{"bcc_new0000000000000001", "bcc_new0000000000000002"},
		[]string{"new@example.com", "r1@example.com"}))
	if err != nil || len(added) != 1 {
		t.Fatalf("a new and a present recipient added to the old broadcast: %v, %v", added, err)
	}
	if r, err := q.UnsubscribeRecipient(ctx, "bcc_00000000000000000007"); err != nil || r.Recipient != "r7@example.com" {
		t.Fatalf("the unsubscribe link of an old recipient: %+v, %v", r, err)
	}
	if _, err := q.FollowBroadcastContacts(ctx, followParams("bcc_00000000000000000007")); err != nil {
		t.Fatal(err)
	}
	var status string
	if err := pool.QueryRow(ctx, `SELECT status FROM broadcast_contacts WHERE id = 'bcc_00000000000000000007'`).Scan(&status); err != nil || status != "sending" {
		t.Fatalf("an old recipient followed its message: %q, %v", status, err)
	}

	// A broadcast made after the cutover (two days on: the partition of earlier rows holds up to
	// the conversion's first midnight): its recipients lie in its day's partition, and each
	// statement on them reads and locks that partition alone among 60 days of them.
	now := time.Now().UTC().Truncate(partition.Day).Add(2*partition.Day + 12*time.Hour) // noon: an id's minute either side is that day
	if _, err := partition.Ensure(ctx, pool, partitioned(t, "broadcast_contacts"),
		now.Add(-60*partition.Day), now.Add(2*partition.Day)); err != nil {
		t.Fatal(err)
	}
	fresh, err := randid.Timed("bc_", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO broadcasts (id, project, test_mode, name, channel, message_type, status, created_at, updated_at)
		VALUES ($1, 'p', false, 'new', 'email', 'text', 'draft', $2, $2)`, fresh, now); err != nil {
		t.Fatal(err)
	}
	recipient, err := randid.Timed("bcc_", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.AddBroadcastContacts(ctx, addParams(fresh, []string{recipient}, []string{"fresh@example.com"})); err != nil {
		t.Fatal(err)
	}
	day := "broadcast_contacts_p" + now.Format("20060102")
	var holder string
	if err := pool.QueryRow(ctx, `SELECT tableoid::regclass::text FROM broadcast_contacts WHERE id = $1`, recipient).Scan(&holder); err != nil || holder != day {
		t.Fatalf("the new broadcast's recipient is in %q (%v), want %s", holder, err, day)
	}
	for name, statement := range map[string]func(q *db.Queries) error{
		"list": func(q *db.Queries) error {
			_, err := q.BroadcastContacts(ctx, db.BroadcastContactsParams{BroadcastID: fresh, MaxRows: 50})
			return err
		},
		"add": func(q *db.Queries) error {
			_, err := q.AddBroadcastContacts(ctx, addParams(fresh, []string{recipient}, []string{"fresh@example.com"}))
			return err
		},
		"pending": func(q *db.Queries) error {
			_, err := q.PendingBroadcastContacts(ctx, db.PendingBroadcastContactsParams{BroadcastID: fresh, MaxRows: 50})
			return err
		},
		"queue": func(q *db.Queries) error {
			return q.QueueBroadcastContacts(ctx, db.QueueBroadcastContactsParams{BroadcastID: fresh, Now: now, Ids: []string{recipient},
				Statuses: []string{"queued"}, MessageIds: []string{""}, Costs: []int64{-1}, ErrorCodes: []string{""}, ErrorMessages: []string{""}})
		},
		"follow": func(q *db.Queries) error {
			_, err := q.FollowBroadcastContacts(ctx, followParams(recipient))
			return err
		},
		"unsubscribe": func(q *db.Queries) error { _, err := q.UnsubscribeRecipient(ctx, recipient); return err },
		"skip": func(q *db.Queries) error {
			_, err := q.SkipPendingBroadcastContacts(ctx, db.SkipPendingBroadcastContactsParams{ID: fresh, Now: now})
			return err
		},
		"delete one": func(q *db.Queries) error {
			_, err := q.DeleteBroadcastContact(ctx, db.DeleteBroadcastContactParams{ID: recipient, BroadcastID: fresh})
			return err
		},
		"delete the broadcast": func(q *db.Queries) error { return q.DeleteBroadcast(ctx, fresh) },
	} {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := statement(db.Planned(tx)); err != nil {
				return err
			}
			if locked := pgtest.LockedPartitions(t, tx, "broadcast_contacts"); !slices.Equal(locked, []string{day}) {
				t.Errorf("%s locked %v, want only %s", name, locked, day)
			}
			return pgx.ErrTxClosed // rolled back: each statement sees the same rows
		})
		if err != nil && err != pgx.ErrTxClosed {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// partitioned is the partitioned table of that name, as Switchboard declares it.
func partitioned(t *testing.T, name string) partition.Table {
	t.Helper()
	for _, table := range partition.Tables {
		if table.Name == name {
			return table
		}
	}
	t.Fatalf("%s is not a partitioned table", name)
	return partition.Table{}
}

func addParams(broadcast string, ids, recipients []string) db.AddBroadcastContactsParams {
	p := db.AddBroadcastContactsParams{BroadcastID: broadcast, Ids: ids, Recipients: recipients}
	for range ids {
		p.RecipientTypes = append(p.RecipientTypes, "email")
		p.TemplateVariables = append(p.TemplateVariables, nil)
		p.TemplateHeaderVariables = append(p.TemplateHeaderVariables, nil)
		p.TemplateButtonVariables = append(p.TemplateButtonVariables, nil)
		p.VariableLengths = append(p.VariableLengths, nil)
		p.CreatedAt = append(p.CreatedAt, time.Now())
	}
	return p
}

// followParams moves a recipient to sending, as its message's "sent" does.
func followParams(id string) db.FollowBroadcastContactsParams {
	p := db.FollowBroadcastContactsParams{Now: time.Now(), Ids: []string{id}, Statuses: []string{"sending"},
		ErrorCodes: []string{""}, ErrorMessages: []string{""}, Costs: []int64{-1}}
	p.BroadcastFrom, p.BroadcastTo = partition.Bounds(p.Ids)
	return p
}
