package emailin_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/dnsresolve"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
	"github.com/switchboard-io/switchboard/internal/emailin"
	"github.com/switchboard-io/switchboard/internal/mailin"
	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
)

// fixture is a Receiver and a Router on a fresh database, for the projects acme and beta.
type fixture struct {
	pool     *pgxpool.Pool
	reader   client.Reader
	receiver *emailin.Receiver
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	pool := pgtest.NewPool(t)
	queue, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, ns := range []string{"acme", "beta"} {
		objs = append(objs, &v1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns}, Spec: v1alpha1.ProjectSpec{Plan: v1alpha1.PlanPaid}})
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	messages := message.NewService(pool, reader, delivery.NewService(reader), queue, nil, nil)
	return &fixture{pool: pool, reader: reader, receiver: &emailin.Receiver{Messages: messages, Pool: pool, Log: logr.Discard()}}
}

// count runs a count query.
func (f *fixture) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// pdf is a file of 256 KiB, the bulk of the mail below.
var pdf = bytes.Repeat([]byte("%PDF-1.4 0123456789abcdef\n"), 256<<10/26)

// mailTo is a mail with a file and an inline image, as the listener hands it over, addressed
// to routes.
func mailTo(routes ...mailin.Route) *mailin.Mail {
	return &mailin.Mail{
		Envelope: mailin.Envelope{MailFrom: "ada@example.com", Recipients: routes, ReceivedAt: time.Now()},
		Auth:     mailin.Auth{SPF: mailin.ResultPass, DMARC: mailin.ResultNone},
		Subject:  "Quarterly report", From: mail.Address{Name: "Ada", Address: "ada@example.com"}, MessageID: "report-1@example.com",
		Text: "See the report.", HTML: "<p>See the report.</p>",
		Attachments: []mailin.Attachment{{Filename: "report.pdf", ContentType: "application/pdf", Content: pdf}},
		Inlines:     []mailin.Attachment{{ContentType: "image/png", ContentID: "logo", Content: []byte("\x89PNG logo")}},
	}
}

// stored counts what a mail left in Postgres.
type stored struct{ messages, files, contents, contentBytes, inlineBytes int }

func (f *fixture) stored(t *testing.T) stored {
	t.Helper()
	return stored{
		messages:     f.count(t, `SELECT count(*) FROM messages WHERE direction = 'inbound'`),
		files:        f.count(t, `SELECT count(*) FROM message_attachments`),
		contents:     f.count(t, `SELECT count(*) FROM attachment_contents`),
		contentBytes: f.count(t, `SELECT coalesce(sum(length(content)), 0) FROM attachment_contents`),
		inlineBytes:  f.count(t, `SELECT coalesce(sum(length(content)), 0) FROM message_attachments`),
	}
}

func TestAMailToSeveralRecipientsIsStoredOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	// Three recipients: two addresses of one sender (its own and its catch-all's) and a
	// sender of another project.
	m := mailTo(
		mailin.Route{Project: "acme", Sender: "sales", Address: "sales@acme.test"},
		mailin.Route{Project: "acme", Sender: "sales", Address: "anything@acme.test"},
		mailin.Route{Project: "beta", Sender: "desk", Address: "desk@beta.test"},
	)
	if err := f.receiver.Deliver(ctx, m); err != nil {
		t.Fatal(err)
	}
	want := stored{messages: 2, files: 4, contents: 2, contentBytes: len(pdf) + len("\x89PNG logo")}
	if got := f.stored(t); got != want {
		t.Fatalf("stored %+v, want %+v: one message per sender, each file's content once", got, want)
	}
	if n := f.count(t, `SELECT count(*) FROM messages WHERE project = 'acme' AND sender = 'sales' AND recipient = 'sales@acme.test'`); n != 1 {
		t.Errorf("acme's message is not to the first address the mail named")
	}
	// Each message reads its files through the content it points at.
	var ids []string
	rows, err := f.pool.Query(ctx, `SELECT id FROM messages WHERE direction = 'inbound' ORDER BY project`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		media, err := db.Planned(f.pool).MessageMedia(ctx, id)
		if err != nil || media.Filename != "report.pdf" || !bytes.Equal(media.Content, pdf) {
			t.Errorf("file of %s: %q, %d bytes, %v", id, media.Filename, len(media.Content), err)
		}
	}

	// The sending server's retry, its 250 lost, stores nothing more.
	if err := f.receiver.Deliver(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got := f.stored(t); got != want {
		t.Fatalf("after a retry: stored %+v, want %+v", got, want)
	}
}

func TestAMailIsStoredForAllItsRecipientsOrNone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	// Postgres refuses the message of one sender, stored after another's.
	if _, err := f.pool.Exec(ctx, `
CREATE FUNCTION refuse_vanishing() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.sender = 'vanishing' THEN RAISE EXCEPTION 'disk full'; END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER refuse_vanishing BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse_vanishing();`); err != nil {
		t.Fatal(err)
	}
	m := mailTo(
		mailin.Route{Project: "acme", Sender: "sales", Address: "sales@acme.test"},
		mailin.Route{Project: "acme", Sender: "vanishing", Address: "gone@acme.test"},
	)
	if err := f.receiver.Deliver(ctx, m); err == nil {
		t.Fatal("delivered although one recipient's message could not be stored")
	}
	if got := f.stored(t); got != (stored{}) {
		t.Fatalf("a failed mail left %+v", got)
	}
	if n := f.count(t, `SELECT count(*) FROM webhook_deliveries`) + f.count(t, `SELECT count(*) FROM conversations`); n != 0 {
		t.Fatalf("a failed mail left %d events and conversations", n)
	}

	// Tried again once Postgres takes it, the mail is stored for both, once.
	if _, err := f.pool.Exec(ctx, `DROP TRIGGER refuse_vanishing ON messages`); err != nil {
		t.Fatal(err)
	}
	if err := f.receiver.Deliver(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got := f.stored(t); got.messages != 2 || got.contents != 2 {
		t.Fatalf("stored %+v after the retry, want 2 messages and 2 contents", got)
	}
}

// insertMessage stores a message as a send or a receive would have.
func (f *fixture) insertMessage(t *testing.T, id, project, direction, channel, originator string, testMode bool) {
	t.Helper()
	_, err := f.pool.Exec(context.Background(), `
INSERT INTO messages (id, project, test_mode, sender, direction, channel, message_type, status, recipient, originator, created_at, updated_at)
VALUES ($1, $2, $3, 'billing', $4, $5, 'text', 'sent', 'ada@example.com', $6, now(), now())`,
		id, project, testMode, direction, channel, originator)
	if err != nil {
		t.Fatal(err)
	}
}

func TestBounceAddressesTakeMailOnlyForARealMailOfTheirDomain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const sent = "msg_Sent0000000000000000001"
	f.insertMessage(t, sent, "acme", "outbound", "email", "billing@acme.test", false)
	f.insertMessage(t, "msg_Sms00000000000000000001", "acme", "outbound", "sms", "billing@acme.test", false)
	f.insertMessage(t, "msg_Test0000000000000000001", "acme", "outbound", "email", "billing@acme.test", true)
	f.insertMessage(t, "msg_Inbound00000000000000001", "acme", "inbound", "email", "billing@acme.test", false)

	dnsSrv, err := dnstest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dnsSrv.Close)
	srv, err := mailin.New(mailin.Config{Hostname: "mx.example.com", Resolver: dnsresolve.New(dnsSrv.Addr(), 2*time.Second),
		Recipients: &emailin.Router{Reader: f.reader, Pool: f.pool}, Handler: f.receiver})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})

	before := f.stored(t)
	c, err := smtp.Dial(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("mx.example.net"); err != nil {
		t.Fatal(err)
	}
	if err := c.Mail("", nil); err != nil {
		t.Fatal(err)
	}
	refused := map[string]string{
		"b-msg_Invented00000000000001@bounce.acme.test":       "an id no message has",
		"b-" + sent + "@bounce.beta.test":                     "a real id, of another domain",
		"b-msg_Sms00000000000000000001@bounce.acme.test":      "an SMS",
		"b-msg_Test0000000000000000001@bounce.acme.test":      "a test mail, which went to the sandbox",
		"b-msg_Inbound00000000000000001@bounce.acme.test":     "a received mail",
		"b-" + strings.Repeat("A", 300) + "@bounce.acme.test": "no message id at all",
	}
	for rcpt, what := range refused {
		var se *smtp.SMTPError
		if err := c.Rcpt(rcpt, nil); !errors.As(err, &se) || se.Code != 550 || se.EnhancedCode != (smtp.EnhancedCode{5, 1, 1}) {
			t.Errorf("RCPT %s (%s): %v, want 550 5.1.1", rcpt, what, err)
		}
	}
	if err := c.Rcpt("b-"+sent+"@bounce.acme.test", nil); err != nil {
		t.Fatalf("RCPT of the return path of a mail sent: %v", err)
	}
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := f.stored(t); got != before {
		t.Errorf("refused recipients left %+v, had %+v", got, before)
	}
}
