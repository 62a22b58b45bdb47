package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

// requestQueries counts the statements Postgres runs for HTTP requests (their context carries
// the server's address), leaving out what the process does in the background.
type requestQueries struct{ n atomic.Int64 }

func (c *requestQueries) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if ctx.Value(http.LocalAddrContextKey) != nil {
		c.n.Add(1)
	}
	return ctx
}

func (c *requestQueries) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestConsolePagesReadAFixedNumberOfTimes: every console page makes the same number of trips
// to Postgres whatever the number of rows it shows (no read per row), and few: the session's,
// then one per list (a broadcast's snapshot and a balance's read are a few statements each).
func TestConsolePagesReadAFixedNumberOfTimes(t *testing.T) {
	counter := &requestQueries{}
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns, cfg.ConnConfig.Tracer = 20, counter
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted(), func(c *app.Config) { c.Pool = pool })
	ctx := context.Background()
	acme, key := sendingProjectOf(t, in, v1alpha1.ProjectSpec{Verification: v1alpha1.VerificationIdentityApproved}, rcv, apikey.Test)
	if err := in.k8s.Create(ctx, &v1alpha1.RiskPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "rules"}, Spec: v1alpha1.RiskPolicySpec{
		Rules: []v1alpha1.RiskRule{{Name: "shortened", Expression: `message.shortenedLinks > 0`, Outcome: "hold"}}}}); err != nil {
		t.Fatal(err)
	}
	send := func(to, text string) string {
		t.Helper()
		r := in.post("/v1/messages", key, `{"to":"`+to+`","text":"`+text+`"}`)
		if r.status != 200 {
			t.Fatalf("send = %d %v", r.status, r.body)
		}
		return r.body["message"].(map[string]any)["id"].(string)
	}
	broadcastOf := func() string {
		t.Helper()
		r := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"b","text":"Our sale starts Friday"}`)
		id := r.body["broadcast"].(map[string]any)["id"].(string)
		in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[{"recipient":"+447700900001"},{"recipient":"+447700900002"}]}`)
		in.post("/v1/broadcasts/"+id+"/send", key, `{}`)
		return id
	}
	// A little of everything: a message with its deliveries, a hold, a broadcast.
	first := send("+15005550100", "Hello")
	waitFor(t, func() bool { // the policy applies once the cache has it
		held := send("+15005550111", "See bit.ly/abc")
		time.Sleep(200 * time.Millisecond)
		r := in.get("/v2/messages/"+held, key)
		m, ok := r.body["message"].(map[string]any)
		if !ok {
			t.Fatalf("GET %s = %d %v", held, r.status, r.body)
		}
		return m["riskHold"] == true
	})
	b := broadcastOf()
	settle := func() {
		waitFor(t, func() bool {
			time.Sleep(200 * time.Millisecond) // within the project's request rate
			items, _ := in.get("/v2/webhook/deliveries?status=pending", key).body["items"].([]any)
			return len(items) == 0 && in.get("/v1/broadcasts/"+b, key).body["broadcast"].(map[string]any)["status"] == "completed"
		})
	}
	settle()

	client := consoleClient(t, in, key)
	pages := []string{"/console/messages?period=24h", "/console/messages?period=24h&to=%2B15005550100", "/console/messages/" + first,
		"/console/conversations", "/console/deliveries", "/console/review", "/console/broadcasts", "/console/broadcasts/" + b,
		"/console/usage", "/console/senders"}
	measure := func() map[string]int64 {
		out := map[string]int64{}
		for _, p := range pages {
			before := counter.n.Load()
			resp, err := client.Get(in.url + p)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s = %d", p, resp.StatusCode)
			}
			out[p] = counter.n.Load() - before
		}
		return out
	}
	few := measure()

	// Many more rows of each kind.
	for range 6 {
		send("+15005550100", "Hello again")
		send("+15005550111", "See bit.ly/more")
	}
	for range 3 {
		b = broadcastOf()
	}
	settle()
	many := measure()
	for _, p := range pages {
		t.Logf("%s: %d statements with few rows, %d with many", p, few[p], many[p])
		if many[p] != few[p] {
			t.Errorf("%s: %d statements with more rows, %d with few: reads grow with the rows", p, many[p], few[p])
		}
		// The session's statement, one per list; a broadcast's snapshot (BEGIN, its row, the
		// changes not folded in yet, COMMIT) and a balance's read are a few statements each.
		if many[p] > 7 {
			t.Errorf("%s: %d statements", p, many[p])
		}
	}
}

var signinToken = regexp.MustCompile(`name="token" value="([^"]+)"`)

// consoleClient is an HTTP client signed in to the console with key, through its form.
func consoleClient(t *testing.T, in *instance, key string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(in.url + "/console/signin")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := signinToken.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no sign-in token in:\n%s", page)
	}
	resp, err = c.PostForm(in.url+"/console/signin", url.Values{"token": {string(m[1])}, "apiKey": {key}, "next": {"/console/messages"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/console/messages" {
		t.Fatalf("signing in ended at %s (%d)", resp.Request.URL, resp.StatusCode)
	}
	return c
}
