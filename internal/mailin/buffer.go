package mailin

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/emersion/go-smtp"
)

// Chunk sizes a message is read in: small first, so that the many small messages take
// little of the budget, doubling up to maxChunk for large ones.
const (
	firstChunk = 4 << 10
	maxChunk   = 1 << 20
)

// replyNoStorage answers a message the budget has no room for: the sending server tries later.
var replyNoStorage = &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 3, 1}, Message: "insufficient system storage, try again later"}

// budget is a count of bytes shared by the sessions: what they take is held until they give
// it back. It never waits: a session that finds too little left answers a temporary failure.
type budget struct {
	mu   sync.Mutex
	free int64
}

// take takes n bytes, or reports false and takes nothing when fewer are left.
func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.free {
		return false
	}
	b.free -= n
	return true
}

// give gives back n bytes taken.
func (b *budget) give(n int64) {
	b.mu.Lock()
	b.free += n
	b.mu.Unlock()
}

// left is what is left to take.
func (b *budget) left() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.free
}

// RawMail is a message as received, byte for byte. It is kept in the pieces it was read in,
// never copied whole: read it with Reader.
type RawMail struct {
	chunks [][]byte
	size   int
	// held is what the pieces took of the server's budget, given back by release.
	held   int64
	budget *budget
}

// Len is the size of the message in bytes.
func (r *RawMail) Len() int { return r.size }

// Reader returns a reader of the whole message, from its first byte.
func (r *RawMail) Reader() io.Reader {
	readers := make([]io.Reader, len(r.chunks))
	for i, c := range r.chunks {
		readers[i] = bytes.NewReader(c)
	}
	return io.MultiReader(readers...)
}

// release gives the message's bytes back to the budget. The message must not be read after.
func (r *RawMail) release() {
	if r.budget != nil && r.held > 0 {
		r.budget.give(r.held)
	}
	r.held, r.chunks, r.size = 0, nil, 0
}

// readMessage reads the message r carries, each piece taken from the budget before it is
// allocated, and stops at the first of the end of the message, MaxMessageBytes (552), the
// budget running short (452) or a read failing (as it failed). On error what was read is
// released.
func (s *Server) readMessage(r io.Reader) (*RawMail, error) {
	raw := &RawMail{budget: &s.buffered}
	next := firstChunk
	var probe [1]byte
	for {
		// A byte read first, on the stack, finds the end of the message without taking
		// budget for a piece that would stay empty.
		if _, err := io.ReadFull(r, probe[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return raw, nil
			}
			raw.release()
			return nil, err
		}
		// A byte past the limit: the message is too large, whatever follows.
		if int64(raw.size) >= s.cfg.MaxMessageBytes {
			raw.release()
			return nil, replyTooLarge
		}
		n := min(int64(min(next, maxChunk)), s.cfg.MaxMessageBytes-int64(raw.size))
		if !s.buffered.take(n) {
			raw.release()
			return nil, replyNoStorage
		}
		raw.held += n
		chunk := make([]byte, n)
		chunk[0] = probe[0]
		k, err := io.ReadFull(r, chunk[1:])
		raw.chunks = append(raw.chunks, chunk[:1+k])
		raw.size += 1 + k
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return raw, nil
		case err != nil:
			raw.release()
			return nil, err
		}
		next *= 2
	}
}
