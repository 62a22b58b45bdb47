package risk_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/risk"
)

// TestExternalFailures: an answer that is not a decision, or an error status, gives OnFailure
// (hold unless approve is asked for), with the reason.
func TestExternalFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status    int
		body      string
		onFailure risk.Outcome
		want      risk.Outcome
		reason    string
	}{
		{200, `{"decision":"maybe"}`, risk.Hold, risk.Hold, `"maybe" is not`},
		{200, `not json`, risk.Hold, risk.Hold, "not JSON"},
		{500, `{}`, risk.Approve, risk.Approve, "HTTP 500"},
		{200, `{"decision":"block","reason":"known scam"}`, risk.Hold, risk.Block, "known scam"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(c.body))
		}))
		e := &risk.External{URL: srv.URL, OnFailure: c.onFailure}
		d := e.Review(context.Background(), "msg_1", risk.Features("sms", "+15005550100", "hi", "", "US"), risk.Project{})
		srv.Close()
		if d.Outcome != c.want || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("%d %s: %+v, want %s (%q)", c.status, c.body, d, c.want, c.reason)
		}
	}
	// Nobody there: held.
	if d := (&risk.External{URL: "http://127.0.0.1:1/"}).Review(context.Background(), "m", risk.Message{}, risk.Project{}); d.Outcome != risk.Hold {
		t.Errorf("unreachable: %+v", d)
	}
}
