package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// Page sizes of cursor-paginated lists.
const (
	defaultPageSize = 50
	maxPageSize     = 100
)

// position is where a page ends: the sort key of its last item. Lists are ordered by creation
// time, then id.
type position struct {
	Project string `json:"p"`
	List    string `json:"l"`
	Time    int64  `json:"t"` // Unix microseconds
	ID      string `json:"i"`
}

// after tells whether an item with this creation time and id comes after the position.
func (p *position) after(t time.Time, id string) bool {
	if p == nil {
		return true
	}
	us := t.UnixMicro()
	return us > p.Time || (us == p.Time && id > p.ID)
}

// cursorCodec makes positions opaque: base64url JSON and an HMAC-SHA256 tag. A cursor names its
// project and list, so one cannot be altered or replayed against another project's data.
type cursorCodec struct{ key []byte }

func (c *cursorCodec) encode(p position) string {
	payload, _ := json.Marshal(p)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(c.tag(payload))
}

func (c *cursorCodec) decode(cursor, project, list string) (*position, error) {
	bad := apperror.InvalidFields(apperror.FieldError{Path: "cursor", Message: "is not a cursor this list returned"})
	enc, tag, ok := strings.Cut(cursor, ".")
	if !ok {
		return nil, bad
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(enc)
	got, err2 := base64.RawURLEncoding.DecodeString(tag)
	if err1 != nil || err2 != nil || !hmac.Equal(got, c.tag(payload)) {
		return nil, bad
	}
	var p position
	if err := json.Unmarshal(payload, &p); err != nil || p.Project != project || p.List != list {
		return nil, bad
	}
	return &p, nil
}

func (c *cursorCodec) tag(payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(payload)
	return m.Sum(nil)[:16]
}

// pageRequest reads `limit` and `cursor` of a list request.
func (s *Server) pageRequest(r *http.Request, project, list string) (int, *position, error) {
	q := r.URL.Query()
	limit := defaultPageSize
	var errs []apperror.FieldError
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			errs = append(errs, apperror.FieldError{Path: "limit", Message: "must be an integer from 1 to " + strconv.Itoa(maxPageSize)})
		} else {
			limit = n
		}
	}
	var after *position
	if v := q.Get("cursor"); v != "" {
		p, err := s.cursors.decode(v, project, list)
		if err != nil {
			errs = append(errs, apperror.FieldError{Path: "cursor", Message: "is not a cursor this list returned"})
		}
		after = p
	}
	if len(errs) > 0 {
		return 0, nil, apperror.InvalidFields(errs...)
	}
	return limit, after, nil
}

// seekPage reads limit and cursor for a list whose store continues after a position: that
// position (zero from the top) and the page size; ok is false when it answered the error.
func (s *Server) seekPage(w http.ResponseWriter, r *http.Request, list string) (after time.Time, afterID string, limit int, ok bool) {
	limit, pos, err := s.pageRequest(r, keyFrom(r.Context()).Project, list)
	if err != nil {
		s.writeError(w, r, err)
		return time.Time{}, "", 0, false
	}
	if t, id := pos.seek(); t != nil {
		after, afterID = *t, *id
	}
	return after, afterID, limit, true
}

// page is the envelope of every cursor-paginated list (WIRE.md §1).
type page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

// seek is where a list query continues: before the position's time and id, or from the top
// when there is no position.
func (p *position) seek() (*time.Time, *string) {
	if p == nil {
		return nil, nil
	}
	t := time.UnixMicro(p.Time)
	return &t, &p.ID
}

// pageOf makes the page of rows that a list query returned when asked for limit+1: up to limit
// items and, when there was one more row, the cursor after the last item shown. key is a row's
// sort key (time, then id).
func pageOf[T, V any](c *cursorCodec, project, list string, rows []T, limit int, key func(T) (time.Time, string), view func(T) V) page[V] {
	out := page[V]{Items: make([]V, 0, min(len(rows), limit))}
	for i, row := range rows {
		if i == limit {
			t, id := key(rows[i-1])
			out.NextCursor = c.encode(position{Project: project, List: list, Time: t.UnixMicro(), ID: id})
			break
		}
		out.Items = append(out.Items, view(row))
	}
	return out
}

// queryAddress reads an address from the query: a "+" sent unencoded arrives as a space, and is
// put back.
func queryAddress(q url.Values, name string) *string {
	v := q.Get(name)
	if strings.HasPrefix(v, " ") {
		v = "+" + v[1:]
	}
	if v == "" {
		return nil
	}
	return &v
}
