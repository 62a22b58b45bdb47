package app_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/cli"
)

// page drives one Chromium tab through the console.
type page struct {
	t   *testing.T
	ctx context.Context
}

func (p page) open(u string) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, chromedp.Navigate(u), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		p.t.Fatalf("open %s: %v", u, err)
	}
}

func (p page) text(sel string) string {
	p.t.Helper()
	for try := 0; ; try++ {
		s, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(sel)))
		// Just after a navigation, chromedp may still hold the previous document's nodes, and
		// the node it found is gone: ask again once its view of the page has caught up.
		if err != nil && strings.Contains(err.Error(), "No node with given id found") && try < 50 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil {
			p.t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
}

func (p page) location() string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Location())
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

// submit clicks sel and waits for the page it leads to (its h1 again).
func (p page) submit(sel string) {
	p.t.Helper()
	before := p.location()
	if err := chromedp.Do(p.ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		p.t.Fatalf("click %s: %v", sel, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		loc, err := chromedp.Run(p.ctx, chromedp.Location())
		if err == nil && loc != before {
			break
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS("body")))
			p.t.Fatalf("clicking %s left the page at %s:\n%s", sel, loc, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := chromedp.Do(p.ctx, chromedp.WaitReady(chromedp.CSS("h1"))); err != nil {
		p.t.Fatal(err)
	}
}

func (p page) cookie(name string) string {
	p.t.Helper()
	got, err := chromedp.Call(p.ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		p.t.Fatal(err)
	}
	for _, c := range got.Cookies {
		if c.Name == name {
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict {
				p.t.Errorf("cookie %s: HttpOnly %v, SameSite %v", name, c.HTTPOnly, c.SameSite)
			}
			return c.Value
		}
	}
	return ""
}

// TestTheConsoleInChromium walks the console as its two kinds of users: a project signing in
// with its API key finds a message by its recipient, sees its webhook attempts and replays a
// failed one (which arrives), and sees its held message without deciding it; an operator signs
// in with a one-time link and approves the hold. Another project's data stays out of sight,
// forms need their CSRF token, and an idle session ends.
func TestTheConsoleInChromium(t *testing.T) {
	rcv := newDownReceiver(t)
	in := start(t, fastSandbox, deliveringTo(rcv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs))
	ctx := context.Background()
	// Verified, so that it may send broadcasts on sms.
	acme, key := sendingProjectOf(t, in, v1alpha1.ProjectSpec{Verification: v1alpha1.VerificationIdentityApproved},
		&hookReceiver{Server: rcv.Server}, apikey.Test)
	_, rivalKey := sendingProject(t, in, nil, apikey.Test)
	if err := in.k8s.Create(ctx, &v1alpha1.RiskPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "rules"}, Spec: v1alpha1.RiskPolicySpec{
		Rules: []v1alpha1.RiskRule{{Name: "shortened", Expression: `message.shortenedLinks > 0`, Outcome: "hold"}}}}); err != nil {
		t.Fatal(err)
	}
	msg := func(k, to, text string) string {
		t.Helper()
		r := in.post("/v1/messages", k, `{"to":"`+to+`","text":"`+text+`"}`)
		if r.status != 200 {
			t.Fatalf("send = %d %v", r.status, r.body)
		}
		return r.body["message"].(map[string]any)["id"].(string)
	}
	var held string
	waitFor(t, func() bool { // the policy applies once the cache has it
		held = msg(key, "+15005550111", "See bit.ly/abc")
		time.Sleep(100 * time.Millisecond)
		return in.get("/v2/messages/"+held, key).body["message"].(map[string]any)["riskHold"] == true
	})
	hello := msg(key, "+15005550100", "Hello from the console test")
	rivals := msg(rivalKey, "+15005550100", "A rival's message")
	waitFor(t, func() bool { // its three events have failed their five attempts
		items, _ := in.get("/v2/webhook/deliveries?status=failed&messageId="+hello, key).body["items"].([]any)
		return len(items) == 3
	})

	p := page{t: t, ctx: browser(t, "en")}
	p.open(in.url + "/console/")
	if loc := p.location(); !strings.Contains(loc, "/console/signin") {
		t.Fatalf("not signed in, the console sent the browser to %s", loc)
	}
	screenshot(t, p.ctx, "signin")
	// A wrong key is refused, and says so.
	if err := chromedp.Do(p.ctx, chromedp.SetValue(chromedp.CSS("#apiKey"), "svc_test_not-a-key")); err != nil {
		t.Fatal(err)
	}
	p.submit("form.signin button")
	if got := p.text(".problem"); !strings.Contains(got, "not accepted") {
		t.Fatalf("a wrong key: %q", got)
	}
	// Pasted as an Authorization header's value ("Bearer svc_test_…"), the key is taken too.
	if err := chromedp.Do(p.ctx, chromedp.SetValue(chromedp.CSS("#apiKey"), key)); err != nil {
		t.Fatal(err)
	}
	p.submit("form.signin button")
	if loc := p.location(); !strings.HasSuffix(loc, "/console/messages") {
		t.Fatalf("signed in at %s", loc)
	}
	session := p.cookie("switchboard_console")
	if session == "" {
		t.Fatal("no session cookie")
	}

	// Search by recipient: the project's message, not the rival's.
	if err := chromedp.Do(p.ctx, chromedp.SetValue(chromedp.CSS("#f-to"), "+15005550100")); err != nil {
		t.Fatal(err)
	}
	p.submit("form.filters button")
	table := p.text("main table")
	if !strings.Contains(table, "+15005550100") || strings.Count(table, "+15005550100") != 1 {
		t.Fatalf("search by recipient:\n%s", table)
	}
	screenshot(t, p.ctx, "messages")
	p.submit("main table tbody a")
	if loc := p.location(); !strings.HasSuffix(loc, "/console/messages/"+hello) {
		t.Fatalf("the message's page is %s", loc)
	}
	hooks := p.text("section[aria-labelledby=hooks]")
	if !strings.Contains(hooks, "message.queued") || strings.Count(hooks, "500") < 5 || !strings.Contains(hooks, "down for maintenance") {
		t.Fatalf("the message's webhook attempts:\n%s", hooks)
	}
	screenshot(t, p.ctx, "message")

	// Replay the failed message.queued delivery once the receiver is back: it arrives.
	rcv.down.Store(false)
	queued := ""
	for _, it := range in.get("/v2/webhook/deliveries?messageId="+hello+"&event=message.queued", key).body["items"].([]any) {
		queued = it.(map[string]any)["id"].(string)
	}
	p.submit("article[id='" + queued + "'] form button")
	if got := p.text(".flash"); !strings.Contains(got, queued) {
		t.Fatalf("after replay: %q", got)
	}
	waitFor(t, func() bool {
		return in.get("/v2/webhook/deliveries/"+queued, key).body["delivery"].(map[string]any)["status"] == "delivered"
	})
	if took := rcv.tookIDs(); len(took) != 1 || took[0] != queued {
		t.Fatalf("the receiver took %v", took)
	}

	// The deliveries page: the endpoint's health and the log.
	p.open(in.url + "/console/deliveries")
	if eps := p.text("section[aria-labelledby=endpoints]"); !strings.Contains(eps, "sender/main") || !strings.Contains(eps, rcv.URL) {
		t.Fatalf("endpoints:\n%s", eps)
	}
	screenshot(t, p.ctx, "deliveries")

	// A broadcast: its counters and the chart of its send; another one cancelled from its page.
	broadcastOf := func(name string, send bool) string {
		t.Helper()
		r := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"`+name+`","text":"Our sale starts Friday"}`)
		id := r.body["broadcast"].(map[string]any)["id"].(string)
		if r := in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[{"recipient":"+447700900001"},{"recipient":"+447700900002"},{"recipient":"+447700900003"}]}`); r.body["added"] != 3.0 {
			t.Fatalf("add = %v", r.body)
		}
		if send {
			if r := in.post("/v1/broadcasts/"+id+"/send", key, `{}`); r.status != 200 {
				t.Fatalf("send = %d %v", r.status, r.body)
			}
		}
		return id
	}
	sale := broadcastOf("Friday sale", true)
	waitFor(t, func() bool {
		return in.get("/v1/broadcasts/"+sale, key).body["broadcast"].(map[string]any)["status"] == "completed"
	})
	draft := broadcastOf("Draft to cancel", false)
	p.open(in.url + "/console/broadcasts")
	if list := p.text("main table"); !strings.Contains(list, "Friday sale") || !strings.Contains(list, "Draft to cancel") {
		t.Fatalf("broadcasts:\n%s", list)
	}
	p.open(in.url + "/console/broadcasts/" + sale)
	if got := p.text("#c-total") + "/" + p.text("#bstatus"); got != "3/completed" {
		t.Errorf("the broadcast's counters: %s", got)
	}
	bars, err := chromedp.Run(p.ctx, chromedp.Evaluate[int]("document.querySelectorAll('svg.chart rect').length"))
	if err != nil || bars == 0 {
		t.Errorf("the chart of the send has %d bars (%v)", bars, err)
	}
	screenshot(t, p.ctx, "broadcast")
	p.open(in.url + "/console/broadcasts/" + draft)
	p.submit("#cancel")
	if got := p.text(".flash"); !strings.Contains(got, draft) {
		t.Fatalf("after cancelling: %q", got)
	}
	if st := in.get("/v1/broadcasts/"+draft, key).body["broadcast"].(map[string]any)["status"]; st != "cancelled" {
		t.Errorf("the cancelled broadcast is %v", st)
	}

	// Usage and money: the balance, the day's use by channel, the ledger.
	p.open(in.url + "/console/usage")
	if u := p.text("main"); !strings.Contains(u, "Balance") || !strings.Contains(u, "sms") {
		t.Errorf("usage:\n%s", u)
	}
	screenshot(t, p.ctx, "usage")

	// The review queue: the held message and the rule's reason, no decision for a project.
	p.open(in.url + "/console/review")
	if q := p.text("main"); !strings.Contains(q, held) || !strings.Contains(q, "shortened") {
		t.Fatalf("the project's review queue:\n%s", q)
	}
	if n, err := chromedp.Run(p.ctx, chromedp.Evaluate[int]("document.querySelectorAll('button[value=approve]').length")); err != nil || n != 0 {
		t.Errorf("a project's review queue offers %d decisions (%v)", n, err)
	}

	// Another project's message is not found; forms without the session's CSRF token are refused.
	if r := consoleGet(t, in, session, "/console/messages/"+rivals); r.StatusCode != 404 {
		t.Errorf("the rival's message: %d", r.StatusCode)
	}
	before := in.get("/v2/webhook/deliveries/"+queued, key).body["delivery"].(map[string]any)["replays"]
	for _, csrf := range []string{"", "forged"} {
		if r := consolePost(t, in, session, "/console/deliveries/"+queued+"/replay", url.Values{"csrf": {csrf}}); r.StatusCode != 403 {
			t.Errorf("a replay with csrf %q: %d", csrf, r.StatusCode)
		}
	}
	if r := consolePost(t, in, session, "/console/review/"+held, url.Values{"decision": {"approve"}}); r.StatusCode != 403 {
		t.Errorf("a decision without its token: %d", r.StatusCode)
	}
	if after := in.get("/v2/webhook/deliveries/"+queued, key).body["delivery"].(map[string]any)["replays"]; after != before {
		t.Errorf("a refused form replayed: %v → %v", before, after)
	}

	// Idle for longer than the timeout, the session is over.
	if _, err := in.db.Exec(ctx, `UPDATE console_sessions SET last_seen_at = now() - interval '31 minutes'`); err != nil {
		t.Fatal(err)
	}
	p.open(in.url + "/console/messages")
	if loc := p.location(); !strings.Contains(loc, "/console/signin") {
		t.Fatalf("an idle session still shows %s", loc)
	}

	// A shortened URL the checks rejected, escalated by the project for an operator's review.
	r := in.post("/v1/urls", key, `{"url":"https://bit.ly/console-test"}`)
	urlID, _ := r.body["url"].(map[string]any)["id"].(string)
	if r := in.post("/v1/urls/"+urlID+"/escalate", key, `{"reason":"our own shortener"}`); r.status != 200 {
		t.Fatalf("escalate = %d %v", r.status, r.body)
	}

	// An operator's one-time link: every project, and the decisions.
	var out bytes.Buffer
	if code := cli.Execute([]string{"console", "login", "--url", in.url, "--operator", "ops", "--database-url", in.db.Config().ConnString()},
		&out, &out); code != 0 {
		t.Fatalf("console login: %d %s", code, out.String())
	}
	link := strings.TrimSpace(out.String())
	op := page{t: t, ctx: browser(t, "es")}
	op.open(link)
	op.open(in.url + "/console/review?project=" + acme + "&mode=test")
	if q := op.text("main"); !strings.Contains(q, held) || !strings.Contains(q, "Aprobar") {
		t.Fatalf("the operator's review queue:\n%s", q)
	}
	screenshot(t, op.ctx, "review")
	op.submit("tr[id='" + held + "'] button[value=approve]")
	if got := op.text(".flash"); !strings.Contains(got, held) {
		t.Fatalf("after approving: %q", got)
	}
	waitFor(t, func() bool {
		m := in.get("/v2/messages/"+held, key).body["message"].(map[string]any)
		return m["riskHold"] == false && m["status"] == "delivered"
	})
	// The escalated URL, approved.
	if q := op.text("section[aria-labelledby=urls]"); !strings.Contains(q, "bit.ly/console-test") || !strings.Contains(q, "our own shortener") {
		t.Fatalf("the escalated URLs:\n%s", q)
	}
	op.submit("tr[id='" + urlID + "'] button[value=approve]")
	if st := in.get("/v1/urls/"+urlID, key).body["url"].(map[string]any)["status"]; st != "approved" {
		t.Errorf("the approved URL is %v", st)
	}
	var actor, action string
	if err := in.db.QueryRow(ctx, `SELECT actor, action FROM console_audit WHERE project = $1 AND target = $2`, acme, held).Scan(&actor, &action); err != nil ||
		actor != "operator ops" || action != "approve held message" {
		t.Errorf("audit: %q %q %v", actor, action, err)
	}
	// The link works once.
	other := page{t: t, ctx: browser(t, "en")}
	other.open(link)
	if got := other.text(".problem"); !strings.Contains(got, "already used") {
		t.Errorf("a used link: %q", got)
	}
	// Signing out ends the session.
	op.submit("form[action='/console/signout'] button")
	op.open(in.url + "/console/messages")
	if loc := op.location(); !strings.Contains(loc, "/console/signin") {
		t.Errorf("after signing out: %s", loc)
	}
	if h := op.text("h1"); h != "Inicia sesión en la consola" {
		t.Errorf("the Spanish sign-in page: %q", h)
	}
}

func consoleRequest(t *testing.T, req *http.Request, session string) *http.Response {
	t.Helper()
	req.AddCookie(&http.Cookie{Name: "switchboard_console", Value: session})
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func consoleGet(t *testing.T, in *instance, session, path string) *http.Response {
	req, _ := http.NewRequest(http.MethodGet, in.url+path, nil)
	return consoleRequest(t, req, session)
}

func consolePost(t *testing.T, in *instance, session, path string, form url.Values) *http.Response {
	req, _ := http.NewRequest(http.MethodPost, in.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return consoleRequest(t, req, session)
}
