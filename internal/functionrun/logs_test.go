package functionrun

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"
)

func TestReadLine(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("short\n"+strings.Repeat("x", 100)+"\nlast"), 16)
	type line struct {
		s   string
		cut bool
	}
	var got []line
	for {
		b, cut, err := readLine(r, 10)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line{string(b), cut})
	}
	want := []line{{"short", false}, {"xxxxxxxxxx", true}, {"last", false}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestCutLineKeepsRunesWhole(t *testing.T) {
	if got := cutLine("aé", 2); got != "a…" {
		t.Errorf("cutLine = %q", got)
	}
	if got := cutLine("abc", 3); got != "abc" {
		t.Errorf("cutLine = %q", got)
	}
}

func TestLogSinkLimit(t *testing.T) {
	s := newLogSink(4, 12) // "1234…" is 7 bytes
	for _, m := range []string{"123456", "abcd", "efgh", "more"} {
		s.add(time.Time{}, "log", m)
	}
	s.platform("end")
	var got []string
	for _, l := range s.take() {
		got = append(got, l.Stream+":"+l.Message)
	}
	want := "log:1234…|log:abcd|platform:[output truncated: more than 12 bytes of output; the rest was dropped]|platform:end"
	if strings.Join(got, "|") != want {
		t.Errorf("lines %q", got)
	}
}
