package message

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/transport"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// newObservedService is a Service whose sender "main" of project acme has a webhook, so every
// event it raises leaves a webhook_deliveries row to count.
func newObservedService(t *testing.T) *Service {
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
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	snd := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "main"},
		Spec:   v1alpha1.SenderSpec{DisplayName: "Main", Webhook: &v1alpha1.SenderWebhook{URL: "https://hooks.acme.example/sb"}},
		Status: v1alpha1.SenderStatus{WebhookSecret: &v1alpha1.SecretKeyRef{Name: "main-webhook", Key: "secret"}}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "main-webhook"},
		Data: map[string][]byte{"secret": []byte("whsec_test")}}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(snd, secret, verifiedProject("acme")).Build()
	return NewService(pool, reader, delivery.NewService(reader), queue, nil, nil)
}

func (s *Service) eventsOf(t *testing.T, name string) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE event = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// acceptSMS accepts a text message of acme's sender main in a transaction of its own.
func (s *Service) acceptSMS(t *testing.T, testMode bool) db.Message {
	t.Helper()
	ctx := context.Background()
	var msgs []db.Message
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		msgs, err = s.Accept(ctx, tx, []Outbound{{Project: "acme", TestMode: testMode, Sender: "main", Channel: "sms",
			MessageType: "text", To: "+15005550100", From: "+15005550006", Text: "hi"}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return msgs[0]
}

func TestApplyStatus(t *testing.T) {
	t.Parallel()
	s := newObservedService(t)
	ctx := context.Background()
	accept := func(testMode bool) db.Message { return s.acceptSMS(t, testMode) }
	status := func(id string) (string, *string, *string) {
		m, err := db.Planned(s.pool).GetMessageByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return m.Status, m.ProviderMessageID, m.ErrorCode
	}

	live := accept(false)
	// By id, recording the provider's id; each change raises its event once.
	if moved, err := s.ApplyStatus(ctx, StatusChange{MessageID: live.ID, ProviderMessageID: "SM1", Status: transport.StatusSent}); err != nil || !moved {
		t.Fatalf("sent: %v %v", moved, err)
	}
	// Repeated, or a step back: nothing moves, no event.
	for _, st := range []string{transport.StatusSent} {
		if moved, err := s.ApplyStatus(ctx, StatusChange{MessageID: live.ID, Status: st}); err != nil || moved {
			t.Errorf("repeated %s moved: %v %v", st, moved, err)
		}
	}
	if n := s.eventsOf(t, "message.sent"); n != 1 {
		t.Errorf("%d message.sent events, want 1", n)
	}
	// By the provider's id, as a callback does, through a Provider of the message's project.
	via := Via{Provider: "acme/twilio", Project: "acme"}
	if moved, err := s.ApplyStatus(ctx, StatusChange{ProviderMessageID: "SM1", Status: transport.StatusDelivered, Via: via}); err != nil || !moved {
		t.Fatalf("delivered by provider id: %v %v", moved, err)
	}
	if st, pid, _ := status(live.ID); st != "delivered" || pid == nil || *pid != "SM1" {
		t.Errorf("message = %s %v", st, pid)
	}
	// Failed after delivered is a late report: ignored.
	if moved, _ := s.ApplyStatus(ctx, StatusChange{ProviderMessageID: "SM1", Status: transport.StatusFailed,
		Failure: &transport.Failure{Code: "RECIPIENT_UNREACHABLE"}, Via: via}); moved {
		t.Errorf("a failure after delivery moved the message")
	}
	// An id no message has, and a test message's provider id, are not found by callbacks.
	test := accept(true)
	if _, err := s.ApplyStatus(ctx, StatusChange{MessageID: test.ID, ProviderMessageID: "sbx_1", Status: transport.StatusSent}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"SM-unknown", "sbx_1"} {
		if moved, err := s.ApplyStatus(ctx, StatusChange{ProviderMessageID: id, Status: transport.StatusDelivered, Via: via}); err != nil || moved {
			t.Errorf("provider id %s moved a message: %v %v", id, moved, err)
		}
	}
	if known, _ := s.KnowsProviderID(ctx, via, "sbx_1"); known {
		t.Errorf("a test message is known to live callbacks")
	}
	// A failure keeps its codes.
	other := accept(false)
	if _, err := s.ApplyStatus(ctx, StatusChange{MessageID: other.ID, Status: transport.StatusFailed,
		Failure: &transport.Failure{Code: "INVALID_RECIPIENT", Message: "bad", ProviderCode: "21211"}}); err != nil {
		t.Fatal(err)
	}
	if st, _, code := status(other.ID); st != "failed" || code == nil || *code != "INVALID_RECIPIENT" {
		t.Errorf("failed message = %s %v", st, code)
	}
	if n := s.eventsOf(t, "message.failed"); n != 1 {
		t.Errorf("%d message.failed events, want 1", n)
	}
	if _, err := s.ApplyStatus(ctx, StatusChange{MessageID: other.ID, Status: "exploded"}); err == nil {
		t.Errorf("an unknown status was applied")
	}
}

func TestReceiveStoresARedeliveryOnce(t *testing.T) {
	t.Parallel()
	s := newObservedService(t)
	ctx := context.Background()
	in := Inbound{Project: "acme", Sender: "main", Inbound: transport.Inbound{Channel: "sms", From: "+15005550120",
		To: "+15005550006", MessageType: "text", Text: "Hello", ProviderMessageID: "SM42"}}
	first, err := s.Receive(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Receive(ctx, in)
	if err != nil || again.ID != first.ID {
		t.Fatalf("redelivery = %v %v, want the first message %s", again.ID, err, first.ID)
	}
	if n := s.eventsOf(t, "message.inbound"); n != 1 {
		t.Errorf("%d message.inbound events, want 1", n)
	}
	// Another sender's message with the same provider id (another bot's chat) is its own.
	in.Sender = "other"
	if third, err := s.Receive(ctx, in); err != nil || third.ID == first.ID {
		t.Errorf("another sender's message = %v %v", third.ID, err)
	}
}

func TestReceiveUnsupported(t *testing.T) {
	t.Parallel()
	s := newObservedService(t)
	in := Inbound{Project: "acme", Sender: "main", Inbound: transport.Inbound{Channel: "telegram", From: "555000111",
		To: "@acme_bot", ProviderMessageID: "555000111:7", Unsupported: "poll"}}
	if err := s.ReceiveUnsupported(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	var data string
	if err := s.pool.QueryRow(context.Background(), `SELECT data::text FROM webhook_deliveries WHERE event = 'message.unsupported'`).Scan(&data); err != nil {
		t.Fatalf("no message.unsupported: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(data), &got); err != nil || got["kind"] != "poll" || got["from"] != "555000111" || got["channel"] != "telegram" {
		t.Errorf("message.unsupported data = %s", data)
	}
	var stored int
	_ = s.pool.QueryRow(context.Background(), `SELECT count(*) FROM messages`).Scan(&stored)
	if stored != 0 {
		t.Errorf("an unsupported message was stored")
	}
}

// A provider's report can overtake the dispatcher's commit of sent: its callback names the
// message, the implied sent is made first (with the provider's id), and the dispatcher's late
// sent is a step already made.
func TestApplyProviderStatusOvertakingTheDispatch(t *testing.T) {
	t.Parallel()
	s := newObservedService(t)
	ctx := context.Background()
	accept := func(testMode bool) db.Message { return s.acceptSMS(t, testMode) }
	live := accept(false)
	if _, err := db.Planned(s.pool).StartDispatch(ctx, db.StartDispatchParams{ID: live.ID, UpdatedAt: s.now().UTC()}); err != nil {
		t.Fatal(err)
	}
	moved, err := s.ApplyProviderStatus(ctx, StatusChange{MessageID: live.ID, ProviderMessageID: "SM1", Status: transport.StatusDelivered,
		Via: Via{Provider: "acme/twilio", Project: "acme"}})
	if err != nil || !moved {
		t.Fatalf("ApplyProviderStatus = %v, %v", moved, err)
	}
	m, err := db.Planned(s.pool).GetMessageByID(ctx, live.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != "delivered" || m.ProviderMessageID == nil || *m.ProviderMessageID != "SM1" {
		t.Errorf("message = %s %v, want delivered with SM1", m.Status, m.ProviderMessageID)
	}
	if sent, delivered := s.eventsOf(t, "message.sent"), s.eventsOf(t, "message.delivered"); sent != 1 || delivered != 1 {
		t.Errorf("events: %d message.sent, %d message.delivered; want one each", sent, delivered)
	}
	// The dispatcher's own sent, committed late, moves nothing.
	if moved, err := s.ApplyStatus(ctx, StatusChange{MessageID: live.ID, ProviderMessageID: "SM1", Status: transport.StatusSent}); err != nil || moved {
		t.Errorf("late sent = %v, %v; want no move", moved, err)
	}
	if sent := s.eventsOf(t, "message.sent"); sent != 1 {
		t.Errorf("%d message.sent after the late sent, want 1", sent)
	}

	// A provider never moves test traffic, whatever its callback names.
	test := accept(true)
	if moved, err := s.ApplyProviderStatus(ctx, StatusChange{MessageID: test.ID, ProviderMessageID: "SM2", Status: transport.StatusDelivered,
		Via: Via{Provider: "acme/twilio", Project: "acme"}}); err != nil || moved {
		t.Errorf("report on a test message = %v, %v; want no move", moved, err)
	}
}

// A provider's report moves only the messages sent through the Provider it came through: by
// the message's id or by the provider's, a report through another Provider (another project's,
// or another installation Provider) moves nothing, as for an unknown message.
func TestProviderStatusOnlyThroughItsProvider(t *testing.T) {
	t.Parallel()
	s := newObservedService(t)
	ctx := context.Background()
	q := db.Planned(s.pool)
	sent := func(provider string, sid string) db.Message {
		m := s.acceptSMS(t, false)
		start := db.StartDispatchParams{ID: m.ID, UpdatedAt: s.now().UTC()}
		if provider != "" {
			start.Provider = &provider
		}
		if _, err := q.StartDispatch(ctx, start); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ApplyStatus(ctx, StatusChange{MessageID: m.ID, ProviderMessageID: sid, Status: transport.StatusSent}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	statusOf := func(id string) string {
		m, err := q.GetMessageByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return m.Status
	}
	shared := Via{Provider: "switchboard-system/twilio"}
	m := sent(shared.Provider, "SM10")
	for name, via := range map[string]Via{
		"another project's Provider":     {Provider: "evil/twilio", Project: "evil"},
		"a Provider of the same project": {Provider: "acme/twilio", Project: "acme"},
		"another installation Provider":  {Provider: "switchboard-system/twilio-eu"},
	} {
		if known, err := s.KnowsProviderID(ctx, via, "SM10"); err != nil || known {
			t.Errorf("%s knows the message: %v %v", name, known, err)
		}
		for _, ch := range []StatusChange{
			{ProviderMessageID: "SM10", Status: transport.StatusDelivered, Via: via},
			{MessageID: m.ID, ProviderMessageID: "SM99", Status: transport.StatusDelivered, Via: via},
		} {
			if moved, err := s.ApplyProviderStatus(ctx, ch); err != nil || moved {
				t.Errorf("%s moved the message (%+v): %v %v", name, ch, moved, err)
			}
		}
	}
	if st := statusOf(m.ID); st != "sent" || s.eventsOf(t, "message.delivered") != 0 {
		t.Fatalf("message = %s after reports through other Providers", st)
	}
	if moved, err := s.ApplyProviderStatus(ctx, StatusChange{ProviderMessageID: "SM10", Status: transport.StatusDelivered, Via: shared}); err != nil || !moved {
		t.Fatalf("report through its Provider = %v %v", moved, err)
	}

	// A message sent before Providers were recorded: a Provider of its project, or an
	// installation Provider, may report on it; another project's may not.
	legacy := sent("", "SM11")
	if moved, _ := s.ApplyProviderStatus(ctx, StatusChange{ProviderMessageID: "SM11", Status: transport.StatusDelivered,
		Via: Via{Provider: "evil/twilio", Project: "evil"}}); moved {
		t.Errorf("another project's Provider moved a message sent before Providers were recorded")
	}
	if moved, err := s.ApplyProviderStatus(ctx, StatusChange{ProviderMessageID: "SM11", Status: transport.StatusDelivered,
		Via: Via{Provider: "acme/twilio", Project: "acme"}}); err != nil || !moved {
		t.Errorf("its project's Provider = %v %v", moved, err)
	}
	if st := statusOf(legacy.ID); st != "delivered" {
		t.Errorf("legacy message = %s", st)
	}
	// A report that names no Provider is a programming error, not a move.
	if _, err := s.ApplyProviderStatus(ctx, StatusChange{ProviderMessageID: "SM10", Status: transport.StatusRead}); err == nil {
		t.Errorf("a report without its Provider was applied")
	}
}
