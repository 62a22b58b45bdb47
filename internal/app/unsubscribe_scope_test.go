package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/emailcheck"
)

// sendEmail sends a single email with key and returns the message once it is delivered or failed.
func sendEmail(t *testing.T, in *instance, key, to string) map[string]any {
	t.Helper()
	r := in.post("/v1/messages", key, `{"to":"`+to+`","subject":"Your receipt","text":"Order 42: paid."}`)
	if r.status != 200 && r.status != 201 && r.status != 202 {
		t.Fatalf("send to %s = %d %v", to, r.status, r.body)
	}
	id := r.body["message"].(map[string]any)["id"].(string)
	var m map[string]any
	waitFor(t, func() bool {
		m, _ = in.get("/v2/messages/"+id, key).body["message"].(map[string]any)
		return m["status"] == "delivered" || m["status"] == "failed"
	})
	return m
}

// An unsubscribe stops broadcasts only, unless the Project's spec.email.unsubscribeScope is all;
// bounces, complaints and manual entries stop every email whatever the scope.
func TestUnsubscribeScope(t *testing.T) {
	in := start(t, fastSandbox)
	// Room for the sends that wait for a changed setting below.
	many := int64(10000)
	acme, key := sendingProjectOf(t, in, v1alpha1.ProjectSpec{DailyLimits: &v1alpha1.DailyLimits{Email: &many}}, nil, apikey.Test)
	strict, strictKey := sendingProjectOf(t, in, v1alpha1.ProjectSpec{
		Email: &v1alpha1.ProjectEmail{UnsubscribeScope: v1alpha1.UnsubscribeScopeAll}}, nil, apikey.Test)
	ctx := context.Background()
	checks := &emailcheck.Checker{Pool: in.db}
	for p, k := range map[string]string{acme: key, strict: strictKey} {
		// What the one-click link of a broadcast's email records.
		if err := checks.Unsubscribe(ctx, p, true, "una@example.com", "brd_1"); err != nil {
			t.Fatal(err)
		}
		if err := checks.Suppress(ctx, p, true, "gone@example.com", emailcheck.ReasonHardBounce, "", "550 5.1.1 no such user"); err != nil {
			t.Fatal(err)
		}
		if r := in.post("/v1/email-suppressions", k, `{"email":"man@example.com"}`); r.status != 201 {
			t.Fatalf("add a manual entry = %d %v", r.status, r.body)
		}
	}
	expect := func(key, to, status string) {
		t.Helper()
		m := sendEmail(t, in, key, to)
		code, _ := m["errorCode"].(string)
		if m["status"] != status || (status == "failed") != (code == emailcheck.CodeRecipientSuppressed) {
			t.Errorf("a single send to %s: %v %v, want %s", to, m["status"], m["errorCode"], status)
		}
	}

	// By default a single send (a receipt) to an unsubscribed address goes; the other entries refuse it.
	expect(key, "una@example.com", "delivered")
	expect(key, "UNA@example.com", "delivered")
	expect(key, "gone@example.com", "failed")
	expect(key, "man@example.com", "failed")

	// Scope all: the unsubscribe refuses single sends too; a clean address still gets mail.
	expect(strictKey, "una@example.com", "failed")
	expect(strictKey, "gone@example.com", "failed")
	expect(strictKey, "man@example.com", "failed")
	expect(strictKey, "ana@example.com", "delivered")

	// The setting is read at each send: changed, it holds for the next one.
	updateProject(t, in, acme, func(s *v1alpha1.ProjectSpec) {
		s.Email = &v1alpha1.ProjectEmail{UnsubscribeScope: v1alpha1.UnsubscribeScopeAll}
	})
	waitFor(t, func() bool { return sendEmail(t, in, key, "una@example.com")["status"] == "failed" })
	updateProject(t, in, acme, func(s *v1alpha1.ProjectSpec) {
		s.Email.UnsubscribeScope = v1alpha1.UnsubscribeScopeBroadcasts
	})
	waitFor(t, func() bool { return sendEmail(t, in, key, "una@example.com")["status"] == "delivered" })
}

// emailSuppression is the suppression a contact shows on its email channel address (nil: none),
// failing when a channel of another type shows one.
func emailSuppression(t *testing.T, contact map[string]any, address string) map[string]any {
	t.Helper()
	var out map[string]any
	found := false
	for key, ch := range channelsOf(t, contact) {
		s, has := ch["suppression"].(map[string]any)
		if has && ch["channel"] != "email" {
			t.Errorf("%s shows a suppression: %v", key, s)
		}
		if key == "email:"+address {
			out, found = s, true
		}
	}
	if !found {
		t.Fatalf("contact %v has no email channel %s", contact["id"], address)
	}
	return out
}

// A contact shows, on each email channel, the address's entry in force on the project's
// suppression list in the key's mode.
func TestContactShowsEmailSuppression(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	test, live := newKey(t, in, acme, apikey.Test), newKey(t, in, acme, apikey.Live)
	ctx := context.Background()
	checks := &emailcheck.Checker{Pool: in.db}
	if err := checks.Unsubscribe(ctx, acme, true, "una@example.com", "brd_1"); err != nil {
		t.Fatal(err)
	}
	if err := checks.Suppress(ctx, acme, true, "soft@example.com", emailcheck.ReasonSoftBounce, "", "452 mailbox full"); err != nil {
		t.Fatal(err)
	}
	if err := checks.Suppress(ctx, acme, true, "gone@example.com", emailcheck.ReasonHardBounce, "", "550 5.1.1"); err != nil {
		t.Fatal(err)
	}
	// The live list has its own entries.
	if r := in.post("/v1/email-suppressions", live, `{"email":"ana@example.com","reason":"unsubscribe","detail":"asked by phone"}`); r.status != 201 {
		t.Fatalf("add a live entry = %d %v", r.status, r.body)
	}

	create := func(key, body string) string {
		t.Helper()
		r := in.post("/v1/contacts", key, body)
		if r.status != 201 {
			t.Fatalf("create contact = %d %s", r.status, r.raw)
		}
		return r.body["id"].(string)
	}
	una := create(test, `{"channels":[{"channel":"sms","identifier":"+14155550100"},{"channel":"email","identifier":"Una@Example.com"}]}`)
	ana := create(test, `{"channels":[{"channel":"email","identifier":"ana@example.com"}]}`)
	soft := create(test, `{"channels":[{"channel":"email","identifier":"soft@example.com"}]}`)
	liveAna := create(live, `{"channels":[{"channel":"email","identifier":"ana@example.com"},{"channel":"email","identifier":"una@example.com"}]}`)

	for _, path := range []string{"/v1/contacts/" + una, "/v2/contacts/" + una} {
		r := in.get(path, test)
		s := emailSuppression(t, r.body, "una@example.com")
		created, _ := time.Parse(time.RFC3339, stringOf(s["createdAt"]))
		if r.status != 200 || s == nil || s["reason"] != "unsubscribe" || s["broadcastId"] != "brd_1" || created.IsZero() ||
			s["until"] != nil || len(s) != 3 {
			t.Errorf("GET %s: suppression %v (%d)", path, s, r.status)
		}
	}
	if s := emailSuppression(t, in.get("/v1/contacts/"+ana, test).body, "ana@example.com"); s != nil {
		t.Errorf("a test contact shows the live list's entry: %v", s)
	}
	s := emailSuppression(t, in.get("/v1/contacts/"+soft, test).body, "soft@example.com")
	if until, _ := time.Parse(time.RFC3339, stringOf(s["until"])); s["reason"] != "soft_bounce" || until.IsZero() || s["broadcastId"] != nil {
		t.Errorf("soft bounce: %v", s)
	}

	// A page shows each contact's.
	r := in.get("/v1/contacts?limit=10", test)
	if r.status != 200 || len(ids(r)) != 3 {
		t.Fatalf("list = %d %s", r.status, r.raw)
	}
	for _, it := range r.body["items"].([]any) {
		c := it.(map[string]any)
		switch c["id"] {
		case una:
			if s := emailSuppression(t, c, "una@example.com"); s == nil || s["reason"] != "unsubscribe" {
				t.Errorf("listed una: %v", s)
			}
		case ana:
			if s := emailSuppression(t, c, "ana@example.com"); s != nil {
				t.Errorf("listed ana: %v", s)
			}
		case soft:
			if s := emailSuppression(t, c, "soft@example.com"); s == nil || s["reason"] != "soft_bounce" {
				t.Errorf("listed soft: %v", s)
			}
		}
	}

	// A live contact sees the live list only.
	c := in.get("/v1/contacts/"+liveAna, live).body
	if s := emailSuppression(t, c, "ana@example.com"); s == nil || s["reason"] != "unsubscribe" || s["broadcastId"] != nil {
		t.Errorf("live ana: %v", s)
	}
	if s := emailSuppression(t, c, "una@example.com"); s != nil {
		t.Errorf("a live contact shows the test list's entry: %v", s)
	}

	// An added channel shows it at once; an entry removed from the list is shown no more.
	r = in.post("/v1/contacts/"+ana+"/channels", test, `{"channel":"email","identifier":"gone@example.com"}`)
	if s, _ := r.body["channel"].(map[string]any)["suppression"].(map[string]any); r.status != 201 || s["reason"] != "hard_bounce" {
		t.Errorf("add channel = %d %s", r.status, r.raw)
	}
	if r := in.delete("/v1/email-suppressions/una@example.com", test); r.status != 204 {
		t.Fatalf("remove = %d %v", r.status, r.body)
	}
	if s := emailSuppression(t, in.get("/v1/contacts/"+una, test).body, "una@example.com"); s != nil {
		t.Errorf("removed from the list, still shown: %v", s)
	}
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}
