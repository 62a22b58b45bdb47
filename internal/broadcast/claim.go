package broadcast

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// A chunk claims its recipients from the broadcast's pending index, oldest first. A recipient
// handed over leaves that index only when vacuum removes its entry, so a claim from the first
// recipient steps over every one handed over since the last vacuum: 19,000 entries (about 120
// index pages) for the 20th chunk of 1,000, 900,000 late in a million, per chunk. The fan-out
// therefore claims from where this process's last chunk of the broadcast ended, and from the
// first again only when that finds nothing: recipients left behind that position (a chunk
// rolled back, or another process's chunk in flight) are still pending, so they are taken
// then, and nothing is lost; the position is a hint kept in memory, not a record.

// claimMarks are where each sending broadcast's last chunk in this process ended.
type claimMarks struct {
	mu sync.Mutex
	at map[string]claimMark
}

// claimMark is a position in a broadcast's recipients (created_at, id), and the generation it
// was read in: a chunk that rolled back starts a new one, and a chunk that claimed in an older
// generation does not move the mark past what the rolled-back chunk left pending.
type claimMark struct {
	createdAt time.Time
	id        string
	gen       uint64
}

// from is where the next chunk of broadcast claims from (the zero mark: the first).
func (m *claimMarks) from(broadcast string) claimMark {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.at[broadcast]
}

// advance moves broadcast's mark to last, the last recipient of a committed chunk that claimed
// from mark, unless a chunk rolled back since that claim.
func (m *claimMarks) advance(broadcast string, from claimMark, last db.BroadcastContact) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.at[broadcast]
	if cur.gen != from.gen {
		return
	}
	if last.CreatedAt.After(cur.createdAt) || (last.CreatedAt.Equal(cur.createdAt) && last.ID > cur.id) {
		if m.at == nil {
			m.at = map[string]claimMark{}
		}
		m.at[broadcast] = claimMark{createdAt: last.CreatedAt, id: last.ID, gen: cur.gen}
	}
}

// rewind makes the next chunk of broadcast claim from the first: a chunk rolled back, leaving
// its recipients pending behind the mark.
func (m *claimMarks) rewind(broadcast string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at == nil {
		m.at = map[string]claimMark{}
	}
	m.at[broadcast] = claimMark{gen: m.at[broadcast].gen + 1}
}

// forget drops the mark of a broadcast with nothing left to claim.
func (m *claimMarks) forget(broadcast string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.at, broadcast)
}

// claim locks up to n pending recipients of broadcast in q's transaction, oldest first from
// the broadcast's mark, else from the first; it returns them with the mark they were claimed
// from, for advance once the chunk commits.
func (s *Service) claim(ctx context.Context, q *db.Queries, broadcast string, n int) ([]db.BroadcastContact, claimMark, error) {
	from := s.claimed.from(broadcast)
	p := db.PendingBroadcastContactsParams{BroadcastID: broadcast, AfterTime: from.createdAt, AfterID: from.id, MaxRows: int32(n)}
	contacts, err := q.PendingBroadcastContacts(ctx, p)
	if err != nil || len(contacts) > 0 || from.id == "" {
		return contacts, from, err
	}
	p.AfterTime, p.AfterID = time.Time{}, ""
	contacts, err = q.PendingBroadcastContacts(ctx, p)
	return contacts, claimMark{gen: from.gen}, err
}
