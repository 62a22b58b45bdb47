package broadcast

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

// sendingDraft stores a test-mode draft of n recipients, as the API adds them, and moves it to
// sending, as the fan-out's start does.
func sendingDraft(t *testing.T, pool *pgxpool.Pool, n int) (*Service, string) {
	t.Helper()
	contacts := make([]ContactInput, n)
	for i := range contacts {
		contacts[i] = contact(fmt.Sprintf("+447700%06d", i), map[string]string{"name": fmt.Sprint("R", i)})
	}
	s, b := draftOf(t, pool, "sms", "Hi {{name}}", contacts)
	if _, err := pool.Exec(context.Background(), `UPDATE broadcasts SET status = 'sending', started_at = now() WHERE id = $1`, b.ID); err != nil {
		t.Fatal(err)
	}
	return s, b.ID
}

// handOver is a chunk of the fan-out without its messages: n recipients claimed and queued in
// tx, as the send path leaves them, and the mark moved on when it commits. It returns them.
func handOver(t *testing.T, s *Service, tx pgx.Tx, id string, n int) []db.BroadcastContact {
	t.Helper()
	ctx := context.Background()
	contacts, from, err := s.claim(ctx, db.Planned(tx), id, n)
	if err != nil {
		t.Fatal(err)
	}
	results := make([]result, len(contacts))
	for i, c := range contacts {
		results[i] = result{id: c.ID, status: "queued", messageID: "msg_" + c.ID, cost: -1}
	}
	if err := queueContacts(ctx, db.Planned(tx), id, results, s.now().UTC()); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if len(contacts) > 0 {
		s.claimed.advance(id, from, contacts[len(contacts)-1])
	} else {
		s.claimed.forget(id)
	}
	return contacts
}

func begin(t *testing.T, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// A chunk's claim reads about a chunk's worth of the recipients' pages, however many were
// handed over before it. The pending index keeps an entry for each recipient handed over
// until vacuum removes it; a claim from the first recipient stepped over all of them (its
// rows do not show it: those entries are not returned, so its blocks are counted), which at
// a million recipients was hundreds of milliseconds a chunk by the end. Autovacuum is kept off
// the broadcast's partition, as on an installation where it has not come round yet.
func TestAChunkClaimsPastWhatWasHandedOver(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t)
	const recipients, chunk = 20_000, 500
	s, id := sendingDraft(t, pool, recipients)
	var part string
	if err := pool.QueryRow(ctx, `SELECT tableoid::regclass::text FROM broadcast_contacts WHERE broadcast_id = $1 LIMIT 1`, id).Scan(&part); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s SET (autovacuum_enabled = off)`, pgx.Identifier{part}.Sanitize())); err != nil {
		t.Fatal(err)
	}

	// cost is what the next chunk's claim, as the fan-out makes it, goes through: the rows and
	// blocks of its scans of the recipients (the claim run, captured, then explained).
	capture := &pgtest.Capture{}
	conn := capture.Conn(t, pool)
	cost := func(fromFirst bool) (rows, blocks float64) {
		t.Helper()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.claim(ctx, db.Planned(tx), id, chunk); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		// The claim's arguments end with the position it claims from and the rows; fromFirst
		// makes it the claim as it was, from the first recipient whatever was handed over.
		args := slices.Clone(capture.Args)
		if fromFirst {
			args[len(args)-3], args[len(args)-2] = time.Time{}, ""
		}
		plan := pgtest.Explain(t, conn, "", capture.SQL, args...)
		return plan.RowsOf("broadcast_contacts"), plan.BlocksOf("broadcast_contacts")
	}
	_, fresh := cost(false)

	const handed = recipients - 2*chunk
	for done := 0; done < handed; done += chunk {
		if got := handOver(t, s, begin(t, pool), id, chunk); len(got) != chunk {
			t.Fatalf("chunk at %d took %d recipients, want %d", done, len(got), chunk)
		}
	}
	rows, blocks := cost(false)
	if rows > chunk {
		t.Errorf("the claim after %d handed over produced %.0f rows of recipients, want at most %d", handed, rows, chunk)
	}
	if blocks > 2*fresh {
		t.Errorf("the claim after %d handed over went through %.0f blocks of recipients, want at most %.0f (twice the first chunk's %.0f)",
			handed, blocks, 2*fresh, fresh)
	}
	_, fromFirst := cost(true)
	t.Logf("blocks of recipients a claim of %d went through: the first chunk %.0f; after %d handed over %.0f, from the first %.0f",
		chunk, fresh, handed, blocks, fromFirst)
	if fromFirst < 3*fresh {
		t.Errorf("a claim from the first recipient went through %.0f blocks, the first chunk's %.0f: this test no longer shows what the mark saves",
			fromFirst, fresh)
	}
}

// The mark is a hint: recipients left pending behind it, by a chunk of this process rolled back
// or by another process's, are still handed over, each once.
func TestRecipientsLeftBehindTheMarkAreHandedOver(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t)
	const recipients, chunk = 3000, 500
	s, id := sendingDraft(t, pool, recipients)
	other := NewService(pool, nil, nil, nil, nil) // another worker process

	handedTo := map[string]int{}
	count := func(cs []db.BroadcastContact) {
		for _, c := range cs {
			handedTo[c.ID]++
		}
	}
	// Another process holds the first chunk while this one hands over the rest.
	held := begin(t, pool)
	if cs, _, err := other.claim(ctx, db.Planned(held), id, chunk); err != nil || len(cs) != chunk {
		t.Fatalf("the other process claimed %d (%v), want %d", len(cs), err, chunk)
	}
	count(handOver(t, s, begin(t, pool), id, chunk))
	// A chunk of this process rolled back: its recipients are pending again, behind the mark.
	tx := begin(t, pool)
	rolledBack, _, err := s.claim(ctx, db.Planned(tx), id, chunk)
	if err != nil || len(rolledBack) != chunk {
		t.Fatalf("claimed %d (%v), want %d", len(rolledBack), err, chunk)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	s.claimed.rewind(id)
	if next := handOver(t, s, begin(t, pool), id, chunk); len(next) != chunk || next[0].ID != rolledBack[0].ID {
		t.Errorf("after a rollback the next chunk starts at %v, want the rolled-back chunk's first recipient %s", next[0].ID, rolledBack[0].ID)
	} else {
		count(next)
	}
	// The other process ends without handing its chunk over: those recipients are behind the
	// mark, and taken when nothing is left after it.
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var last []db.BroadcastContact
	for range recipients / chunk {
		last = handOver(t, s, begin(t, pool), id, chunk)
		count(last)
	}
	if len(last) != 0 {
		t.Errorf("the last chunk took %d recipients, want none left", len(last))
	}
	if len(handedTo) != recipients {
		t.Errorf("%d of %d recipients handed over", len(handedTo), recipients)
	}
	for c, n := range handedTo {
		if n != 1 {
			t.Errorf("recipient %s handed over %d times", c, n)
		}
	}
	var pending int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM broadcast_contacts WHERE broadcast_id = $1 AND status = 'pending'`, id).Scan(&pending); err != nil || pending != 0 {
		t.Errorf("%d recipients still pending (%v)", pending, err)
	}
}
