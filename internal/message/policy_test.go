package message

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/postgres/pgtest"
	"github.com/switchboard-io/switchboard/internal/tendlc"
)

func TestChannelCarries(t *testing.T) {
	t.Parallel()
	noTemplatesOnTelegram := func(channel, messageType, _ string) bool { return channel != "telegram" || messageType != "template" }
	for _, c := range []struct {
		name        string
		carries     Carries
		channel     string
		messageType string
		refused     bool
	}{
		{"no registry: everything", nil, "telegram", "template", false},
		{"carried", noTemplatesOnTelegram, "telegram", "image", false},
		{"not carried", noTemplatesOnTelegram, "telegram", "template", true},
		{"another channel", noTemplatesOnTelegram, "whatsapp", "template", false},
	} {
		err := channelCarries{carries: c.carries}.CheckAccept(context.Background(), &Outbound{Channel: c.channel, MessageType: c.messageType})
		if (err != nil) != c.refused {
			t.Errorf("%s: %v, refused want %v", c.name, err, c.refused)
		}
		if e := apperror.As(err); err != nil && (e == nil || e.Kind != apperror.Invalid || e.Code != "invalid_request") {
			t.Errorf("%s: %v, want 400 invalid_request", c.name, err)
		}
	}
}

// windows is a conversation's window as the store would read it.
type windows map[string]*time.Time

func (w windows) whatsAppWindow(_ context.Context, conversation string) (*time.Time, error) {
	return w[conversation], nil
}

func TestWhatsAppWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	o := Outbound{Project: "acme", Sender: "main", To: "+15005550100", Channel: "whatsapp", MessageType: "text"}
	open, closed := now.Add(time.Hour), now.Add(-time.Second)
	for _, c := range []struct {
		name    string
		until   *time.Time
		channel string
		msgType string
		refused bool
	}{
		{"open", &open, "whatsapp", "text", false},
		{"closed", &closed, "whatsapp", "text", true},
		{"never opened", nil, "whatsapp", "image", true},
		{"a template opens it", nil, "whatsapp", "template", false},
		{"not whatsapp", nil, "sms", "text", false},
	} {
		m := o
		m.Channel, m.MessageType = c.channel, c.msgType
		p := whatsAppWindow{windows: windows{o.ConversationID(): c.until}, now: func() time.Time { return now }}
		err := p.CheckAccept(context.Background(), &m)
		if (err != nil) != c.refused {
			t.Errorf("%s: %v, refused want %v", c.name, err, c.refused)
		}
		if e := apperror.As(err); err != nil && (e == nil || e.Code != "whatsapp_window_closed") {
			t.Errorf("%s: %v, want whatsapp_window_closed", c.name, err)
		}
	}
}

// optOuts are the recipients who asked a number to stop.
type optOuts map[[2]string]bool

func (o optOuts) optedOut(_ context.Context, m db.Message) (bool, error) {
	return o[[2]string{m.Originator, m.Recipient}], nil
}

func (o optOuts) optedOutAll(ctx context.Context, ms []db.Message) ([]bool, error) {
	out := make([]bool, len(ms))
	for i, m := range ms {
		out[i], _ = o.optedOut(ctx, m)
	}
	return out, nil
}

func TestOptedOut(t *testing.T) {
	t.Parallel()
	stopped := optOuts{{"+15005550006", "+15005550100"}: true}
	cases := []struct {
		name, channel, from, to string
		fails                   bool
	}{
		{"opted out", "sms", "+15005550006", "+15005550100", true},
		{"one-way sms too", "sms_oneway", "+15005550006", "+15005550100", true},
		{"calls are not messages", "voice", "+15005550006", "+15005550100", false},
		{"another number of ours", "sms", "+15005550007", "+15005550100", false},
		{"another recipient", "sms", "+15005550006", "+15005550101", false},
		{"whatsapp has its own opt-out", "whatsapp", "+15005550006", "+15005550100", false},
	}
	batch := make([]db.Message, len(cases))
	for i, c := range cases {
		batch[i] = db.Message{Channel: c.channel, Originator: c.from, Recipient: c.to}
		f, err := optedOut{pool: stopped}.CheckDispatch(context.Background(), batch[i])
		if err != nil || (f != nil) != c.fails || (f != nil && f.Code != ErrUnsubscribed) {
			t.Errorf("%s: %+v %v, fails want %v", c.name, f, err, c.fails)
		}
	}
	// A batch dispatch's check answers the same, message by message.
	fs, err := optedOut{pool: stopped}.CheckDispatchAll(context.Background(), batch)
	if err != nil || len(fs) != len(cases) {
		t.Fatalf("CheckDispatchAll = %v, %v", fs, err)
	}
	for i, c := range cases {
		if (fs[i] != nil) != c.fails || (fs[i] != nil && fs[i].Code != ErrUnsubscribed) {
			t.Errorf("%s in a batch: %+v, fails want %v", c.name, fs[i], c.fails)
		}
	}
}

func TestFallbackPolicies(t *testing.T) {
	t.Parallel()
	smsOn := &v1alpha1.Sender{Spec: v1alpha1.SenderSpec{Transport: v1alpha1.TransportSandbox, PhoneNumber: "+15005550006",
		SMS: &v1alpha1.Activation{Active: true}}}
	smsOff := &v1alpha1.Sender{Spec: v1alpha1.SenderSpec{Transport: v1alpha1.TransportSandbox, PhoneNumber: "+15005550006",
		SMS: &v1alpha1.Activation{Active: false}}}
	pool := pgtest.NewPool(t)
	if err := tendlc.SeedApproved(context.Background(), pool, "branded", true); err != nil {
		t.Fatal(err)
	}
	regs := tendlc.NewService(pool, nil, nil, nil)
	for _, c := range []struct {
		name   string
		policy FallbackPolicy
		m      db.Message
		snd    *v1alpha1.Sender
		code   string
	}{
		{"sms on", smsConnectionOn{}, db.Message{}, smsOn, ""},
		{"sms off", smsConnectionOn{}, db.Message{}, smsOff, "CHANNEL_INACTIVE"},
		{"+1 without 10DLC", tenDLCApproved{regs}, db.Message{Project: "plain", TestMode: true, Recipient: "+15005550100"}, smsOn, "TEN_DLC_REQUIRED"},
		{"+1 with 10DLC", tenDLCApproved{regs}, db.Message{Project: "branded", TestMode: true, Recipient: "+15005550100"}, smsOn, ""},
		{"+1 with a test-mode campaign only, live", tenDLCApproved{regs}, db.Message{Project: "branded", Recipient: "+15005550100"}, smsOn, "TEN_DLC_REQUIRED"},
		{"not +1", tenDLCApproved{regs}, db.Message{Project: "plain", TestMode: true, Recipient: "+447700900100"}, smsOn, ""},
	} {
		f, err := c.policy.CheckFallback(context.Background(), c.m, c.snd)
		got := ""
		if f != nil {
			got = f.Code
		}
		if err != nil || got != c.code {
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.code)
		}
	}
}

func TestDispatchBackoff(t *testing.T) {
	t.Parallel()
	for attempt, want := range map[int]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		6: 32 * time.Second, 7: time.Minute, 30: time.Minute} {
		if got := dispatchBackoff(attempt); got != want {
			t.Errorf("dispatchBackoff(%d) = %v, want %v", attempt, got, want)
		}
	}
}

// preflights records what the email pre-flight was asked, and refuses what its list holds.
type preflights struct {
	asked []bool
	// unsubscribed and suppressed are the addresses with an unsubscribe entry and another one.
	unsubscribed, suppressed map[string]bool
}

func (p *preflights) Preflight(_ context.Context, _ string, _ bool, address string, refuseUnsubscribed bool) (string, string, error) {
	p.asked = append(p.asked, refuseUnsubscribed)
	if p.suppressed[address] || (p.unsubscribed[address] && refuseUnsubscribed) {
		return "EMAIL_RECIPIENT_SUPPRESSED", "suppressed", nil
	}
	return "", "", nil
}

// scopes are the projects whose unsubscribes refuse every email; reads counts the reads.
type scopes struct {
	all   map[string]bool
	reads int
}

func (s *scopes) unsubscribesRefuseAll(_ context.Context, project string) (bool, error) {
	s.reads++
	return s.all[project], nil
}

func TestEmailPreflightUnsubscribeScope(t *testing.T) {
	t.Parallel()
	bc := "bc_1"
	for _, c := range []struct {
		name, project, channel, to string
		broadcast                  bool
		refused                    bool
		// reads: whether the project's scope is read (a broadcast's mail needs no read).
		reads int
	}{
		{"a single send to an unsubscribed address goes by default", "acme", "email", "una@example.com", false, false, 1},
		{"a broadcast's mail to it is refused", "acme", "email", "una@example.com", true, true, 0},
		{"scope all refuses a single send to it", "strict", "email", "una@example.com", false, true, 1},
		{"scope all refuses a broadcast's mail to it", "strict", "email", "una@example.com", true, true, 0},
		{"another entry refuses a single send by default", "acme", "email", "gone@example.com", false, true, 1},
		{"a clean address goes", "strict", "email", "ana@example.com", false, false, 1},
		{"not email: not asked", "acme", "sms", "+15005550100", false, false, 0},
	} {
		checks := &preflights{unsubscribed: map[string]bool{"una@example.com": true}, suppressed: map[string]bool{"gone@example.com": true}}
		sc := &scopes{all: map[string]bool{"strict": true}}
		m := db.Message{Project: c.project, Channel: c.channel, Recipient: c.to}
		if c.broadcast {
			m.BroadcastContactID = &bc
		}
		f, err := emailPreflight{checks: checks, scopes: sc}.CheckDispatch(context.Background(), m)
		if err != nil || (f != nil) != c.refused || (f != nil && f.Code != "EMAIL_RECIPIENT_SUPPRESSED") {
			t.Errorf("%s: %+v %v, refused want %v", c.name, f, err, c.refused)
		}
		if sc.reads != c.reads {
			t.Errorf("%s: the project read %d times, want %d", c.name, sc.reads, c.reads)
		}
		if c.channel == "email" && len(checks.asked) != 1 {
			t.Errorf("%s: pre-flight asked %d times, want once", c.name, len(checks.asked))
		}
	}
}
