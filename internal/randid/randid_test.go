package randid

import (
	"strings"
	"testing"
	"time"
)

func TestTimedCarriesItsTime(t *testing.T) {
	at := time.Date(2026, 11, 27, 23, 59, 59, 999_999_999, time.UTC)
	id, err := Timed("msg_", at)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, "msg_") || len(id) != len("msg_")+TimedLength {
		t.Fatalf("id %q: want msg_ and %d characters", id, TimedLength)
	}
	got, ok := TimeOf(id)
	if !ok || !got.Equal(at.Truncate(time.Millisecond)) {
		t.Fatalf("TimeOf(%q) = %s, %v; want %s", id, got, ok, at.Truncate(time.Millisecond))
	}
	later, _ := Timed("msg_", at.Add(time.Millisecond))
	if later <= id {
		t.Fatalf("ids do not sort by time: %q after %q", later, id)
	}
}

func TestTimeOfOtherIDs(t *testing.T) {
	legacy, _ := Prefixed("msg_", 24)
	for _, id := range []string{legacy, "", "msg_", "sbx_in_abc", "msg_" + strings.Repeat("!", TimedLength)} {
		if _, ok := TimeOf(id); ok {
			t.Errorf("TimeOf(%q) reports a time", id)
		}
	}
	id, _ := Timed("sbx_in_", time.UnixMilli(1_800_000_000_000))
	if got, ok := TimeOf(id); !ok || got.UnixMilli() != 1_800_000_000_000 {
		t.Errorf("TimeOf(%q) = %s, %v", id, got, ok)
	}
	if _, err := Timed("msg_", time.Unix(-1, 0)); err == nil {
		t.Error("Timed accepted a time before 1970")
	}
}
