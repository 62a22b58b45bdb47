// Package partition keeps the tables that grow with traffic partitioned by time: it converts a
// plain table into a range-partitioned one online (resuming where a killed run stopped), makes
// daily partitions ahead of time and on demand, and detaches and drops whole partitions past a
// horizon without blocking writes. docs/data-lifecycle.md says why each step is done as it is.
package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard-io/switchboard/internal/randid"
)

// Table is a table partitioned by a timestamptz column, one partition a UTC day.
type Table struct {
	Name   string
	Column string
}

// Tables are Switchboard's partitioned tables.
var Tables = []Table{
	{Name: "messages", Column: "created_at"},
	{Name: "message_idempotency_keys", Column: "created_at"},
	{Name: "webhook_deliveries", Column: "created_at"},
	{Name: "webhook_delivery_attempts", Column: "started_at"},
	// A broadcast's recipients lie in the partition of their broadcast's time (migration 42).
	{Name: "broadcast_contacts", Column: "broadcast_at"},
	// A row per held and per refused send: few, but as many as an abusive project's sends.
	{Name: "risk_holds", Column: "held_at"},
	{Name: "risk_refusals", Column: "at"},
	// A message's files and the contents received messages share, in their message's day
	// (migration 43): they are written with the message, at its instant.
	{Name: "message_attachments", Column: "created_at"},
	{Name: "attachment_contents", Column: "created_at"},
}

// Named is the partitioned table of Tables called name; false when none is.
func Named(name string) (Table, bool) {
	i := slices.IndexFunc(Tables, func(t Table) bool { return t.Name == name })
	if i < 0 {
		return Table{}, false
	}
	return Tables[i], true
}

// Day is the span of one partition.
const Day = 24 * time.Hour

// Partition is one partition of a table: it holds [From, To). The partition a conversion made
// of the table's earlier rows has a zero From (it holds everything before To).
type Partition struct {
	Name string
	From time.Time
	To   time.Time
	// Detaching: a detach begun and not finished (a process died in it).
	Detaching bool
}

// dayName is the name of t's partition for the day starting at from.
func dayName(t Table, from time.Time) string {
	return t.Name + "_p" + from.UTC().Format("20060102")
}

// legacyName is the name of the partition a conversion makes of t's earlier rows.
func legacyName(t Table) string { return t.Name + "_legacy" }

// IsMissing reports whether err is Postgres refusing a row that no partition holds: a write
// that should make its day's partition (Ensure) and try again.
func IsMissing(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && strings.HasPrefix(pgErr.Message, "no partition of relation")
}

// IsPartitioned reports whether t is partitioned yet.
func IsPartitioned(ctx context.Context, pool *pgxpool.Pool, t Table) (bool, error) {
	var kind string
	err := pool.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)`, t.Name).Scan(&kind)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", t.Name, err)
	}
	return kind == "p", nil
}

// List returns t's partitions in time order.
func List(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, t Table) ([]Partition, error) {
	rows, err := q.Query(ctx, `
		SELECT c.relname::text, pg_get_expr(c.relpartbound, c.oid), i.inhdetachpending
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass($1)`, t.Name)
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", t.Name, err)
	}
	parts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Partition, error) {
		var p Partition
		var bound string
		if err := r.Scan(&p.Name, &bound, &p.Detaching); err != nil {
			return p, err
		}
		from, to, err := parseBound(bound)
		if err != nil {
			return p, fmt.Errorf("partition %s: %w", p.Name, err)
		}
		p.From, p.To = from, to
		return p, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", t.Name, err)
	}
	slices.SortFunc(parts, func(a, b Partition) int { return a.From.Compare(b.From) })
	return parts, nil
}

// parseBound reads "FOR VALUES FROM ('2026-11-27 00:00:00+00') TO ('2026-11-28 00:00:00+00')",
// the form pg_get_expr gives a range partition's bound in (MINVALUE for an open start).
func parseBound(s string) (from, to time.Time, err error) {
	rest, ok := strings.CutPrefix(s, "FOR VALUES FROM (")
	if !ok {
		return from, to, fmt.Errorf("not a range bound: %q", s)
	}
	lo, hi, ok := strings.Cut(rest, ") TO (")
	if !ok || !strings.HasSuffix(hi, ")") {
		return from, to, fmt.Errorf("not a range bound: %q", s)
	}
	hi = strings.TrimSuffix(hi, ")")
	parse := func(v string) (time.Time, error) {
		if v == "MINVALUE" {
			return time.Time{}, nil
		}
		v = strings.Trim(v, "'")
		for _, layout := range []string{"2006-01-02 15:04:05-07", "2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05-07:00"} {
			if at, err := time.Parse(layout, v); err == nil {
				return at.UTC(), nil
			}
		}
		return time.Time{}, fmt.Errorf("not a time bound: %q", v)
	}
	if from, err = parse(lo); err != nil {
		return from, to, err
	}
	to, err = parse(hi)
	return from, to, err
}

// lockKey is the advisory lock that serialises the changes to one table's partitions among
// processes (makers ahead, makers on demand, the retention job, a conversion).
func lockKey(t Table) string { return "switchboard.partition." + t.Name }

// Ensure makes the daily partitions of t that hold [from, to) and are missing. A partition is
// made as a table of its own and then attached, which takes only a SHARE UPDATE EXCLUSIVE lock
// on the parent: sends and reads go on meanwhile (CREATE TABLE … PARTITION OF would take an
// ACCESS EXCLUSIVE one). Processes making the same partition at once make it once.
func Ensure(ctx context.Context, pool *pgxpool.Pool, t Table, from, to time.Time) ([]string, error) {
	var made []string
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, lockKey(t)); err != nil {
			return err
		}
		var kind string
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)), '')`, t.Name).Scan(&kind); err != nil {
			return err
		}
		if kind != "p" {
			return nil // not converted yet: the plain table holds every row
		}
		parts, err := List(ctx, tx, t)
		if err != nil {
			return err
		}
		for day := from.UTC().Truncate(Day); day.Before(to); day = day.Add(Day) {
			if covered(parts, day) {
				continue
			}
			end := day.Add(Day)
			// A partition after the last one may begin where the last ends (not at midnight) only
			// when a conversion's cutover was not midnight; conversions always cut at midnight.
			name := dayName(t, day)
			if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)`,
				ident(name), ident(t.Name))); err != nil {
				return fmt.Errorf("make partition %s: %w", name, err)
			}
			if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%s) TO (%s)`,
				ident(t.Name), ident(name), literal(day), literal(end))); err != nil {
				return fmt.Errorf("attach partition %s: %w", name, err)
			}
			made = append(made, name)
			parts = append(parts, Partition{Name: name, From: day, To: end})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("make partitions of %s: %w", t.Name, err)
	}
	return made, nil
}

// covered reports whether a partition holds the instant at.
func covered(parts []Partition, at time.Time) bool {
	for _, p := range parts {
		if !at.Before(p.From) && at.Before(p.To) {
			return true
		}
	}
	return false
}

// DropBefore detaches and drops the partitions of t that hold nothing at or after horizon, and
// returns their names; nothing when another process is dropping t's partitions. A partition is
// detached CONCURRENTLY (the parent keeps taking writes and reads; the detach waits out the
// transactions that may still see it) and then dropped as the table of its own it has become.
// A detach a killed process left half done is finished first, and a detached partition left
// undropped is dropped.
func DropBefore(ctx context.Context, pool *pgxpool.Pool, t Table, horizon time.Time) ([]string, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	// A session lock (DETACH … CONCURRENTLY cannot run in a transaction), tried rather than
	// waited for: another process dropping the table's partitions now does this one's work, and
	// a session waiting inside pg_advisory_lock would hold a snapshot the detach may wait for.
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, lockKey(t)).Scan(&locked); err != nil {
		return nil, err
	}
	if !locked {
		return nil, nil
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, lockKey(t))
	}()

	var dropped []string
	// Partitions detached by a killed run (no longer attached, not yet dropped).
	orphans, err := detachedLeftovers(ctx, conn, t)
	if err != nil {
		return nil, err
	}
	for _, name := range orphans {
		if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS `+ident(name)); err != nil {
			return dropped, fmt.Errorf("drop detached partition %s: %w", name, err)
		}
		dropped = append(dropped, name)
	}

	parts, err := List(ctx, conn, t)
	if err != nil {
		return dropped, err
	}
	// A table has at most one detach pending, and no other may begin before it is finished.
	slices.SortStableFunc(parts, func(a, b Partition) int {
		switch {
		case a.Detaching == b.Detaching:
			return 0
		case a.Detaching:
			return -1
		}
		return 1
	})
	for _, p := range parts {
		if p.To.After(horizon) {
			continue
		}
		detach := fmt.Sprintf(`ALTER TABLE %s DETACH PARTITION %s CONCURRENTLY`, ident(t.Name), ident(p.Name))
		if p.Detaching {
			detach = fmt.Sprintf(`ALTER TABLE %s DETACH PARTITION %s FINALIZE`, ident(t.Name), ident(p.Name))
		}
		if _, err := conn.Exec(ctx, detach); err != nil {
			return dropped, fmt.Errorf("detach partition %s: %w", p.Name, err)
		}
		if _, err := conn.Exec(ctx, `DROP TABLE `+ident(p.Name)); err != nil {
			return dropped, fmt.Errorf("drop partition %s: %w", p.Name, err)
		}
		dropped = append(dropped, p.Name)
	}
	return dropped, nil
}

// detachedLeftovers are tables named as t's partitions that are no longer partitions of it: a
// drop killed between its detach and its drop.
func detachedLeftovers(ctx context.Context, conn *pgxpool.Conn, t Table) ([]string, error) {
	rows, err := conn.Query(ctx, `
		SELECT c.relname::text FROM pg_class c
		WHERE c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass($1))
		  AND c.relkind = 'r' AND NOT c.relispartition
		  AND (c.relname ~ ('^' || $1 || '_p[0-9]{8}$') OR c.relname = $1 || '_legacy')`, t.Name)
	if err != nil {
		return nil, fmt.Errorf("find detached partitions of %s: %w", t.Name, err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ident quotes a name for SQL.
func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// literal is a timestamptz literal for a partition bound.
func literal(at time.Time) string { return "'" + at.UTC().Format("2006-01-02 15:04:05Z07:00") + "'" }

// Bounds of the partition column for rows whose ids carry their time (randid.Timed): a minute
// either side of the earliest and the latest id's time, as the SQL functions switchboard_id_from
// and switchboard_id_to bound one id. An id without a time (made before ids carried it) opens
// the bounds to every partition. A batch's bounds are computed here rather than in SQL, where a
// generic plan would compute them again for every row it reads.
func Bounds(ids []string) (from, to time.Time) {
	from, to = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range ids {
		at, ok := randid.TimeOf(id)
		if !ok {
			return time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		from, to = minTime(from, at.Add(-time.Minute)), maxTime(to, at.Add(time.Minute))
	}
	return from, to
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Lookback is how far back a lookup by a key that carries no time (a provider's message id, a
// conversation, a sender) reads. A query no bound prunes plans and locks every partition: with a
// year of daily partitions, about 2,500 relations and tens of milliseconds of planning, and
// enough locks from a few such queries at once to fill Postgres's lock table.
const Lookback = 30 * Day

// recentSpan is what RecentFirst reads first: where nearly every lookup by such a key ends.
const recentSpan = 2 * Day

// RecentFirst runs find on the partitions of the last two days and, when that finds nothing
// (pgx.ErrNoRows), on the rest of Lookback: [since, until) is the span find's query must be
// bounded by.
func RecentFirst[T any](now time.Time, find func(since, until time.Time) (T, error)) (T, error) {
	split := now.Add(-recentSpan)
	v, err := find(split, now.Add(7*Day)) // rows a little ahead of this process's clock included
	if !errors.Is(err, pgx.ErrNoRows) {
		return v, err
	}
	return find(now.Add(-Lookback), split)
}

// NewestFirst reads up to limit rows, newest first, created before top and from since on, through
// spans that double back in time from top (a day, two, four…): each read is bounded to
// [from, to) and so plans and locks only its partitions, and the reads stop once limit rows are
// found. A busy list's page is read from one or two partitions; a sparse one reaches back through
// the spans, about as many partitions in all as one query over the whole range would plan.
func NewestFirst[T any](top, since time.Time, limit int, read func(from, to time.Time, limit int) ([]T, error)) ([]T, error) {
	var out []T
	span := Day
	for to := top; to.After(since) && len(out) < limit; span *= 2 {
		from := to.Add(-span)
		if from.Before(since) {
			from = since
		}
		rows, err := read(from, to, limit-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
		to = from
	}
	return out, nil
}

// joinedGap is the most days without rows that OnDays reads through to join two runs of days
// into one span: planning an empty day's partition costs less than another span.
const joinedGap = 3

// MaxSpans is the most spans OnDays has one read take: the statement's OR of ranges.
const MaxSpans = 8

// longRun is the most days a run may span to be read whole among others; a longer one (a busy
// conversation) is read back through NewestFirst's doubling spans, which stop once a page is full.
const longRun = 4

// Span is [From, To).
type Span struct{ From, To time.Time }

// OnDays reads like NewestFirst where the days holding the rows are known: days (UTC days'
// starts, in any order) list every day holding a row from knownFrom on. Only those days'
// partitions are read: runs of them (joined across gaps of up to joinedGap days), newest first,
// up to MaxSpans short runs in one read (spans newest first, disjoint, the rows of all of them
// newest first), a long run through NewestFirst. What lies before knownFrom's day is read back
// through NewestFirst's spans. A conversation's few dozen messages over a year are so read from
// their own days' partitions in a statement or a few, instead of through every partition.
func OnDays[T any](top, since time.Time, days []time.Time, knownFrom time.Time, limit int, read func(spans []Span, limit int) ([]T, error)) ([]T, error) {
	ds := make([]time.Time, 0, len(days))
	for _, d := range days {
		ds = append(ds, d.UTC().Truncate(Day))
	}
	slices.SortFunc(ds, func(a, b time.Time) int { return b.Compare(a) })
	ds = slices.CompactFunc(ds, time.Time.Equal)
	known := knownFrom.UTC().Truncate(Day)
	one := func(from, to time.Time, limit int) ([]T, error) { return read([]Span{{from, to}}, limit) }

	var out []T
	var batch []Span
	flush := func() error {
		if len(batch) == 0 || len(out) >= limit {
			return nil
		}
		rows, err := read(batch, limit-len(out))
		out, batch = append(out, rows...), nil
		return err
	}
	for i := 0; i < len(ds) && len(out) < limit; {
		j := i
		for j+1 < len(ds) && !ds[j+1].Before(ds[j].Add(-(joinedGap+1)*Day)) {
			j++
		}
		from, to := maxTime(maxTime(ds[j], since), known), minTime(ds[i].Add(Day), top) // before known is read below
		i = j + 1
		switch {
		case !to.After(from):
		case to.Sub(from) <= longRun*Day:
			if batch = append(batch, Span{from, to}); len(batch) == MaxSpans {
				if err := flush(); err != nil {
					return nil, err
				}
			}
		default:
			if err := flush(); err != nil {
				return nil, err
			}
			if len(out) < limit {
				rows, err := NewestFirst(to, from, limit-len(out), one)
				if err != nil {
					return nil, err
				}
				out = append(out, rows...)
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(out) < limit {
		rows, err := NewestFirst(minTime(top, known), since, limit-len(out), one)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// SpanBounds returns spans' bounds as the arrays a statement reading up to MaxSpans of them takes.
func SpanBounds(spans []Span) (froms, tos []time.Time) {
	for _, s := range spans {
		froms, tos = append(froms, s.From), append(tos, s.To)
	}
	return froms, tos
}
