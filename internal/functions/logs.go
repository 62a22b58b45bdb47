package functions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Log retention: a function keeps its newest LogsKept lines, none older than LogsMaxAge.
const (
	LogsKept   = 10_000
	LogsMaxAge = 7 * 24 * time.Hour
	// DefaultLogsLimit and MaxLogsLimit bound a page of logs.
	DefaultLogsLimit = 100
	MaxLogsLimit     = 1000
)

// LogQuery is a request for a page of a function's logs.
type LogQuery struct {
	// From and To bound the window (epoch ms, inclusive); zero: all that is kept.
	From, To int64
	// Filter: terms that must all appear (case-insensitive), "quoted phrases", -term to exclude.
	Filter string
	Limit  int
	// Token continues a page: it carries the window and filter it was made for.
	Token string
}

// LogLine is one line of a function's logs.
type LogLine struct {
	Time       time.Time
	Stream     string
	Message    string
	Invocation string
}

// logToken is where a page of logs ended, and the query it was for.
type logToken struct {
	At     int64  `json:"a"`
	ID     int64  `json:"i"`
	From   int64  `json:"f"`
	To     int64  `json:"t"`
	Filter string `json:"p,omitempty"`
}

// Logs returns a page of the function's log lines, oldest first, and the token of the next page
// ("" when there is none).
func (s *Service) Logs(ctx context.Context, f *v1alpha1.Function, q LogQuery) ([]LogLine, string, error) {
	var tok logToken
	if q.Token != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.Token)
		if err != nil || json.Unmarshal(raw, &tok) != nil {
			return nil, "", apperror.InvalidFields(apperror.FieldError{Path: "nextToken", Message: "is not a token this API gave"})
		}
	} else {
		if q.From < 0 || q.To < 0 || (q.To != 0 && q.From > q.To) {
			return nil, "", apperror.InvalidFields(apperror.FieldError{Path: "startTime", Message: "must be epoch milliseconds, not after endTime"})
		}
		tok = logToken{From: q.From, To: q.To, Filter: q.Filter}
	}
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLogsLimit
	}
	if limit < 1 || limit > MaxLogsLimit {
		return nil, "", apperror.InvalidFields(apperror.FieldError{Path: "limit", Message: fmt.Sprintf("must be 1 to %d", MaxLogsLimit)})
	}
	include, exclude := filterPatterns(tok.Filter)
	to := time.Now().Add(time.Hour)
	if tok.To != 0 {
		to = time.UnixMilli(tok.To)
	}
	after := time.UnixMilli(tok.From).Add(-time.Microsecond)
	if tok.At != 0 {
		after = time.UnixMicro(tok.At)
	}
	rows, err := db.Planned(s.pool).FunctionLogsPage(ctx, db.FunctionLogsPageParams{FunctionUid: string(f.UID),
		FromAt: time.UnixMilli(tok.From).UTC(), ToAt: to.UTC(), AfterAt: after.UTC(), AfterID: tok.ID,
		Include: include, Exclude: exclude, Max: int32(limit + 1)})
	if err != nil {
		return nil, "", fmt.Errorf("read the logs of function %s: %w", f.Name, err)
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[len(rows)-1]
		t := tok
		t.At, t.ID = last.At.UnixMicro(), last.ID
		b, _ := json.Marshal(t)
		next = base64.RawURLEncoding.EncodeToString(b)
	}
	out := make([]LogLine, len(rows))
	for i, r := range rows {
		out[i] = LogLine{Time: r.At, Stream: r.Stream, Message: r.Message}
		if r.InvocationID != nil {
			out[i].Invocation = *r.InvocationID
		}
	}
	return out, next, nil
}

// filterPatterns turns a filter into ILIKE patterns that must match and must not.
func filterPatterns(filter string) (include, exclude []string) {
	include, exclude = []string{}, []string{}
	for _, term := range splitTerms(filter) {
		neg := strings.HasPrefix(term, "-") && len(term) > 1
		if neg {
			term = term[1:]
		}
		p := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.Trim(term, `"`)) + "%"
		if neg {
			exclude = append(exclude, p)
		} else {
			include = append(include, p)
		}
	}
	return include, exclude
}

// splitTerms splits on spaces, keeping "quoted phrases" whole.
func splitTerms(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, c := range s {
		switch {
		case c == '"':
			quoted = !quoted
			cur.WriteRune(c)
		case c == ' ' && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(c)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// TrimLogs removes what the retention no longer keeps.
func (s *Service) TrimLogs(ctx context.Context) (int64, error) {
	return db.Planned(s.pool).TrimFunctionLogs(ctx, db.TrimFunctionLogsParams{Before: s.now().Add(-LogsMaxAge).UTC(), Keep: LogsKept})
}
