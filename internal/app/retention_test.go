package app_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/randid"
	"github.com/switchboard-io/switchboard/internal/retention"
)

// Messages older than the retention are not shown (404 saying why, absent from lists) even
// before their day's partition is dropped, and an idempotency key older than its window is
// claimed anew.
func TestRetentionHidesExpiredMessagesAndKeys(t *testing.T) {
	in := start(t, fastSandbox, func(c *app.Config) {
		c.Retention = retention.Policy{Messages: 30, WebhookDeliveries: 30, IdempotencyKeys: 2}
	})
	project, key := sendingProject(t, in, nil, apikey.Test)
	ctx := context.Background()

	sent := in.post("/v1/messages", key, `{"to":"+15005550100","text":"today","idempotencyKey":"fresh"}`)
	if sent.status != http.StatusOK {
		t.Fatalf("send: %d %s", sent.status, sent.raw)
	}
	newID := sent.body["message"].(map[string]any)["id"].(string)
	if _, ok := randid.TimeOf(newID); !ok {
		t.Fatalf("a new message's id %q carries no time", newID)
	}

	// A message of 40 days ago, still in its partition.
	old := time.Now().UTC().Add(-40 * 24 * time.Hour).Truncate(time.Microsecond)
	oldID, err := randid.Timed("msg_", old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.db.Exec(ctx, `
		INSERT INTO messages (id, project, test_mode, direction, channel, message_type, status, recipient, body, created_at, updated_at)
		VALUES ($1, $2, true, 'outbound', 'sms', 'text', 'delivered', '+15005550100', 'old', $3, $3)`, oldID, project, old); err != nil {
		t.Fatal(err)
	}
	r := in.get("/v1/messages/"+oldID, key)
	if r.status != http.StatusNotFound || !strings.Contains(string(r.raw), "kept 30 days") {
		t.Fatalf("an expired message: %d %s; want 404 saying it was kept 30 days", r.status, r.raw)
	}
	if r := in.get("/v1/messages/"+newID, key); r.status != http.StatusOK {
		t.Fatalf("today's message: %d %s", r.status, r.raw)
	}
	list := in.get("/v1/messages", key)
	items := list.body["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["id"] != newID {
		t.Fatalf("the list shows %v; want today's message alone", items)
	}

	// A key of three days ago has expired: a send with it is a new message.
	if _, err := in.db.Exec(ctx, `
		INSERT INTO message_idempotency_keys (project, test_mode, key, message_id, created_at)
		VALUES ($1, true, 'stale', $2, $3)`, project, oldID, time.Now().Add(-72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"again","idempotencyKey":"stale"}`); r.status != http.StatusOK {
		t.Fatalf("a send with an expired key: %d %s; want a new message", r.status, r.raw)
	}
	if r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"today","idempotencyKey":"fresh"}`); r.status != http.StatusConflict {
		t.Fatalf("a repeat within the window: %d %s; want 409", r.status, r.raw)
	}

	// A project that keeps its messages 10 days: a message of 15 days ago is gone from its API,
	// which the installation's 30 days would still show.
	days := int32(10)
	brief := newProject(t, in, v1alpha1.ProjectSpec{Retention: &v1alpha1.ProjectRetention{MessagesDays: &days}})
	briefKey := newKey(t, in, brief, apikey.Test)
	fifteen := time.Now().UTC().Add(-15 * 24 * time.Hour).Truncate(time.Microsecond)
	fifteenID, err := randid.Timed("msg_", fifteen)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.db.Exec(ctx, `
		INSERT INTO messages (id, project, test_mode, direction, channel, message_type, status, recipient, body, created_at, updated_at)
		VALUES ($1, $2, true, 'outbound', 'sms', 'text', 'delivered', '+15005550100', 'old', $3, $3)`, fifteenID, brief, fifteen); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r := in.get("/v1/messages/"+fifteenID, briefKey)
		return r.status == http.StatusNotFound && strings.Contains(string(r.raw), "kept 10 days")
	})
	if items := in.get("/v1/messages", briefKey).body["items"].([]any); len(items) != 0 {
		t.Fatalf("the project's list shows %v", items)
	}
}

// A list page reads spans that double back from its top (partition.NewestFirst): messages a day,
// three days, twenty days and two hundred days old come newest first, across pages and the
// cursor.
func TestListPagesReachBackAcrossSpans(t *testing.T) {
	in := start(t, fastSandbox)
	project, key := sendingProject(t, in, nil, apikey.Test)
	var want []string
	for _, ago := range []time.Duration{time.Hour, 3 * 24 * time.Hour, 20 * 24 * time.Hour, 200 * 24 * time.Hour} {
		want = append(want, insertMessageAgo(t, in, project, nil, ago))
	}
	if got := pagedIDs(t, in, key, "/v1/messages?limit=3"); !slices.Equal(got, want) {
		t.Errorf("pages through the cursor = %v, want %v (newest first)", got, want)
	}
}

// A conversation keeps the days of its messages, and a page of them reads those days' partitions
// only; one from before the days were kept (message_days_from unset) is read back through the
// spans, and keeps its days from its next message on.
func TestConversationPagesReadTheDaysOfItsMessages(t *testing.T) {
	in := start(t, fastSandbox)
	project, key := sendingProject(t, in, nil, apikey.Test)
	ctx := context.Background()
	var newest []string
	for _, text := range []string{"first", "second"} {
		r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"`+text+`"}`)
		if r.status != http.StatusAccepted && r.status != http.StatusOK {
			t.Fatalf("send: %d %s", r.status, r.raw)
		}
		newest = append([]string{r.body["message"].(map[string]any)["id"].(string)}, newest...)
	}
	var conv string
	var days []time.Time
	var from *time.Time
	kept := func() {
		t.Helper()
		if err := in.db.QueryRow(ctx, `SELECT id, message_days, message_days_from FROM conversations WHERE project = $1`, project).
			Scan(&conv, &days, &from); err != nil {
			t.Fatal(err)
		}
	}
	kept()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	if len(days) != 1 || !days[0].Equal(today) || from == nil || time.Since(*from) > time.Minute {
		t.Fatalf("a new conversation keeps %v from %v, want today from its first message", days, from)
	}

	// Earlier messages of the conversation, on days it kept when they were recorded.
	var older []string
	for _, ago := range []time.Duration{3 * 24 * time.Hour, 20 * 24 * time.Hour, 200 * 24 * time.Hour, 250 * 24 * time.Hour} {
		older = append(older, insertMessageAgo(t, in, project, &conv, ago))
	}
	pages := func() []string { return pagedIDs(t, in, key, "/v1/conversations/"+conv+"/messages?limit=2") }
	// The conversation began 201 days ago and kept its days since; the 200-day-old message's day
	// is not among them, and the 250-day-old one is older than the conversation (neither can
	// be, but they show that a page reads only the kept days, and nothing before its first).
	if _, err := in.db.Exec(ctx, `UPDATE conversations SET message_days = message_days || ARRAY[$2::date, $3::date],
		message_days_from = $4, created_at = $4 WHERE id = $1`, conv, today.Add(-3*24*time.Hour), today.Add(-20*24*time.Hour),
		time.Now().Add(-201*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, want := pages(), append(slices.Clone(newest), older[:2]...); !slices.Equal(got, want) {
		t.Errorf("pages on the kept days = %v, want %v (newest first; the day not kept and before the first are not read)", got, want)
	}
	// Before the days were kept (a conversation older than the migration): every message, through
	// the spans; the next message begins the days, and what came before is still read.
	if _, err := in.db.Exec(ctx, `UPDATE conversations SET message_days = NULL, message_days_from = NULL WHERE id = $1`, conv); err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(newest), older...)
	if got := pages(); !slices.Equal(got, all) {
		t.Errorf("pages before the days were kept = %v, want %v", got, all)
	}
	r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"third"}`)
	if r.status != http.StatusAccepted && r.status != http.StatusOK {
		t.Fatalf("send: %d %s", r.status, r.raw)
	}
	kept()
	if len(days) != 1 || !days[0].Equal(today) || from == nil || time.Since(*from) > time.Minute {
		t.Errorf("the next message began the days %v from %v, want today from now", days, from)
	}
	all = append([]string{r.body["message"].(map[string]any)["id"].(string)}, all...)
	if got := pages(); !slices.Equal(got, all) {
		t.Errorf("pages once the days are kept again = %v, want %v (the earlier ones through the spans)", got, all)
	}

	// A message on a day the conversation has not kept yet adds it (the kept days here say the
	// last one was five days ago).
	fiveDaysAgo := today.Add(-5 * 24 * time.Hour)
	if _, err := in.db.Exec(ctx, `UPDATE conversations SET message_days = ARRAY[$2::date] WHERE id = $1`, conv, fiveDaysAgo); err != nil {
		t.Fatal(err)
	}
	if r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"fourth"}`); r.status != http.StatusAccepted && r.status != http.StatusOK {
		t.Fatalf("send: %d %s", r.status, r.raw)
	}
	kept()
	if len(days) != 2 || !days[0].Equal(fiveDaysAgo) || !days[1].Equal(today) {
		t.Errorf("after a message on a new day the conversation keeps %v, want [%v %v]", days, fiveDaysAgo, today)
	}
}

// A list of the messages to one recipient reads the days that hold them: its conversations'
// days for what was sent to it, the days it received inbound messages as one of the project's
// addresses, and, before those days were kept, everything back through the spans.
func TestRecipientPagesReadTheDaysOfItsMessages(t *testing.T) {
	in := start(t, fastSandbox)
	project, key := sendingProject(t, in, nil, apikey.Test)
	ctx := context.Background()
	const contact = "+15005550100"
	var sent []string
	for _, text := range []string{"first", "second"} {
		r := in.post("/v1/messages", key, `{"to":"`+contact+`","text":"`+text+`"}`)
		if r.status != http.StatusAccepted && r.status != http.StatusOK {
			t.Fatalf("send: %d %s", r.status, r.raw)
		}
		sent = append([]string{r.body["message"].(map[string]any)["id"].(string)}, sent...)
	}
	if r := in.post("/v1/messages", key, `{"to":"+15005550101","text":"another"}`); r.status != http.StatusAccepted && r.status != http.StatusOK {
		t.Fatalf("send: %d %s", r.status, r.raw)
	}
	inbound := receive(t, in, key, `{"from":"`+contact+`","channel":"sms","text":"hi"}`)
	ours := inbound["to"].(string)
	var conv string
	if err := in.db.QueryRow(ctx, `SELECT id FROM conversations WHERE project = $1 AND contact_identifier = $2`, project, contact).Scan(&conv); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	var inboundDays []time.Time
	if err := in.db.QueryRow(ctx, `SELECT array_agg(day) FROM inbound_days WHERE project = $1 AND recipient = $2`, project, ours).
		Scan(&inboundDays); err != nil || len(inboundDays) != 1 || !inboundDays[0].Equal(today) {
		t.Fatalf("inbound days of %s = %v (%v), want today", ours, inboundDays, err)
	}
	to := func(recipient, more string) []string {
		return pagedIDs(t, in, key, "/v1/messages?limit=2&to="+url.QueryEscape(recipient)+more)
	}
	if got := to(contact, ""); !slices.Equal(got, sent) {
		t.Fatalf("to=%s = %v, want %v", contact, got, sent)
	}
	if got := to(ours, ""); !slices.Equal(got, []string{inbound["id"].(string)}) {
		t.Fatalf("to=%s = %v, want the inbound message", ours, got)
	}
	if got := to("+15005550199", ""); len(got) != 0 {
		t.Fatalf("to= a recipient never written to = %v", got)
	}

	// The days have been kept since 100 days ago (as if the migration ran then). Messages on the
	// conversation's days and on the address's inbound days are read; those on days neither
	// kept (notKept: which cannot be, but they show that only the kept days are read) are not; and
	// everything before the days were kept is read back, on the day they began too.
	keptFrom := today.Add(-100*24*time.Hour + 12*time.Hour)
	if _, err := in.db.Exec(ctx, `UPDATE kept_days SET kept_from = $1 WHERE name = 'recipients'`, keptFrom); err != nil {
		t.Fatal(err)
	}
	day := func(n int) time.Time { return today.Add(-time.Duration(n) * 24 * time.Hour) }
	onKeptDay := []string{
		insertMessageAt(t, in, project, &conv, "outbound", contact, day(3).Add(time.Hour)),
		insertMessageAt(t, in, project, &conv, "outbound", contact, day(20).Add(time.Hour)),
	}
	notKept := insertMessageAt(t, in, project, &conv, "outbound", contact, day(40).Add(time.Hour))
	beforeKept := []string{
		insertMessageAt(t, in, project, &conv, "outbound", contact, keptFrom.Add(-time.Hour)), // its day, before it
		insertMessageAt(t, in, project, &conv, "outbound", contact, day(200)),
	}
	inboundKept := insertMessageAt(t, in, project, &conv, "inbound", ours, day(10).Add(time.Hour))
	inboundNotKept := insertMessageAt(t, in, project, &conv, "inbound", ours, day(15).Add(time.Hour))
	inboundBefore := insertMessageAt(t, in, project, &conv, "inbound", ours, day(150))
	if _, err := in.db.Exec(ctx, `UPDATE conversations SET message_days = message_days || ARRAY[$2::date, $3::date] WHERE id = $1`,
		conv, day(3), day(20)); err != nil {
		t.Fatal(err)
	}
	if _, err := in.db.Exec(ctx, `INSERT INTO inbound_days (project, test_mode, recipient, day) VALUES ($1, true, $2, $3)`,
		project, ours, day(10)); err != nil {
		t.Fatal(err)
	}
	want := append(append(slices.Clone(sent), onKeptDay...), beforeKept...)
	if got := to(contact, ""); !slices.Equal(got, want) {
		t.Errorf("to=%s = %v, want %v (newest first: the kept days, then before they were kept)", contact, got, want)
	}
	if got, want := to(ours, ""), []string{inbound["id"].(string), inboundKept, inboundBefore}; !slices.Equal(got, want) {
		t.Errorf("to=%s = %v, want %v", ours, got, want)
	}
	// The other filters still hold on the recipient's days.
	if got := to(contact, "&status=failed"); len(got) != 0 {
		t.Errorf("to=%s&status=failed = %v, want none", contact, got)
	}
	if got := to(contact, "&channel=sms"); !slices.Equal(got, want) {
		t.Errorf("to=%s&channel=sms = %v, want %v", contact, got, want)
	}

	// Without the row that says when the lists began, everything is read back through the spans.
	if _, err := in.db.Exec(ctx, `DELETE FROM kept_days`); err != nil {
		t.Fatal(err)
	}
	all := append(append(slices.Clone(sent), onKeptDay...), notKept)
	if got, want := to(contact, ""), append(all, beforeKept...); !slices.Equal(got, want) {
		t.Errorf("to=%s without kept_days = %v, want every message %v", contact, got, want)
	}
	if got, want := to(ours, ""), []string{inbound["id"].(string), inboundKept, inboundNotKept, inboundBefore}; !slices.Equal(got, want) {
		t.Errorf("to=%s without kept_days = %v, want %v", ours, got, want)
	}

	// Retention removes the inbound days past the messages' own.
	pruner := &retention.Pruner{Pool: in.db, Policy: retention.Policy{Messages: 5, WebhookDeliveries: 30, IdempotencyKeys: 2}}
	if err := pruner.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := in.db.QueryRow(ctx, `SELECT count(*) FROM inbound_days WHERE project = $1`, project).Scan(&left); err != nil || left != 1 {
		t.Errorf("inbound days after a 5-day retention: %d (%v), want today's alone", left, err)
	}
}

// pagedIDs follows a list's cursor from path (which sets a limit) to its end: the items' ids.
func pagedIDs(t *testing.T, in *instance, key, path string) []string {
	t.Helper()
	var got []string
	cursor := ""
	for range 20 {
		page := path
		if cursor != "" {
			page += "&cursor=" + url.QueryEscape(cursor)
		}
		r := in.get(page, key)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", page, r.status, r.raw)
		}
		for _, m := range r.body["items"].([]any) {
			got = append(got, m.(map[string]any)["id"].(string))
		}
		if cursor, _ = r.body["nextCursor"].(string); cursor == "" {
			return got
		}
	}
	t.Fatalf("%s: still a next page after 20", path)
	return nil
}

// insertMessageAgo stores a delivered test-mode message made ago (in conversation, if given)
// straight into its partition, as if it had been sent then, and returns its id.
func insertMessageAgo(t *testing.T, in *instance, project string, conversation *string, ago time.Duration) string {
	t.Helper()
	return insertMessageAt(t, in, project, conversation, "outbound", "+15005550100", time.Now().Add(-ago))
}

// insertMessageAt stores a delivered test-mode message of direction to recipient made at
// (in conversation, if given) straight into its partition, and returns its id.
func insertMessageAt(t *testing.T, in *instance, project string, conversation *string, direction, recipient string, at time.Time) string {
	t.Helper()
	at = at.UTC().Truncate(time.Microsecond)
	id, err := randid.Timed("msg_", at)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.db.Exec(context.Background(), `
		INSERT INTO messages (id, project, test_mode, direction, channel, message_type, status, recipient, body,
		                      conversation_id, created_at, updated_at)
		VALUES ($1, $2, true, $3, 'sms', 'text', 'delivered', $4, 'then', $5, $6, $6)`,
		id, project, direction, recipient, conversation, at); err != nil {
		t.Fatal(err)
	}
	return id
}
