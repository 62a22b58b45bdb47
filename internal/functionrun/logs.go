package functionrun

import (
	"bufio"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"
)

// logSink collects one invocation's lines within the limits: lines are cut at maxLine bytes,
// and past maxTotal bytes one platform line says so and the rest is dropped. Platform lines
// are always kept.
type logSink struct {
	maxLine, maxTotal int

	mu        sync.Mutex
	lines     []LogLine
	bytes     int
	truncated bool
}

func newLogSink(maxLine, maxTotal int) *logSink {
	return &logSink{maxLine: maxLine, maxTotal: maxTotal}
}

func (s *logSink) add(t time.Time, stream, msg string) {
	msg = cutLine(msg, s.maxLine)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.truncated {
		return
	}
	if s.bytes+len(msg) > s.maxTotal {
		s.truncated = true
		s.lines = append(s.lines, LogLine{Time: t, Stream: StreamPlatform,
			Message: fmt.Sprintf("[output truncated: more than %s of output; the rest was dropped]", formatBytes(s.maxTotal))})
		return
	}
	s.bytes += len(msg)
	s.lines = append(s.lines, LogLine{Time: t, Stream: stream, Message: msg})
}

func (s *logSink) platform(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, LogLine{Time: time.Now(), Stream: StreamPlatform, Message: msg})
}

// take returns the lines collected so far.
func (s *logSink) take() []LogLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lines
}

// cutLine keeps at most limit bytes of s, whole runes only, and marks the cut with "…".
func cutLine(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return markCut(s[:limit])
}

// markCut ends a line cut short with "…", dropping a rune the cut split.
func markCut(s string) string {
	for len(s) > 0 {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s + "…"
}

// readLine reads one line, without its newline, keeping at most limit bytes of it: the rest of
// a longer line is dropped and cut says so. At the end of the input it returns a last
// unterminated line, then the reader's error.
func readLine(r *bufio.Reader, limit int) (line []byte, cut bool, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		if room := limit - len(line); len(frag) <= room {
			line = append(line, frag...)
		} else {
			line = append(line, frag[:max(room, 0)]...)
			cut = true
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			if len(line) > 0 || cut {
				return line, cut, nil
			}
			return nil, false, err
		}
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
		}
		return line, cut, nil
	}
}

// formatBytes writes a limit the way people read it: "256 KiB", "6 MiB".
func formatBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
