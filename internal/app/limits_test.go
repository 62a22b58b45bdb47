package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// TestDailyCeilingThroughTheAPI: a project with nothing verified sends its 25th SMS of the day
// and is refused the 26th (429 daily_limit_exceeded, details.limit, X-Should-Retry: false,
// nothing stored), on v1 and v2; test and live traffic count apart.
func TestDailyCeilingThroughTheAPI(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	for i := 1; i <= 25; i++ {
		if r := in.post("/v1/messages", key, fmt.Sprintf(`{"to":"+1500555%04d","text":"SMS %d"}`, i, i)); r.status != 200 {
			t.Fatalf("SMS %d = %d %v", i, r.status, r.body)
		}
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/messages", `{"to":"+15005550100","text":"one too many"}`},
		{"/v2/messages", `{"to":"+15005550100","channel":"sms","text":"one too many"}`},
	} {
		r := in.post(c.path, key, c.body)
		details, _ := r.body["details"].(map[string]any)
		if r.status != 429 || r.body["code"] != "daily_limit_exceeded" || details["limit"] != 25.0 || details["channel"] != "sms" ||
			r.header.Get("X-Should-Retry") != "false" || r.header.Get("Retry-After") != "" {
			t.Fatalf("%s past the ceiling = %d %v %v", c.path, r.status, r.body, r.header)
		}
	}
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1 AND channel = 'sms'`, acme); n != 25 {
		t.Fatalf("%d messages stored, want 25", n)
	}
	// Other channel groups have ceilings of their own: an email still goes.
	if r := in.post("/v1/messages", key, `{"to":"ada@example.com","text":"hi","subject":"Hi"}`); r.status != 200 {
		t.Fatalf("another channel group = %d %v", r.status, r.body)
	}
	// A live key of the same project counts apart from its test traffic.
	live := newKey(t, in, acme, apikey.Live)
	if r := in.post("/v1/messages", live, `{"to":"+15005550100","text":"live"}`); r.status == 429 {
		t.Fatalf("the first live SMS = %d %v", r.status, r.body)
	}
}

// TestMonthlyAllowanceThroughTheAPI: on the Free plan the 2,000th conversational message of the
// month is accepted and the 2,001st refused (429 a2p_limit_exceeded with upgrade details); a
// contact's message past it is dropped whole (not stored, no conversation, no event), and a
// failed send gives its unit back.
func TestMonthlyAllowanceThroughTheAPI(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := sendingProjectOf(t, in, v1alpha1.ProjectSpec{Verification: v1alpha1.VerificationIdentityApproved}, nil, apikey.Test)
	receive(t, in, key, `{"from":"+15005550100","channel":"whatsapp","text":"Hi"}`) // opens the window; the 1st
	// 1,998 more this month, as if sent earlier (the counter is Postgres's; filling it by API
	// would take a while and prove nothing more).
	month := time.Now().UTC().Format("2006-01") + "-01"
	if _, err := in.db.Exec(context.Background(), `UPDATE usage_counters SET used = used + 1998
		WHERE project = $1 AND test_mode AND meter = 'conversational' AND period = 'month' AND period_start = $2`, acme, month); err != nil {
		t.Fatal(err)
	}
	r := in.post("/v1/messages", key, `{"to":"+15005550100","channel":"whatsapp","text":"the 2,000th"}`)
	if r.status != 200 {
		t.Fatalf("the 2,000th = %d %v", r.status, r.body)
	}
	r = in.post("/v1/messages", key, `{"to":"+15005550100","channel":"whatsapp","text":"the 2,001st"}`)
	details, _ := r.body["details"].(map[string]any)
	if r.status != 429 || r.body["code"] != "a2p_limit_exceeded" || details["limit"] != 2000.0 || details["upgrade"] == nil ||
		r.header.Get("X-Should-Retry") != "false" {
		t.Fatalf("the 2,001st = %d %v", r.status, r.body)
	}
	// A contact writing now is refused whole.
	before := in.count(`SELECT count(*) FROM webhook_deliveries WHERE project = $1`, acme)
	if r := in.post("/v1/sandbox/inbound", key, `{"from":"+15005550199","channel":"whatsapp","text":"anyone?"}`); r.status != 429 ||
		r.body["code"] != "a2p_limit_exceeded" {
		t.Fatalf("inbound past the allowance = %d %v", r.status, r.body)
	}
	if n := in.count(`SELECT count(*) FROM messages WHERE project = $1 AND originator = '+15005550199'`, acme); n != 0 {
		t.Fatal("the refused inbound message was stored")
	}
	if n := in.count(`SELECT count(*) FROM conversations WHERE project = $1 AND contact_identifier = '+15005550199'`, acme); n != 0 {
		t.Fatal("the refused inbound message opened a conversation")
	}
	if after := in.count(`SELECT count(*) FROM webhook_deliveries WHERE project = $1`, acme); after != before {
		t.Fatal("the refused inbound message raised an event")
	}
	// SMS has no monthly allowance: it still goes.
	if r := in.post("/v1/messages", key, `{"to":"+15005550100","text":"by SMS"}`); r.status != 200 {
		t.Fatalf("an SMS past the conversational allowance = %d %v", r.status, r.body)
	}
}

// TestPhoneIntrospection: what a number is, and which channels of the project's senders reach
// it now: SMS and WhatsApp not a landline, a call any number; an unparsable number is a 400.
func TestPhoneIntrospection(t *testing.T) {
	in := start(t)
	_, key := sendingProject(t, in, nil, apikey.Test) // sms, whatsapp and email
	var r response
	waitFor(t, func() bool { // the sender controller marks the channels ready shortly after creation
		r = in.post("/v1/introspect/phone", key, `{"phoneNumber":"+34 600 00 00 00"}`)
		return fmt.Sprint(r.body["availableChannels"]) != "[]"
	})
	carrier, _ := r.body["carrier"].(map[string]any)
	if r.status != 200 || r.body["phoneNumber"] != "+34600000000" || r.body["countryCode"] != "ES" || r.body["validNumber"] != true ||
		r.body["lineType"] != "mobile" || carrier["name"] != "Vodafone" || fmt.Sprint(r.body["availableChannels"]) != "[sms whatsapp]" {
		t.Fatalf("a Spanish mobile = %d %v", r.status, r.body)
	}
	r = in.post("/v1/introspect/phone", key, `{"phoneNumber":"+442071838750"}`)
	if r.status != 200 || r.body["lineType"] != "landline" || fmt.Sprint(r.body["availableChannels"]) != "[]" || r.body["carrier"].(map[string]any)["name"] != nil {
		t.Fatalf("a London landline = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/introspect/phone", key, `{"phoneNumber":"+12125550"}`); r.status != 200 || r.body["validNumber"] != false {
		t.Fatalf("an unassigned number = %d %v", r.status, r.body)
	}
	// With a twilio Provider, a live key gets the carrier and line type of Twilio's Lookup (a
	// North American number's, which the metadata cannot tell); a test key does not call it.
	twilio := twiliotest.NewServer(t)
	twilio.SetLineType("+14155552671", "Verizon Wireless", "mobile")
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "twilio", Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"accountSid": twiliotest.AccountSID, "authToken": twiliotest.AuthToken}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "twilio"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderTwilio, BaseURL: twilio.URL, Default: true, SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio"}}},
	} {
		if err := in.k8s.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	live, test := newKey(t, in, acme, apikey.Live), newKey(t, in, acme, apikey.Test)
	waitFor(t, func() bool {
		r = in.post("/v1/introspect/phone", live, `{"phoneNumber":"+14155552671"}`)
		return r.body["lineType"] == "mobile"
	})
	if r.body["carrier"].(map[string]any)["name"] != "Verizon Wireless" || r.body["countryCode"] != "US" {
		t.Fatalf("a live lookup = %v", r.body)
	}
	lookups := twilio.Lookups()
	if r := in.post("/v1/introspect/phone", test, `{"phoneNumber":"+14155552671"}`); r.body["lineType"] != "unknown" || twilio.Lookups() != lookups {
		t.Fatalf("a test key's introspection = %v (%d lookups, was %d)", r.body, twilio.Lookups(), lookups)
	}
	for _, body := range []string{`{}`, `{"phoneNumber":"4155552671"}`, `{"phoneNumber":"+abc"}`, `{"phoneNumber":12}`} {
		if r := in.post("/v1/introspect/phone", key, body); r.status != 400 || fmt.Sprint(fieldPaths(r)) != "[phoneNumber]" {
			t.Errorf("%s = %d %v", body, r.status, r.body)
		}
	}
}
