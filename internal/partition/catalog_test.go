package partition

import (
	"slices"
	"testing"
	"time"
)

func TestSpanNamesThePartitionsThatMayHoldTheRows(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	today := now.Truncate(Day)
	day := func(offset int) Partition {
		from := today.Add(time.Duration(offset) * Day)
		return Partition{Name: dayName(Table{Name: "messages"}, from), From: from, To: from.Add(Day)}
	}
	legacy := Partition{Name: "messages_legacy", To: today.Add(-2 * Day)}
	parts := []Partition{legacy, day(-2), day(-1), day(0), day(1), day(2), day(3)}
	kept := now.Add(-365 * Day)
	names := func(ps ...Partition) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	for _, c := range []struct {
		name     string
		parts    []Partition
		from, to time.Time
		kept     time.Time
		want     []string // nil: the parent
	}{
		{"a message's minute", parts, now.Add(-time.Minute), now.Add(time.Minute), kept, names(day(0))},
		{"a minute across midnight", parts, today.Add(-time.Minute), today.Add(time.Minute), kept, names(day(0), day(-1))},
		{"the recent days, rows ahead of the clock included", parts, now.Add(-2 * Day), now.Add(7 * Day), kept,
			names(day(3), day(2), day(1), day(0), day(-1), day(-2))},
		{"the lookback reaches the legacy partition", parts, now.Add(-30 * Day), now.Add(-2 * Day), kept, names(day(-2), legacy)},
		{"a partition missing from the list where rows may be", []Partition{legacy, day(-2), day(0)}, now.Add(-3 * Day), now, kept, nil},
		{"today's partition not listed yet", []Partition{legacy, day(-2), day(-1)}, now.Add(-time.Minute), now.Add(time.Minute), kept, nil},
		{"days past the clock's hour may be missing", []Partition{day(-1), day(0)}, now.Add(-time.Minute), now.Add(7 * Day), kept, names(day(0))},
		{"a detaching partition is not read", []Partition{legacy, {Name: "messages_p20261126", From: today.Add(-2 * Day),
			To: today.Add(-Day), Detaching: true}, day(-1), day(0)}, now.Add(-5 * Day), now, kept, nil},
		{"one about to be dropped is not read", parts, now.Add(-5 * Day), now, today.Add(-Day).Add(-time.Minute),
			names(day(0), day(-1))},
		{"rows only before the retention", parts, now.Add(-30 * Day), now.Add(-20 * Day), now.Add(-10 * Day), nil},
	} {
		got, ok := span(c.parts, c.from, c.to, c.kept, now)
		if ok != (c.want != nil) || !slices.Equal(got, c.want) {
			t.Errorf("%s: span = %v, %v; want %v", c.name, got, ok, c.want)
		}
	}
}
