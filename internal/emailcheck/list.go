package emailcheck

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Page is where a page of the suppression list starts: after the entry made at Time for
// Address (the previous page's last); zero for the first page.
type Page struct {
	Time    time.Time
	Address string
}

// List returns up to limit entries in force of the project's list in its mode, newest first,
// only those of reason when it is set.
func (c *Checker) List(ctx context.Context, project string, testMode bool, reason string, after Page, limit int) ([]Entry, error) {
	p := db.ListSuppressionsParams{Project: project, TestMode: testMode, Now: c.now(), PageSize: int32(limit)}
	if !after.Time.IsZero() {
		p.AfterCreatedAt, p.AfterAddress = &after.Time, &after.Address
	}
	if reason != "" {
		p.Reason = &reason
	}
	rows, err := db.Planned(c.Pool).ListSuppressions(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list the suppression list: %w", err)
	}
	out := make([]Entry, len(rows))
	for i, r := range rows {
		out[i] = *entryOf(r)
	}
	return out, nil
}

// Among returns the entries in force at now of the project's list in its mode for any of
// addresses, by Key: one read for many addresses (a page of contacts). q may be a transaction's.
func Among(ctx context.Context, q *db.Queries, project string, testMode bool, addresses []string, now time.Time) (map[string]*Entry, error) {
	if len(addresses) == 0 {
		return nil, nil
	}
	keys := make([]string, len(addresses))
	for i, a := range addresses {
		keys[i] = Key(a)
	}
	rows, err := q.SuppressionsAmong(ctx, db.SuppressionsAmongParams{Project: project, TestMode: testMode, Addresses: keys, Now: now.UTC()})
	if err != nil {
		return nil, fmt.Errorf("read the suppression list: %w", err)
	}
	out := make(map[string]*Entry, len(rows))
	for _, r := range rows {
		out[r.Address] = entryOf(r)
	}
	return out, nil
}

// Remove takes address off the project's list in its mode; false when it was not on it.
func (c *Checker) Remove(ctx context.Context, project string, testMode bool, address string) (bool, error) {
	n, err := db.Planned(c.Pool).DeleteSuppression(ctx, db.DeleteSuppressionParams{Project: project, TestMode: testMode, Address: Key(address)})
	if err != nil {
		return false, fmt.Errorf("remove from the suppression list: %w", err)
	}
	return n > 0, nil
}
