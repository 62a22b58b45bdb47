package app_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/cli"
)

// Deleting a contact erases the person: afterwards no table of the database (every partition
// included) holds their phone number, email address, name or anything they wrote or were sent;
// they stay opted out and suppressed (as a keyed hash); the audit record counts what went; another
// person's data is untouched.
func TestDeletingAContactErasesThePerson(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted())
	project, key := sendingProject(t, in, rcv, apikey.Test)
	ctx := context.Background()
	const phone, email, secret = "+15005550177", "grace.hopper@example.com", "zebra-kumquat"

	r := in.post("/v1/contacts", key, `{"displayName":"Grace Hopper","metadata":{"note":"`+secret+`"},
		"channels":[{"channel":"sms","identifier":"`+phone+`"},{"channel":"email","identifier":"Grace.Hopper@example.com"}]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create contact: %d %s", r.status, r.raw)
	}
	contactID := r.body["id"].(string)
	receive(t, in, key, `{"from":"`+phone+`","text":"my code is `+secret+`"}`)
	for i := range 3 {
		if r := in.post("/v1/messages", key, fmt.Sprintf(`{"to":"%s","text":"Dear Grace Hopper, %s %d","metadata":{"k":"%s"}}`, phone, secret, i, secret)); r.status != http.StatusOK {
			t.Fatalf("send: %d %s", r.status, r.raw)
		}
	}
	if r := in.post("/v1/messages", key, `{"to":"Grace.Hopper@example.com","subject":"For Grace Hopper","text":"`+secret+`"}`); r.status != http.StatusOK {
		t.Fatalf("send email: %d %s", r.status, r.raw)
	}
	if r := in.post("/v1/email-suppressions", key, `{"email":"`+email+`","reason":"manual"}`); r.status/100 != 2 {
		t.Fatalf("suppress: %d %s", r.status, r.raw)
	}
	if _, err := in.db.Exec(ctx, `INSERT INTO opt_outs (project, test_mode, originator, recipient, created_at)
		VALUES ($1, true, '+15005550006', $2, now())`, project, phone); err != nil {
		t.Fatal(err)
	}
	other := receive(t, in, key, `{"from":"+15005550188","text":"someone else"}`)
	// The messages reach their final steps and their webhooks are delivered before the erasure.
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM messages WHERE status IN ('queued', 'sending')`) == 0 &&
			in.count(`SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'`) == 0
	})

	if r := in.do(http.MethodDelete, "/v1/contacts/"+contactID, key, nil); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	waitFor(t, func() bool { return in.count(`SELECT count(*) FROM erasures WHERE state = 'done'`) == 1 })

	findNothing(t, in, phone, email, "grace hopper", secret)

	// The audit record counts what went, and names nobody (the search above read it too).
	var requestedBy, counts string
	if err := in.poolRow(`SELECT requested_by, counts::text FROM erasures`).Scan(&requestedBy, &counts); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(requestedBy, "api-key:") || !strings.Contains(counts, `"messages": 5`) || !strings.Contains(counts, `"conversations": 2`) {
		t.Errorf("audit record: %s %s", requestedBy, counts)
	}
	// Still suppressed and opted out.
	if s := in.get("/v1/email-suppressions/"+email, key); s.status != http.StatusOK {
		t.Errorf("the erased address is no longer suppressed: %d %s", s.status, s.raw)
	}
	if n := in.count(`SELECT count(*) FROM opt_outs WHERE project = $1 AND recipient = switchboard_erased($1, $2)`, project, phone); n != 1 {
		t.Errorf("the opt-out was not kept as a token: %d", n)
	}
	if r := in.post("/v1/messages", key, `{"to":"`+phone+`","text":"after"}`); r.status == http.StatusOK {
		id := r.body["message"].(map[string]any)["id"].(string)
		waitFor(t, func() bool {
			m := in.get("/v1/messages/"+id, key).body["message"].(map[string]any)
			return m["status"] == "failed"
		})
	}
	// Someone else's message is as it was; the contact is gone.
	if m := in.get("/v1/messages/"+other["id"].(string), key); m.status != http.StatusOK || m.body["message"].(map[string]any)["text"] != "someone else" {
		t.Errorf("another person's message: %d %s", m.status, m.raw)
	}
	if r := in.get("/v1/contacts/"+contactID, key); r.status != http.StatusNotFound {
		t.Errorf("the contact after the erasure: %d", r.status)
	}
}

// findNothing searches every table of the database (every partition, every column) for each
// needle, in lower case.
func findNothing(t *testing.T, in *instance, needles ...string) {
	t.Helper()
	rows, err := in.db.Query(context.Background(), `SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind = 'r'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		for _, needle := range needles {
			if n := in.count(fmt.Sprintf(`SELECT count(*) FROM %q AS x WHERE strpos(lower(x::text), $1) > 0`, table), needle); n != 0 {
				t.Errorf("%s still holds %q in %d rows", table, needle, n)
			}
		}
	}
}

// The operator's command erases a person named by address, in both modes, batch after batch, and
// prints what went.
func TestOperatorErasesAnAddress(t *testing.T) {
	in := start(t, fastSandbox)
	project, key := sendingProject(t, in, nil, apikey.Test)
	const phone, secret = "+15005550166", "lemur-quince"
	for i := range 7 {
		receive(t, in, key, fmt.Sprintf(`{"from":"%s","text":"%s %d"}`, phone, secret, i))
	}
	var stdout, stderr bytes.Buffer
	code := cli.Execute([]string{"contact", "erase", "--project", project, "--address", phone,
		"--database-url", in.db.Config().ConnString()}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	if out := stdout.String(); !strings.HasPrefix(out, "erasure era_") || !strings.Contains(out, "messages\t7\n") {
		t.Errorf("printed %q", out)
	}
	findNothing(t, in, phone, secret)
	// Refused: no person named, an unknown mode.
	for _, args := range [][]string{
		{"contact", "erase", "--project", project, "--database-url", in.db.Config().ConnString()},
		{"contact", "erase", "--project", project, "--address", phone, "--mode", "some", "--database-url", in.db.Config().ConnString()},
	} {
		stdout.Reset()
		if code := cli.Execute(args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if n := in.count(`SELECT count(*) FROM erasures`); n != 1 {
		t.Errorf("%d erasures recorded, want the one", n)
	}
}
