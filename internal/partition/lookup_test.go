package partition

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestNewestFirstDoublesBackToSinceAndStopsAtTheLimit(t *testing.T) {
	top := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	since := top.Add(-20 * Day)
	type span struct{ from, to time.Time }
	var asked []span
	// One row a day, at noon; read returns the span's rows newest first, at most limit.
	read := func(from, to time.Time, limit int) ([]time.Time, error) {
		asked = append(asked, span{from, to})
		var rows []time.Time
		for at := to.Add(-time.Nanosecond).Truncate(Day).Add(12 * time.Hour); !at.Before(from); at = at.Add(-Day) {
			if at.Before(to) && len(rows) < limit {
				rows = append(rows, at)
			}
		}
		return rows, nil
	}
	rows, err := NewestFirst(top, since, 100, read)
	if err != nil {
		t.Fatal(err)
	}
	want := []span{{top.Add(-Day), top}, {top.Add(-3 * Day), top.Add(-Day)}, {top.Add(-7 * Day), top.Add(-3 * Day)},
		{top.Add(-15 * Day), top.Add(-7 * Day)}, {since, top.Add(-15 * Day)}}
	if !slices.Equal(asked, want) {
		t.Errorf("spans read = %v, want %v", asked, want)
	}
	if len(rows) != 20 || !slices.IsSortedFunc(rows, func(a, b time.Time) int { return b.Compare(a) }) {
		t.Errorf("rows = %v, want the 20 days newest first", rows)
	}

	asked = nil
	rows, _ = NewestFirst(top, since, 2, read)
	if len(asked) != 2 || len(rows) != 2 {
		t.Errorf("a page of 2 read %d spans and got %d rows, want 2 spans (a day has one row) and 2 rows", len(asked), len(rows))
	}

	asked = nil
	if rows, _ := NewestFirst(since, since, 10, read); len(rows) != 0 || len(asked) != 0 {
		t.Errorf("a page whose top is since read %d spans, want none", len(asked))
	}
	boom := errors.New("boom")
	if _, err := NewestFirst(top, since, 10, func(time.Time, time.Time, int) ([]int, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("err = %v, want the read's", err)
	}
}

func TestRecentFirstReadsTheLastTwoDaysFirst(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var asked [][2]time.Time
	find := func(found int) func(since, until time.Time) (int, error) {
		return func(since, until time.Time) (int, error) {
			asked = append(asked, [2]time.Time{since, until})
			if len(asked) == found {
				return 7, nil
			}
			return 0, pgx.ErrNoRows
		}
	}
	if v, err := RecentFirst(now, find(1)); v != 7 || err != nil || len(asked) != 1 || !asked[0][0].Equal(now.Add(-2*Day)) || !asked[0][1].After(now) {
		t.Errorf("found in the last two days: %d, %v after %v", v, err, asked)
	}
	asked = nil
	if v, err := RecentFirst(now, find(2)); v != 7 || err != nil || len(asked) != 2 ||
		!asked[1][0].Equal(now.Add(-Lookback)) || !asked[1][1].Equal(now.Add(-2*Day)) {
		t.Errorf("found earlier: %d, %v after %v", v, err, asked)
	}
	asked = nil
	if _, err := RecentFirst(now, find(0)); !errors.Is(err, pgx.ErrNoRows) || len(asked) != 2 {
		t.Errorf("found nowhere: %v after %v, want pgx.ErrNoRows after two reads", err, asked)
	}
}

func TestOnDaysReadsOnlyTheDaysThatHoldRows(t *testing.T) {
	top := time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC)
	today := top.Truncate(Day)
	day := func(back int) time.Time { return today.Add(-time.Duration(back) * Day) }
	since := day(300)
	knownFrom := day(200).Add(9 * time.Hour)
	// Rows at noon on the known days: a run of three (0-2), two days with a gap of three between
	// them (10 and 14: one run of five, a long one), eleven days apart from each other (30, 40, …
	// 120 and 200); and every tenth day before knownFrom's day (210-300), which are not known.
	held := []time.Time{day(0), day(1), day(2), day(10), day(14)}
	for back := 30; back <= 120; back += 10 {
		held = append(held, day(back))
	}
	held = append(held, day(200))
	holds := func(d time.Time) bool {
		back := int(today.Sub(d) / Day)
		return slices.Contains(held, d) || (back > 200 && back%10 == 0)
	}
	var reads [][]Span
	read := func(spans []Span, limit int) ([]time.Time, error) {
		reads = append(reads, spans)
		var rows []time.Time
		for back := 0; back <= 300; back++ {
			at := day(back).Add(12 * time.Hour)
			in := slices.ContainsFunc(spans, func(s Span) bool { return !at.Before(s.From) && at.Before(s.To) })
			if in && holds(day(back)) && len(rows) < limit {
				rows = append(rows, at)
			}
		}
		return rows, nil
	}
	days := slices.Clone(held)
	slices.Reverse(days) // the order the days were kept in does not matter, nor a day kept twice
	days = append(days, day(1))
	rows, err := OnDays(top, since, days, knownFrom, 100, read)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(held)+10 || len(slices.Compact(slices.Clone(rows))) != len(rows) ||
		!slices.IsSortedFunc(rows, func(a, b time.Time) int { return b.Compare(a) }) {
		t.Fatalf("rows = %v, want the %d known days' and the 10 earlier ones, each once, newest first", rows, len(held))
	}
	// Reads: the run 0-2 alone (the long run follows it), the long run doubling back (1, 2 and 2
	// days), the eleven single days in reads of up to MaxSpans; then back from day 200 to 300
	// through the doubling spans (1, 2, 4, 8, 16, 32 and 37 days).
	if want := 1 + 3 + (11+MaxSpans-1)/MaxSpans + 7; len(reads) != want {
		t.Errorf("%d reads: %v, want %d", len(reads), reads, want)
	}
	for _, r := range reads {
		if len(r) > MaxSpans {
			t.Errorf("a read of %d spans, want at most %d", len(r), MaxSpans)
		}
		for _, s := range r {
			for d := s.From.Truncate(Day); d.Before(s.To) && !s.From.Before(day(200)); d = d.Add(Day) {
				// Days 11-13 join the days 10 and 14 (a gap of three days is read through).
				if b := int(today.Sub(d) / Day); d.Before(top) && !holds(d) && (b < 11 || b > 13) {
					t.Errorf("read day %d back, which holds nothing (reads %v)", b, reads)
				}
			}
		}
	}
	if again, _ := OnDays(top, since, append(slices.Clone(days), day(210)), knownFrom, 100, read); !slices.Equal(again, rows) {
		t.Errorf("with a day before knownFrom in the list: %v, want each row once: %v", again, rows)
	}

	reads = nil
	rows, _ = OnDays(top, since, days, knownFrom, 2, read)
	if len(rows) != 2 || len(reads) != 1 {
		t.Errorf("a page of 2 read %d times for %d rows, want one read (of the run 0-2)", len(reads), len(rows))
	}
	rows, _ = OnDays(day(5), since, days, knownFrom, 3, read)
	if want := []time.Time{day(10), day(14), day(30)}; len(rows) != 3 || !rows[0].Equal(want[0].Add(12*time.Hour)) ||
		!rows[1].Equal(want[1].Add(12*time.Hour)) || !rows[2].Equal(want[2].Add(12*time.Hour)) {
		t.Errorf("a page under a cursor five days back = %v, want days 10, 14 and 30", rows)
	}
	reads = nil
	rows, _ = OnDays(top, day(50), days, knownFrom, 100, read)
	if len(rows) != 8 {
		t.Errorf("with a retention of 50 days: %v, want the 8 days within it (0-2, 10, 14, 30, 40 and 50)", rows)
	}
	for _, r := range reads {
		for _, s := range r {
			if s.From.Before(day(50)) {
				t.Errorf("with a retention of 50 days, read %v", s)
			}
		}
	}
	boom := errors.New("boom")
	if _, err := OnDays(top, since, days, knownFrom, 100, func([]Span, int) ([]int, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("err = %v, want the read's", err)
	}
}
