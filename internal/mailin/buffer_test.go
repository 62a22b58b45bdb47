package mailin

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"runtime"
	"strings"
	"testing"
)

type noRecipients struct{}

func (noRecipients) Lookup(context.Context, string) (Route, error) {
	return Route{}, ErrUnknownRecipient
}

type noHandler struct{}

func (noHandler) Deliver(context.Context, *Mail) error { return nil }

// endless is a message that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// Not parallel: it counts the bytes the process allocates while it runs.
func TestReadingAMessageAllocatesNoMoreThanTheBudgetGives(t *testing.T) {
	const limit = 4 << 20
	s, err := New(Config{Recipients: noRecipients{}, Handler: noHandler{}, Hostname: "mx.example.com",
		MaxMessageBytes: limit, Limits: Limits{MaxBufferedBytes: limit}})
	if err != nil {
		t.Fatal(err)
	}
	allocated := func(read func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		read()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}

	// Other sessions hold three quarters of the budget: an endless message gets the rest,
	// and no more is allocated for it.
	if !s.buffered.take(3 * limit / 4) {
		t.Fatal("take budget")
	}
	var readErr error
	n := allocated(func() { _, readErr = s.readMessage(endless{}) })
	if !errors.Is(readErr, replyNoStorage) {
		t.Fatalf("read an endless message with a quarter of the budget: %v", readErr)
	}
	if n > limit/4+limit/16 {
		t.Errorf("allocated %d bytes for it, with %d bytes of budget", n, limit/4)
	}
	if left := s.buffered.left(); left != limit/4 {
		t.Errorf("%d bytes of budget left after a refusal, want %d", left, limit/4)
	}
	s.buffered.give(3 * limit / 4)

	// With the whole budget, it is refused at the size limit, having allocated that much.
	n = allocated(func() { _, readErr = s.readMessage(endless{}) })
	if !errors.Is(readErr, replyTooLarge) || n > limit+limit/16 {
		t.Errorf("endless message: %v, %d bytes allocated", readErr, n)
	}

	// A message read is in the budget until released.
	raw, err := s.readMessage(strings.NewReader(strings.Repeat("y", 100<<10)))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(raw.Reader()); len(got) != 100<<10 || raw.Len() != 100<<10 {
		t.Fatalf("read %d bytes, Len %d", len(got), raw.Len())
	}
	if s.buffered.left() >= limit-100<<10+1 {
		t.Errorf("%d bytes of budget left while a message of 100 KiB is held", s.buffered.left())
	}
	raw.release()
	if left := s.buffered.left(); left != limit {
		t.Errorf("%d bytes of budget left once released, want %d", left, limit)
	}
}

func TestClientKey(t *testing.T) {
	t.Parallel()
	key := func(s string) netip.Prefix { return clientKey(netip.MustParseAddr(s)) }
	if key("192.0.2.1") == key("192.0.2.2") {
		t.Error("two IPv4 addresses count as one client")
	}
	// A host picks any address of its /64.
	if key("2001:db8::1") != key("2001:db8::ffff:1") {
		t.Error("two addresses of one IPv6 /64 count as two clients")
	}
	if key("2001:db8::1") == key("2001:db8:0:1::1") {
		t.Error("two IPv6 /64s count as one client")
	}
}
