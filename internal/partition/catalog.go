package partition

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Catalog is a process's list of the tables' partitions, for statements that name the partitions
// they read instead of the partitioned parent (db.OnPartitions). The list is read again once it is
// catalogRefresh old, in the background; one older than catalogStale, or none, is not used and
// the statements go to the parent, as does one whose list leaves a gap where rows may be (a
// partition made since it was read).
//
// A partition the retention job drops is gone without the list knowing until it is read again:
// Span leaves out the partitions about to be dropped, whose rows are older than the retention
// (keptSince) but for the last dropMargin of them.
type Catalog struct {
	pool *pgxpool.Pool

	mu         sync.Mutex
	lists      map[string]catalogList
	refreshing map[string]bool
}

type catalogList struct {
	parts []Partition
	read  time.Time
}

const (
	catalogRefresh = time.Minute
	catalogStale   = 5 * time.Minute
	dropMargin     = 10 * time.Minute
	// skewAhead is how far past this process's clock rows may lie (other processes' clocks).
	skewAhead = time.Hour
)

// NewCatalog returns the catalog of the partitions in pool's database.
func NewCatalog(pool *pgxpool.Pool) *Catalog {
	return &Catalog{pool: pool, lists: map[string]catalogList{}, refreshing: map[string]bool{}}
}

// Span returns the names of table's partitions that may hold rows created in [from, to), newest
// first, for a statement to read them (or write the only one); ok is false when the statement is
// to go to the parent. keptSince is the retention's horizon: rows before it are not shown.
func (c *Catalog) Span(table string, from, to, keptSince time.Time) ([]string, bool) {
	if c == nil {
		return nil, false
	}
	now := time.Now()
	c.mu.Lock()
	l, known := c.lists[table]
	if (!known || now.Sub(l.read) > catalogRefresh) && !c.refreshing[table] {
		c.refreshing[table] = true
		go c.refresh(table)
	}
	c.mu.Unlock()
	if !known || now.Sub(l.read) > catalogStale {
		return nil, false
	}
	return span(l.parts, from, to, keptSince, now)
}

// span is Span on the list parts (in time order) at now.
func span(parts []Partition, from, to, keptSince, now time.Time) ([]string, bool) {
	if from.Before(keptSince) {
		from = keptSince
	}
	if !from.Before(to) {
		return nil, false // nothing to read: the parent's plan is as short
	}
	// Rows are not ahead of the clocks by more than skewAhead: the partitions past it are empty.
	need := to
	if limit := now.Add(skewAhead); need.After(limit) {
		need = limit
	}
	var names []string
	covered := time.Time{} // how far the partitions read cover, from the first one on
	first := true
	for _, p := range parts {
		if p.Detaching || !p.To.After(from) || !p.From.Before(to) {
			continue
		}
		if !p.To.After(keptSince.Add(dropMargin)) {
			continue // the retention job may drop it at any moment
		}
		if !first && p.From.After(covered) && p.From.Before(need) {
			return nil, false // a gap: a partition made since the list was read may be there
		}
		names = append(names, p.Name)
		covered, first = p.To, false
	}
	if len(names) == 0 || covered.Before(need) {
		return nil, false
	}
	slices.Reverse(names)
	return names, true
}

// Stale makes the next Span read table's list again first.
func (c *Catalog) Stale(table string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.lists, table)
	c.mu.Unlock()
}

// refresh reads table's list; a failure keeps the list there was (it goes stale in time).
func (c *Catalog) refresh(table string) {
	defer func() {
		c.mu.Lock()
		c.refreshing[table] = false
		c.mu.Unlock()
	}()
	t, ok := Named(table)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	read := time.Now()
	parts, err := List(ctx, c.pool, t)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.lists[table] = catalogList{parts: parts, read: read}
	c.mu.Unlock()
}
