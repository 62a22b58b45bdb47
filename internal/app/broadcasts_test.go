package app_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/billing"
	"github.com/switchboard-io/switchboard/internal/broadcast"
	"github.com/switchboard-io/switchboard/internal/delivery"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// verified is a project whose identity is verified: broadcasts other than WhatsApp need it.
var verified = v1alpha1.ProjectSpec{Verification: v1alpha1.VerificationIdentityApproved}

func TestBroadcastDrafts(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := sendingProject(t, in, nil, apikey.Test)

	// Create: the draft as the client sent it, with its defaults.
	r := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"Black Friday","text":"Hi {{name}}, 20% off today",
		"senderId":"main","metadata":{"team":"growth"},"idempotencyKey":"bf-1"}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	b := r.body["broadcast"].(map[string]any)
	id := b["id"].(string)
	if b["status"] != "draft" || b["messageType"] != "text" || b["totalContacts"] != 0.0 || b["senderId"] != "main" ||
		b["metadata"].(map[string]any)["team"] != "growth" || b["estimatedCost"] != nil {
		t.Errorf("broadcast = %v", b)
	}
	// The same idempotency key gives the original back, and makes nothing.
	r = in.post("/v1/broadcasts", key, `{"channel":"sms","name":"Again","text":"x","idempotencyKey":"bf-1"}`)
	if r.status != 409 || r.body["code"] != "idempotent_replay" || r.body["details"].(map[string]any)["broadcast"].(map[string]any)["id"] != id {
		t.Errorf("replay = %d %v", r.status, r.body)
	}

	// Recipients: invalid ones with their reason, duplicates within and across requests.
	r = in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[{"recipient":"+447700900001","templateVariables":{"name":"Ann"}},
		{"recipient":"+447700900002"},{"recipient":"+447700900001"},{"recipient":"ann@example.com"},{"recipient":"447700900003"},
		{"recipient":"+447700900004","templateVariables":{"name":7}}]}`)
	if r.status != 200 || r.body["added"] != 2.0 || r.body["duplicates"] != 1.0 || r.body["invalid"] != 3.0 || len(r.body["errors"].([]any)) != 3 {
		t.Fatalf("add contacts = %d %v", r.status, r.body)
	}
	if e := r.body["errors"].([]any)[0].(map[string]any); e["recipient"] != "ann@example.com" || !strings.Contains(e["reason"].(string), "E.164") {
		t.Errorf("first error = %v", e)
	}
	r = in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[{"recipient":"+447700900002"},{"recipient":"+447700900005"}]}`)
	if r.body["added"] != 1.0 || r.body["duplicates"] != 1.0 || r.body["invalid"] != 0.0 {
		t.Errorf("second add = %v", r.body)
	}
	b = in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)
	if b["totalContacts"] != 3.0 || b["pendingCount"] != 3.0 {
		t.Errorf("counts = %v", b)
	}
	contacts := in.get("/v1/broadcasts/"+id+"/contacts?limit=2", key)
	items := contacts.body["items"].([]any)
	if len(items) != 2 || contacts.body["nextCursor"] == "" {
		t.Fatalf("contacts page = %v", contacts.body)
	}
	first := items[0].(map[string]any)
	if first["recipient"] != "+447700900001" || first["recipientType"] != "phone" || first["status"] != "pending" ||
		first["templateVariables"].(map[string]any)["name"] != "Ann" {
		t.Errorf("first contact = %v", first)
	}
	if r := in.do(http.MethodDelete, "/v1/broadcasts/"+id+"/contacts/"+first["id"].(string), key, nil); r.status != 204 {
		t.Fatalf("remove contact = %d %v", r.status, r.body)
	}
	if p := in.get("/v1/broadcasts/"+id+"/progress", key).body; p["total"] != 2.0 || p["pending"] != 2.0 || p["percentComplete"] != 0.0 || p["status"] != "draft" {
		t.Errorf("progress = %v", p)
	}

	// Update a draft; list with a status filter; another project sees none of it.
	r = in.do(http.MethodPatch, "/v1/broadcasts/"+id, key, strings.NewReader(`{"name":"Cyber Monday","text":"Hi {{name}}, 30% off"}`))
	if r.status != 200 || r.body["broadcast"].(map[string]any)["name"] != "Cyber Monday" {
		t.Fatalf("patch = %d %v", r.status, r.body)
	}
	if items := in.get("/v1/broadcasts?status=draft", key).body["items"].([]any); len(items) != 1 {
		t.Errorf("drafts = %v", items)
	}
	if items := in.get("/v1/broadcasts?status=sending", key).body["items"].([]any); len(items) != 0 {
		t.Errorf("sending = %v", items)
	}
	_, other := sendingProject(t, in, nil, apikey.Test)
	if r := in.get("/v1/broadcasts/"+id, other); r.status != 404 {
		t.Errorf("another project's broadcast = %d", r.status)
	}
	live := newKey(t, in, acme, apikey.Live)
	if items := in.get("/v1/broadcasts", live).body["items"].([]any); len(items) != 0 {
		t.Errorf("a live key sees test broadcasts: %v", items)
	}
	if r := in.do(http.MethodDelete, "/v1/broadcasts/"+id, key, nil); r.status != 204 {
		t.Fatalf("delete = %d %v", r.status, r.body)
	}
	if r := in.get("/v1/broadcasts/"+id+"/contacts", key); r.status != 404 {
		t.Errorf("contacts of a deleted broadcast = %d", r.status)
	}
}

func TestBroadcastBadInputChangesNothing(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	count := func() int { return in.count(`SELECT count(*) FROM broadcasts WHERE project = $1`, acme) }
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for body, paths := range map[string][]string{
		`{}`: {"channel", "name"},
		`{"channel":"fax","name":"x","text":"x"}`:                                                    {"channel"},
		`{"channel":"sms","name":"x"}`:                                                               {"text"},
		`{"channel":"email","name":"x","text":"x"}`:                                                  {"emailSubject"},
		`{"channel":"sms","name":"x","text":"x","emailSubject":"s"}`:                                 {"emailSubject"},
		`{"channel":"sms","name":"x","messageType":"image"}`:                                         {"content.mediaUrl"},
		`{"channel":"whatsapp","name":"x","messageType":"template"}`:                                 {"content.templateId"},
		`{"channel":"whatsapp","name":"x","messageType":"template","content":{"templateId":"nope"}}`: {"content.templateId"},
		`{"channel":"sms","name":"x","text":"x","senderId":"nope"}`:                                  {"senderId"},
		`{"channel":"telegram","name":"x","text":"x","senderId":"main"}`:                             {"senderId"},
		`{"channel":"sms","name":"x","text":"x","scheduledAt":"` + past + `"}`:                       {"scheduledAt"},
		`{"channel":"sms","name":"x","text":"x","scheduledAt":"tomorrow"}`:                           {"scheduledAt"},
		`{"channel":"sms","name":"` + strings.Repeat("n", 256) + `","text":"x"}`:                     {"name"},
	} {
		r := in.post("/v1/broadcasts", key, body)
		if r.status != 400 || r.body["code"] != "invalid_request" || !slices.Equal(fieldPaths(r), paths) {
			t.Errorf("create %.70s = %d %v, want %v", body, r.status, fieldPaths(r), paths)
		}
	}
	if r := in.post("/v1/broadcasts", key, `{"channel":`); r.status != 400 || r.body["code"] != "invalid_json" {
		t.Errorf("broken JSON = %d %v", r.status, r.body)
	}
	if n := count(); n != 0 {
		t.Fatalf("refused creates stored %d broadcasts", n)
	}

	// 1,001 recipients in one request: refused whole; none added.
	id := in.post("/v1/broadcasts", key, `{"channel":"email","name":"News","emailSubject":"News","text":"Hello"}`).body["broadcast"].(map[string]any)["id"].(string)
	var many []string
	for i := range 1001 {
		many = append(many, fmt.Sprintf(`{"recipient":"user%d@example.com"}`, i))
	}
	r := in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[`+strings.Join(many, ",")+`]}`)
	if r.status != 400 || !slices.Equal(fieldPaths(r), []string{"contacts"}) {
		t.Errorf("1,001 recipients = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[]}`); r.status != 400 {
		t.Errorf("no recipients = %d", r.status)
	}
	// Email broadcasts take addresses, not numbers; domains are compared without case.
	r = in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[{"recipient":"+447700900001"},{"recipient":"Ann@Example.com"},{"recipient":"Ann@example.COM"}]}`)
	if r.body["added"] != 1.0 || r.body["invalid"] != 1.0 || r.body["duplicates"] != 1.0 {
		t.Errorf("email recipients = %v", r.body)
	}
	if b := in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any); b["totalContacts"] != 1.0 {
		t.Errorf("after refusals = %v", b)
	}
	for path, want := range map[string]int{"/v1/broadcasts?status=nope": 400, "/v1/broadcasts/" + id + "/contacts?status=nope": 400,
		"/v1/broadcasts/bc_nope": 404, "/v1/broadcasts/bc_nope/progress": 404} {
		if r := in.get(path, key); r.status != want {
			t.Errorf("GET %s = %d, want %d", path, r.status, want)
		}
	}
	// Without identity verification an SMS broadcast is not sent (403 kyc_required, still a
	// draft); a WhatsApp one is.
	sms := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"x","text":"x"}`).body["broadcast"].(map[string]any)["id"].(string)
	wa := in.post("/v1/broadcasts", key, `{"channel":"whatsapp","name":"x","text":"x"}`).body["broadcast"].(map[string]any)["id"].(string)
	for _, b := range []string{sms, wa} {
		in.post("/v1/broadcasts/"+b+"/contacts", key, `{"contacts":[{"recipient":"+447700900001"}]}`)
	}
	if r := in.post("/v1/broadcasts/"+sms+"/send", key, `{}`); r.status != 403 || r.body["code"] != "kyc_required" {
		t.Errorf("unverified SMS broadcast = %d %v", r.status, r.body)
	}
	if b := in.get("/v1/broadcasts/"+sms, key).body["broadcast"].(map[string]any); b["status"] != "draft" {
		t.Errorf("refused send changed it: %v", b)
	}
	if r := in.post("/v1/broadcasts/"+wa+"/send", key, `{}`); r.status != 200 {
		t.Errorf("unverified WhatsApp broadcast = %d %v", r.status, r.body)
	}

	// A key that only reads cannot create.
	reader := newKey(t, in, acme, apikey.Test, string(apikey.PermissionMessagesRead))
	if r := in.post("/v1/broadcasts", reader, `{"channel":"sms","name":"x","text":"x"}`); r.status != 403 {
		t.Errorf("create with a read key = %d", r.status)
	}
}

// statusEvents are the broadcast.status_changed events of a broadcast, as previous→current.
func (h *hookReceiver) statusEvents(broadcastID string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, ev := range h.events {
		if data, _ := ev["data"].(map[string]any); ev["event"] == "broadcast.status_changed" && data["broadcastId"] == broadcastID {
			out = append(out, fmt.Sprint(data["previousStatus"], "→", data["currentStatus"]))
		}
	}
	return out
}

func TestBroadcastReview(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted())
	ctx := context.Background()
	acme, key := sendingProjectOf(t, in, verified, rcv, apikey.Test)
	if err := in.k8s.Create(ctx, &v1alpha1.RiskPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "rules"}, Spec: v1alpha1.RiskPolicySpec{
		Lists: map[string][]string{"gambling": {"casino"}},
		Rules: []v1alpha1.RiskRule{
			{Name: "gambling", Expression: `message.words.exists(w, w in lists.gambling)`, Outcome: "refuse", Reason: "gambling is not allowed"},
			{Name: "manual", Expression: `message.text.startsWith("HOLD")`, Outcome: "hold", Reason: "looked at by a person"}}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the informer cache takes the policy
	queue, err := river.NewClient(riverpgxv5.New(in.db), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	operator := broadcast.NewService(in.db, in.k8s, queue, delivery.NewService(in.k8s), nil)

	draft := func(text string, extra string) string {
		t.Helper()
		r := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"n","text":"`+text+`"`+extra+`}`)
		if r.status != 201 {
			t.Fatalf("create = %d %v", r.status, r.body)
		}
		id := r.body["broadcast"].(map[string]any)["id"].(string)
		if r := in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[{"recipient":"+447700900001"},{"recipient":"+447700900002"}]}`); r.body["added"] != 2.0 {
			t.Fatalf("add = %v", r.body)
		}
		return id
	}
	get := func(id string) map[string]any {
		return in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)
	}
	status := func(id, want string) map[string]any {
		t.Helper()
		waitFor(t, func() bool { return get(id)["status"] == want })
		return get(id)
	}

	// Approved by the rules: pending_review, then approved with the review's result.
	ok := draft("Our sale starts Friday", "")
	r := in.post("/v1/broadcasts/"+ok+"/send", key, `{}`)
	if r.status != 200 || r.body["broadcast"].(map[string]any)["status"] != "pending_review" || r.body["broadcast"].(map[string]any)["reviewAttempts"] != 1.0 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	// Approved, and from there the fan-out sends it at once (TestBroadcastSends).
	waitFor(t, func() bool { return slices.Contains([]any{"approved", "sending", "completed"}, get(ok)["status"]) })
	b := get(ok)
	if res := b["reviewResult"].(map[string]any); res["score"] != 0.0 || res["reviewedAt"] == nil {
		t.Errorf("approved review = %v", res)
	}
	// Deliveries run side by side: the receiver may get them in either order. The fan-out
	// then sends it (TestBroadcastSends).
	waitFor(t, func() bool {
		got := rcv.statusEvents(ok)
		return slices.Contains(got, "draft→pending_review") && slices.Contains(got, "pending_review→approved")
	})
	if r := in.post("/v1/broadcasts/"+ok+"/send", key, `{}`); r.status != 400 {
		t.Errorf("a second send = %d %v", r.status, r.body)
	}

	// Rejected: with the rule's reason; reviewed again up to three times; escalated, then
	// rejected for good by an operator.
	bad := draft("Visit our casino tonight", "")
	in.post("/v1/broadcasts/"+bad+"/send", key, "")
	b = status(bad, "rejected")
	if res := b["reviewResult"].(map[string]any); res["reasoning"] != "gambling is not allowed" || res["categories"].([]any)[0] != "gambling" {
		t.Errorf("rejected review = %v", res)
	}
	for attempt := 2; attempt <= 3; attempt++ {
		if r := in.post("/v1/broadcasts/"+bad+"/retry-review", key, ""); r.status != 200 || r.body["broadcast"].(map[string]any)["reviewAttempts"] != float64(attempt) {
			t.Fatalf("retry %d = %d %v", attempt, r.status, r.body)
		}
		status(bad, "rejected")
	}
	if r := in.post("/v1/broadcasts/"+bad+"/retry-review", key, ""); r.status != 400 {
		t.Errorf("a fourth review = %d %v", r.status, r.body)
	}
	if r := in.post("/v1/broadcasts/"+bad+"/escalate", key, ""); r.status != 200 || r.body["broadcast"].(map[string]any)["status"] != "escalated" {
		t.Fatalf("escalate = %d %v", r.status, r.body)
	}
	if err := operator.Decide(ctx, bad, false, "alice", "still gambling"); err != nil {
		t.Fatal(err)
	}
	if b := get(bad); b["status"] != "rejected_final" || b["reviewResult"].(map[string]any)["reasoning"] != "still gambling" {
		t.Errorf("refused after escalation = %v", b)
	}
	if r := in.post("/v1/broadcasts/"+bad+"/cancel", key, ""); r.status != 400 {
		t.Errorf("cancel a finally rejected broadcast = %d", r.status)
	}

	// Held by a rule: it waits for an operator, who approves it; then it is scheduled, as its
	// time is ahead; the time moves; cancelling skips its recipients.
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	held := draft("HOLD this one", "")
	in.post("/v1/broadcasts/"+held+"/send", key, `{"scheduledAt":"`+later+`"}`)
	time.Sleep(500 * time.Millisecond)
	if b := get(held); b["status"] != "pending_review" {
		t.Fatalf("held = %v", b)
	}
	waiting, err := operator.Awaiting(ctx, acme, 10)
	if err != nil || len(waiting) != 1 || waiting[0].ID != held {
		t.Fatalf("awaiting = %+v %v", waiting, err)
	}
	if err := operator.Decide(ctx, held, true, "bob", ""); err != nil {
		t.Fatal(err)
	}
	b = get(held)
	if b["status"] != "scheduled" || b["scheduledAt"] != later {
		t.Fatalf("approved with a time ahead = %v", b)
	}
	evenLater := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	r = in.do(http.MethodPatch, "/v1/broadcasts/"+held+"/schedule", key, strings.NewReader(`{"scheduledAt":"`+evenLater+`"}`))
	if r.status != 200 || r.body["broadcast"].(map[string]any)["scheduledAt"] != evenLater {
		t.Errorf("reschedule = %d %v", r.status, r.body)
	}
	r = in.post("/v1/broadcasts/"+held+"/cancel", key, "")
	b = r.body["broadcast"].(map[string]any)
	if r.status != 200 || b["status"] != "cancelled" || b["skippedCount"] != 2.0 || b["pendingCount"] != 0.0 || b["completedAt"] == nil {
		t.Fatalf("cancel = %d %v", r.status, r.body)
	}
	if items := in.get("/v1/broadcasts/"+held+"/contacts?status=skipped", key).body["items"].([]any); len(items) != 2 {
		t.Errorf("skipped recipients = %v", items)
	}
	waitFor(t, func() bool { return slices.Contains(rcv.statusEvents(held), "scheduled→cancelled") })

	// Bad input: nothing changes.
	empty := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"empty","text":"x"}`).body["broadcast"].(map[string]any)["id"].(string)
	for _, c := range []struct {
		method, path, body, message string
	}{
		{"POST", "/v1/broadcasts/" + empty + "/send", `{}`, "no recipients"},
		{"POST", "/v1/broadcasts/" + empty + "/escalate", "", "Only rejected broadcasts can be escalated"},
		{"POST", "/v1/broadcasts/" + empty + "/retry-review", "", "rejected"},
		{"PATCH", "/v1/broadcasts/" + empty + "/schedule", `{"scheduledAt":"` + later + `"}`, "scheduled"},
		{"POST", "/v1/broadcasts/" + ok + "/send", `{"scheduledAt":"2020-01-01T00:00:00Z"}`, "future"},
		{"PATCH", "/v1/broadcasts/" + held + "/schedule", `{"scheduledAt":"2020-01-01T00:00:00Z"}`, "future"},
		{"POST", "/v1/broadcasts/" + held + "/cancel", "", "nothing left to cancel"},
	} {
		r := in.do(c.method, c.path, key, strings.NewReader(c.body))
		if r.status != 400 || !strings.Contains(r.body["message"].(string), c.message) {
			t.Errorf("%s %s = %d %v", c.method, c.path, r.status, r.body)
		}
	}
	if b := get(empty); b["status"] != "draft" || b["reviewAttempts"] != nil {
		t.Errorf("refused operations changed the draft: %v", b)
	}
	if r := in.post("/v1/broadcasts/bc_nope/send", key, `{}`); r.status != 404 {
		t.Errorf("send an unknown broadcast = %d", r.status)
	}
}

func TestV2Campaigns(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProjectOf(t, in, verified, nil, apikey.Test)
	total := func(id string) any {
		return in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)["totalContacts"]
	}

	// The channel is checked at creation.
	if r := in.post("/v2/campaigns", key, `{"channel":"sms","name":"x","text":"x"}`); r.status != 400 || !slices.Equal(fieldPaths(r), []string{"from"}) {
		t.Errorf("without from = %d %v", r.status, r.body)
	}
	r := in.post("/v2/campaigns", key, `{"channel":"telegram","name":"x","text":"x","from":"+15005550006"}`)
	connect, _ := r.body["details"].(map[string]any)["connect"].([]any)
	if r.status != 409 || r.body["code"] != "no_channel" || len(connect) != 1 || connect[0].(map[string]any)["type"] != "telegram" {
		t.Errorf("from without the channel = %d %v", r.status, r.body)
	}
	r = in.post("/v2/campaigns", key, `{"channel":"sms","name":"Spring","text":"Hi {{name}}","from":"+15005550006"}`)
	c := r.body["campaign"].(map[string]any)
	if r.status != 201 || c["from"] != "+15005550006" || c["senderId"] != nil || c["status"] != "draft" {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	id := c["id"].(string)
	// A campaign is a broadcast.
	if b := in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any); b["senderId"] != "main" || b["name"] != "Spring" {
		t.Errorf("the campaign on v1 = %v", b)
	}

	// Malformed recipients, or bare digits, refuse the whole request with the path.
	for body, path := range map[string]string{
		`{"recipients":[{"to":"+447700900001"},{"to":"447700900002"}]}`:   "recipients[1].to",
		`{"recipients":[{"to":"ann at example"}]}`:                        "recipients[0].to",
		`{"recipients":[{"to":"+447700900001","templateVariables":[1]}]}`: "recipients[0].templateVariables",
	} {
		if r := in.post("/v2/campaigns/"+id+"/recipients", key, body); r.status != 400 || !slices.Equal(fieldPaths(r), []string{path}) {
			t.Errorf("%s = %d %v", body, r.status, r.body)
		}
	}
	if n := total(id); n != 0.0 {
		t.Fatalf("refused requests added %v recipients", n)
	}
	// A landline cannot take SMS, nor can an email address: reported, not added.
	r = in.post("/v2/campaigns/"+id+"/recipients", key, `{"recipients":[{"to":"+447700900001"},{"to":"+442071838750"},{"to":"+15005550100"},{"to":"+447700900001"},{"to":"Ann@Example.com"}]}`)
	invalid, _ := r.body["invalid"].([]any)
	if r.status != 200 || r.body["added"] != 2.0 || r.body["duplicates"] != 1.0 || len(invalid) != 2 {
		t.Fatalf("recipients = %d %v", r.status, r.body)
	}
	for i, to := range []string{"+442071838750", "Ann@Example.com"} {
		if got := invalid[i].(map[string]any); got["code"] != "unreachable_by_channel" || got["to"] != to {
			t.Errorf("invalid[%d] = %v, want %s unreachable_by_channel", i, got, to)
		}
	}

	// Without 10DLC, +1 numbers of an SMS campaign are reported as ten_dlc_required.
	_, plain := unregisteredProject(t, in, v1alpha1.ProjectSpec{}, nil, apikey.Test)
	other := in.post("/v2/campaigns", plain, `{"channel":"sms","name":"x","text":"x","from":"+15005550006"}`).body["campaign"].(map[string]any)["id"].(string)
	r = in.post("/v2/campaigns/"+other+"/recipients", plain, `{"recipients":[{"to":"+15005550100"},{"to":"+447700900001"}]}`)
	if invalid, _ := r.body["invalid"].([]any); r.body["added"] != 1.0 || len(invalid) != 1 || invalid[0].(map[string]any)["code"] != "ten_dlc_required" {
		t.Errorf("+1 without 10DLC = %v", r.body)
	}

	// Send; then it is no longer a draft: 409 invalid_status for recipients and delete.
	if r := in.post("/v2/campaigns/"+id+"/send", key, ""); r.status != 200 || r.body["campaign"].(map[string]any)["status"] != "pending_review" {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/campaigns/"+id+"/recipients", key, `{"recipients":[{"to":"+447700900009"}]}`); r.status != 409 || r.body["code"] != "invalid_status" {
		t.Errorf("recipients after send = %d %v", r.status, r.body)
	}
	// Even when every recipient is unreachable: the campaign's state is checked first.
	if r := in.post("/v2/campaigns/"+id+"/recipients", key, `{"recipients":[{"to":"+442071838750"}]}`); r.status != 409 || r.body["code"] != "invalid_status" {
		t.Errorf("unreachable recipients after send = %d %v", r.status, r.body)
	}
	if r := in.do(http.MethodDelete, "/v2/campaigns/"+id, key, nil); r.status != 409 || r.body["code"] != "invalid_status" {
		t.Errorf("delete after send = %d %v", r.status, r.body)
	}
	if p := in.get("/v2/campaigns/"+id+"/progress", key).body; p["total"] != 2.0 || p["broadcastId"] != id {
		t.Errorf("progress = %v", p)
	}
	if r := in.post("/v2/campaigns/"+id+"/cancel", key, ""); r.status != 200 || r.body["campaign"].(map[string]any)["status"] != "cancelled" {
		t.Fatalf("cancel = %d %v", r.status, r.body)
	}
	if r := in.post("/v2/campaigns/"+id+"/cancel", key, ""); r.status != 409 || r.body["code"] != "invalid_status" {
		t.Errorf("cancel a finished campaign = %d %v", r.status, r.body)
	}
	if items := in.get("/v2/campaigns", key).body["items"].([]any); len(items) != 1 || items[0].(map[string]any)["from"] != "+15005550006" {
		t.Errorf("list = %v", items)
	}
	if r := in.do(http.MethodDelete, "/v2/campaigns/"+other, plain, nil); r.status != 204 {
		t.Errorf("delete a draft = %d %v", r.status, r.body)
	}
}

// TestBroadcastMaxRecipients: the installation bounds a broadcast's recipients; a request that
// would take it past the bound is refused whole (v1 on contacts, v2 on recipients) and adds
// none of them, while duplicates do not count against it.
func TestBroadcastMaxRecipients(t *testing.T) {
	in := start(t, fastSandbox, func(c *app.Config) { c.BroadcastMaxRecipients = 5 })
	_, key := sendingProjectOf(t, in, verified, nil, apikey.Test)
	stored := func(id string) (int, any) {
		return in.count(`SELECT count(*) FROM broadcast_contacts WHERE broadcast_id = $1`, id),
			in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)["totalContacts"]
	}
	numbers := func(from, to int) string {
		var rs []string
		for i := from; i < to; i++ {
			rs = append(rs, fmt.Sprintf(`"+4477009000%02d"`, i))
		}
		return strings.Join(rs, ",")
	}

	id := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"Capped","text":"Hi"}`).body["broadcast"].(map[string]any)["id"].(string)
	v1 := func(from, to int) response {
		var cs []string
		for _, n := range strings.Split(numbers(from, to), ",") {
			cs = append(cs, `{"recipient":`+n+`}`)
		}
		return in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[`+strings.Join(cs, ",")+`]}`)
	}
	if r := v1(0, 3); r.status != 200 || r.body["added"] != 3.0 {
		t.Fatalf("add 3 = %d %v", r.status, r.body)
	}
	// 3 new (and 1 already there) would make 6.
	r := v1(2, 6)
	if r.status != 400 || r.body["code"] != "invalid_request" || !slices.Equal(fieldPaths(r), []string{"contacts"}) {
		t.Errorf("past the bound = %d %v", r.status, r.body)
	}
	if rows, total := stored(id); rows != 3 || total != 3.0 {
		t.Errorf("a refused request left %d recipients (totalContacts %v)", rows, total)
	}
	// Up to the bound, duplicates included, is fine; one more is not.
	if r := v1(0, 5); r.status != 200 || r.body["added"] != 2.0 || r.body["duplicates"] != 3.0 {
		t.Errorf("up to the bound = %d %v", r.status, r.body)
	}
	if r := v1(5, 6); r.status != 400 || !slices.Equal(fieldPaths(r), []string{"contacts"}) {
		t.Errorf("one past the bound = %d %v", r.status, r.body)
	}
	if rows, total := stored(id); rows != 5 || total != 5.0 {
		t.Errorf("at the bound: %d recipients (totalContacts %v)", rows, total)
	}
	// Removing one makes room for one.
	contactID := in.get("/v1/broadcasts/"+id+"/contacts?limit=1", key).body["items"].([]any)[0].(map[string]any)["id"].(string)
	if r := in.do(http.MethodDelete, "/v1/broadcasts/"+id+"/contacts/"+contactID, key, nil); r.status != 204 {
		t.Fatalf("remove = %d %v", r.status, r.body)
	}
	if r := v1(5, 6); r.status != 200 || r.body["added"] != 1.0 {
		t.Errorf("after a removal = %d %v", r.status, r.body)
	}

	// v2 campaigns: the same bound, on recipients.
	c := in.post("/v2/campaigns", key, `{"channel":"sms","name":"Capped","text":"Hi","from":"+15005550006"}`).body["campaign"].(map[string]any)["id"].(string)
	v2 := func(from, to int) response {
		var rs []string
		for _, n := range strings.Split(numbers(from, to), ",") {
			rs = append(rs, `{"to":`+n+`}`)
		}
		return in.post("/v2/campaigns/"+c+"/recipients", key, `{"recipients":[`+strings.Join(rs, ",")+`]}`)
	}
	if r := v2(0, 4); r.status != 200 || r.body["added"] != 4.0 {
		t.Fatalf("v2 add 4 = %d %v", r.status, r.body)
	}
	if r := v2(4, 6); r.status != 400 || r.body["code"] != "invalid_request" || !slices.Equal(fieldPaths(r), []string{"recipients"}) {
		t.Errorf("v2 past the bound = %d %v", r.status, r.body)
	}
	if rows, total := stored(c); rows != 4 || total != 4.0 {
		t.Errorf("a refused v2 request left %d recipients (totalContacts %v)", rows, total)
	}
}

// TestBroadcastEstimate: sending prices every recipient's message (segments included) at the
// project's price list into estimatedCost, and refuses a live send the balance cannot cover with
// 402 insufficient_balance, changing nothing; test keys see the estimate and are never refused.
func TestBroadcastEstimate(t *testing.T) {
	in := start(t, fastSandbox)
	ctx := context.Background()
	acme, test := sendingProjectOf(t, in, verified, nil, apikey.Test)
	if err := in.k8s.Create(ctx, &v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "prices"},
		Spec: v1alpha1.PriceListSpec{FreeCredit: "1.00", Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+44", Price: "0.04"}}}}); err != nil {
		t.Fatal(err)
	}
	live := newKey(t, in, acme, apikey.Live)
	broadcastOf := func(key string, n int, long bool) string {
		t.Helper()
		id := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"n","text":"Hi {{name}}, your order shipped"}`).body["broadcast"].(map[string]any)["id"].(string)
		var rs []string
		for i := range n {
			rs = append(rs, fmt.Sprintf(`{"recipient":"+4477009%05d","templateVariables":{"name":"Ann"}}`, i))
		}
		if long { // one recipient's message takes two segments
			rs = append(rs, `{"recipient":"+447700999999","templateVariables":{"name":"`+strings.Repeat("a", 160)+`"}}`)
		}
		if r := in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[`+strings.Join(rs, ",")+`]}`); r.status != 200 {
			t.Fatalf("add = %v", r.body)
		}
		return id
	}
	time.Sleep(300 * time.Millisecond) // the informer cache takes the price list

	ok := broadcastOf(live, 2, true)
	r := in.post("/v1/broadcasts/"+ok+"/send", live, `{}`)
	if r.status != 200 || r.body["broadcast"].(map[string]any)["estimatedCost"] != 0.16 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}

	dear := broadcastOf(live, 30, false)
	r = in.post("/v1/broadcasts/"+dear+"/send", live, `{}`)
	if r.status != 402 || r.body["code"] != "insufficient_balance" || r.body["details"].(map[string]any)["estimatedCost"] != 1.2 {
		t.Fatalf("send beyond the balance = %d %v", r.status, r.body)
	}
	if b := in.get("/v1/broadcasts/"+dear, live).body["broadcast"].(map[string]any); b["status"] != "draft" || b["estimatedCost"] != nil {
		t.Errorf("a refused send changed the broadcast: %v", b)
	}

	sandbox := broadcastOf(test, 30, false)
	if r := in.post("/v1/broadcasts/"+sandbox+"/send", test, `{}`); r.status != 200 || r.body["broadcast"].(map[string]any)["estimatedCost"] != 1.2 {
		t.Errorf("test send = %d %v", r.status, r.body)
	}
}

// TestBroadcastSends follows broadcasts through the fan-out to the sandbox: every recipient's
// message goes through the send path, the recipients and counters follow the messages, and the
// broadcast completes; a recipient without a value for a placeholder fails alone.
func TestBroadcastSends(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted(), func(c *app.Config) { c.BroadcastChunk = 2 })
	_, key := sendingProjectOf(t, in, verified, rcv, apikey.Test)
	get := func(id string) map[string]any {
		return in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)
	}

	r := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"Sale","text":"Hi {{name}}, 20% off today","metadata":{"team":"growth"}}`)
	id := r.body["broadcast"].(map[string]any)["id"].(string)
	r = in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[{"recipient":"+447700900001","templateVariables":{"name":"Ann"}},
		{"recipient":"+447700900002","templateVariables":{"name":"Bo"}},{"recipient":"+447700900003"},
		{"recipient":"+15005550100","templateVariables":{"name":"Cy"}},{"recipient":"+447700900005","templateVariables":{"name":"Di"}}]}`)
	if r.body["added"] != 5.0 {
		t.Fatalf("add = %v", r.body)
	}
	if r := in.post("/v1/broadcasts/"+id+"/send", key, `{}`); r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { return get(id)["status"] == "completed" })
	waitFor(t, func() bool { return get(id)["deliveredCount"] == 4.0 })
	b := get(id)
	if b["totalContacts"] != 5.0 || b["pendingCount"] != 0.0 || b["sendingCount"] != 0.0 || b["failedCount"] != 1.0 ||
		b["skippedCount"] != 0.0 || b["sentCount"] != 4.0 || b["startedAt"] == nil || b["completedAt"] == nil {
		t.Errorf("completed broadcast = %v", b)
	}
	if p := in.get("/v1/broadcasts/"+id+"/progress", key).body; p["percentComplete"] != 100.0 || p["delivered"] != 4.0 || p["failed"] != 1.0 {
		t.Errorf("progress = %v", p)
	}

	// A chunk whose every recipient is refused (chunks of 2 here) still completes the broadcast.
	r = in.post("/v1/broadcasts", key, `{"channel":"sms","name":"Nameless","text":"Hi {{name}}"}`)
	none := r.body["broadcast"].(map[string]any)["id"].(string)
	in.post("/v1/broadcasts/"+none+"/contacts", key, `{"contacts":[{"recipient":"+447700900011"},{"recipient":"+447700900012"},{"recipient":"+447700900013"}]}`)
	in.post("/v1/broadcasts/"+none+"/send", key, `{}`)
	waitFor(t, func() bool { return get(none)["status"] == "completed" })
	if b := get(none); b["failedCount"] != 3.0 || b["pendingCount"] != 0.0 {
		t.Errorf("broadcast of refused recipients = %v", b)
	}

	// The recipients: delivered with their messages, one failed with why.
	items := in.get("/v1/broadcasts/"+id+"/contacts", key).body["items"].([]any)
	for _, it := range items {
		c := it.(map[string]any)
		switch c["recipient"] {
		case "+447700900003":
			if c["status"] != "failed" || c["errorCode"] != "VARIABLE_MISSING" || !strings.Contains(c["errorMessage"].(string), "{{name}}") ||
				c["messageId"] != nil {
				t.Errorf("recipient without a name = %v", c)
			}
		default:
			if c["status"] != "delivered" || c["messageId"] == nil || c["processedAt"] == nil {
				t.Errorf("recipient = %v", c)
				continue
			}
			m := in.get("/v1/messages/"+c["messageId"].(string), key).body["message"].(map[string]any)
			if m["to"] != c["recipient"] || m["channel"] != "sms" || m["status"] != "delivered" || !strings.HasPrefix(m["text"].(string), "Hi ") ||
				m["metadata"].(map[string]any)["broadcastId"] != id || m["metadata"].(map[string]any)["team"] != "growth" {
				t.Errorf("message of %v = %v", c["recipient"], m)
			}
		}
	}
	if n := in.count(`SELECT count(*) FROM messages WHERE broadcast_contact_id IN (SELECT id FROM broadcast_contacts WHERE broadcast_id = $1)`, id); n != 4 {
		t.Errorf("%d messages, want 4", n)
	}
	if n := in.count(`SELECT count(*) FROM messages WHERE body = 'Hi Ann, 20% off today'`); n != 1 {
		t.Errorf("Ann's message: %d", n)
	}
	// Each change of an announced status raised one event.
	waitFor(t, func() bool { return len(rcv.statusEvents(id)) == 4 })
	time.Sleep(200 * time.Millisecond)
	if got := slices.Sorted(slices.Values(rcv.statusEvents(id))); !slices.Equal(got,
		[]string{"approved→sending", "draft→pending_review", "pending_review→approved", "sending→completed"}) {
		t.Errorf("events = %v", got)
	}
	if rcv.event("conversation.new", "to", "+447700900001") != nil {
		t.Error("a broadcast announced a new conversation for a recipient")
	}
}

// TestBroadcastCancelMidSend cancels a broadcast while the fan-out works through it: what was
// handed to the send path goes on, the rest is skipped, and the counters add up.
func TestBroadcastCancelMidSend(t *testing.T) {
	in := start(t, fastSandbox, func(c *app.Config) { c.BroadcastChunk = 2 }) // slow enough to cancel midway
	_, key := sendingProjectOf(t, in, verified, nil, apikey.Test)
	r := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"Big","text":"Hello"}`)
	id := r.body["broadcast"].(map[string]any)["id"].(string)
	for page := range 3 {
		var sb strings.Builder
		for i := range 1000 {
			if i > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, `{"recipient":"+4477009%05d"}`, page*1000+i)
		}
		if r := in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[`+sb.String()+`]}`); r.body["added"] != 1000.0 {
			t.Fatalf("add = %v", r.body)
		}
	}
	in.post("/v1/broadcasts/"+id+"/send", key, `{}`)
	waitFor(t, func() bool {
		b := in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)
		return b["status"] == "sending" && b["pendingCount"].(float64) < 2900
	})
	r = in.post("/v1/broadcasts/"+id+"/cancel", key, "")
	if r.status != 200 {
		t.Fatalf("cancel = %d %v", r.status, r.body)
	}
	b := r.body["broadcast"].(map[string]any)
	if b["status"] != "cancelled" || b["pendingCount"] != 0.0 || b["skippedCount"].(float64) == 0 {
		t.Fatalf("cancelled = %v", b)
	}
	skipped := b["skippedCount"].(float64)
	// What was queued is still delivered; nothing else is sent.
	waitFor(t, func() bool {
		b := in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)
		return b["sendingCount"] == 0.0
	})
	b = in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)
	if b["deliveredCount"].(float64)+b["failedCount"].(float64)+skipped != 3000 || b["skippedCount"] != skipped {
		t.Errorf("counters = %v", b)
	}
	sent := in.count(`SELECT count(*) FROM messages WHERE broadcast_contact_id IN (SELECT id FROM broadcast_contacts WHERE broadcast_id = $1)`, id)
	if float64(sent) != 3000-skipped {
		t.Errorf("%d messages for %v recipients not skipped", sent, 3000-skipped)
	}
	if n := in.count(`SELECT count(*) FROM broadcast_contacts WHERE broadcast_id = $1 AND status = 'skipped'`, id); float64(n) != skipped {
		t.Errorf("%d skipped recipients, counter says %v", n, skipped)
	}
}

// smsSandboxSender sends SMS through the sandbox, live keys too.
var smsSandboxSender = v1alpha1.SenderSpec{DisplayName: "Main", Default: true, Transport: v1alpha1.TransportSandbox,
	PhoneNumber: "+15005550006", SMS: &v1alpha1.Activation{Active: true}}

// pricedLiveProject is a project of spec priced by prices, with the sender "main" of sender, and
// a live key of it.
func pricedLiveProject(t *testing.T, in *instance, spec v1alpha1.ProjectSpec, prices v1alpha1.PriceListSpec, sender v1alpha1.SenderSpec) (string, string) {
	t.Helper()
	ctx := context.Background()
	acme := newProject(t, in, spec)
	if err := in.k8s.Create(ctx, &v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "prices"}, Spec: prices}); err != nil {
		t.Fatal(err)
	}
	if err := in.k8s.Create(ctx, &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "main"}, Spec: sender}); err != nil {
		t.Fatal(err)
	}
	live := newKey(t, in, acme, apikey.Live)
	waitFor(t, func() bool { return in.get("/v1/senders/main", live).status == 200 })
	return acme, live
}

// TestBroadcastMoney: a live broadcast reserves its estimate from the balance when it starts,
// its messages are charged as they are accepted, and what it did not spend returns, so the
// balance ends exactly its actualCost lower and the ledger agrees.
func TestBroadcastMoney(t *testing.T) {
	in := start(t, fastSandbox)
	ctx := context.Background()
	acme, live := pricedLiveProject(t, in, verified, v1alpha1.PriceListSpec{FreeCredit: "1.00",
		Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+44", Price: "0.05", ProviderCost: "0.04"}}}, smsSandboxSender)

	id := in.post("/v1/broadcasts", live, `{"channel":"sms","name":"Paid","text":"Hi {{name}}"}`).body["broadcast"].(map[string]any)["id"].(string)
	var contacts []string
	for i := range 10 {
		contacts = append(contacts, fmt.Sprintf(`{"recipient":"+4477009000%02d","templateVariables":{"name":"R%d"}}`, i, i))
	}
	contacts = append(contacts, `{"recipient":"+447700900099"}`) // no name: fails, and is not charged
	if r := in.post("/v1/broadcasts/"+id+"/contacts", live, `{"contacts":[`+strings.Join(contacts, ",")+`]}`); r.body["added"] != 11.0 {
		t.Fatalf("add = %v", r.body)
	}
	r := in.post("/v1/broadcasts/"+id+"/send", live, `{}`)
	if r.status != 200 || r.body["broadcast"].(map[string]any)["estimatedCost"] != 0.55 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		return in.get("/v1/broadcasts/"+id, live).body["broadcast"].(map[string]any)["status"] == "completed"
	})
	b := in.get("/v1/broadcasts/"+id, live).body["broadcast"].(map[string]any)
	if b["actualCost"] != 0.5 || b["reservedAmount"] != 0.0 || b["estimatedCost"] != 0.55 || b["failedCount"] != 1.0 {
		t.Errorf("completed = %v", b)
	}
	if bal := in.get("/v1/balance", live).body; bal["balance"] != 50.0 || bal["totalSpent"] != 50.0 { // cents
		t.Errorf("balance = %v", bal)
	}
	var ledger, reserved, released int64
	if err := in.db.QueryRow(ctx, `SELECT
			coalesce(sum(CASE WHEN kind IN ('charge', 'reserve') THEN -amount_micros ELSE amount_micros END), 0),
			coalesce(sum(amount_micros) FILTER (WHERE kind = 'reserve'), 0), coalesce(sum(amount_micros) FILTER (WHERE kind = 'release'), 0)
		FROM ledger_entries WHERE project = $1`, acme).Scan(&ledger, &reserved, &released); err != nil {
		t.Fatal(err)
	}
	if ledger != 500_000 || reserved != 550_000 || released != 550_000 {
		t.Errorf("ledger: balance %d, reserved %d, released %d", ledger, reserved, released)
	}
	items := in.get("/v1/broadcasts/"+id+"/contacts?limit=1", live).body["items"].([]any)
	if c := items[0].(map[string]any); c["cost"] != 0.05 {
		t.Errorf("recipient's cost = %v", c)
	}
}

// TestBroadcastReleasesStayWithinItsReservation: a live broadcast whose price rises after it
// reserved its estimate releases no more than it reserved, even with two chunks releasing at
// once before either change is folded: the balance ends exactly actualCost lower, equal to its
// ledger, and no other project's ledger moves.
func TestBroadcastReleasesStayWithinItsReservation(t *testing.T) {
	in := start(t, fastSandbox, func(c *app.Config) { c.BroadcastChunk = 2 })
	ctx := context.Background()
	prices := func(price v1alpha1.USDAmount) v1alpha1.PriceListSpec {
		return v1alpha1.PriceListSpec{FreeCredit: "5.00", Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+44", Price: price}}}
	}
	acme, live := pricedLiveProject(t, in, verified, prices("0.05"), smsSandboxSender)
	bystander, other := pricedLiveProject(t, in, verified, prices("0.05"), smsSandboxSender)
	if r := in.get("/v1/balance", other); r.status != 200 {
		t.Fatalf("bystander's balance = %d %v", r.status, r.body)
	}
	bystanderLedger := in.count(`SELECT count(*) FROM ledger_entries WHERE project = $1`, bystander)

	id := in.post("/v1/broadcasts", live, `{"channel":"sms","name":"Dearer","text":"Hi {{name}}"}`).body["broadcast"].(map[string]any)["id"].(string)
	var contacts []string
	for i := range 10 {
		contacts = append(contacts, fmt.Sprintf(`{"recipient":"+4477009008%02d","templateVariables":{"name":"R%d"}}`, i, i))
	}
	if r := in.post("/v1/broadcasts/"+id+"/contacts", live, `{"contacts":[`+strings.Join(contacts, ",")+`]}`); r.body["added"] != 10.0 {
		t.Fatalf("add = %v", r.body)
	}
	// Hold the recipients, so that the broadcast starts (and reserves) but sends nothing yet.
	held, err := in.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback(ctx)
	if _, err := held.Exec(ctx, `SELECT 1 FROM broadcast_contacts WHERE broadcast_id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	if r := in.post("/v1/broadcasts/"+id+"/send", live, `{}`); r.status != 200 || r.body["broadcast"].(map[string]any)["estimatedCost"] != 0.5 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		b := in.get("/v1/broadcasts/"+id, live).body["broadcast"].(map[string]any)
		return b["status"] == "sending" && b["reservedAmount"] == 0.5
	})
	// The price quadruples: each chunk of 2 now costs 0.40 of the 0.50 reserved.
	var list v1alpha1.PriceList
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "prices"}, &list); err != nil {
		t.Fatal(err)
	}
	list.Spec = prices("0.20")
	if err := in.k8s.Update(ctx, &list); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the informer cache takes it (actualCost below says it did)

	// Hold the broadcast's row, as a slow fold would: both fan-out workers take a chunk at once,
	// and neither chunk's change is folded before the other releases.
	folds, err := in.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer folds.Rollback(ctx)
	var pid int
	if err := folds.QueryRow(ctx, `SELECT pg_backend_pid() FROM broadcasts WHERE id = $1 FOR UPDATE`, id).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if err := held.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Both wait: on this transaction, or the second on the first, queued for the row.
	waitFor(t, func() bool {
		return in.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> $1
			AND cardinality(pg_blocking_pids(pid)) > 0`, pid) >= 2
	})
	if err := folds.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return in.get("/v1/broadcasts/"+id, live).body["broadcast"].(map[string]any)["status"] == "completed"
	})

	b := in.get("/v1/broadcasts/"+id, live).body["broadcast"].(map[string]any)
	if b["actualCost"] != 2.0 || b["reservedAmount"] != 0.0 || b["sendingCount"].(float64)+b["deliveredCount"].(float64) != 10 {
		t.Errorf("completed = %v", b)
	}
	var reserved, released int64
	if err := in.db.QueryRow(ctx, `SELECT coalesce(sum(amount_micros) FILTER (WHERE kind = 'reserve'), 0),
			coalesce(sum(amount_micros) FILTER (WHERE kind = 'release'), 0)
		FROM ledger_entries WHERE project = $1 AND note = $2`, acme, "broadcast "+id).Scan(&reserved, &released); err != nil {
		t.Fatal(err)
	}
	if reserved != 500_000 || released != reserved {
		t.Errorf("the broadcast reserved %d and released %d", reserved, released)
	}
	var balance int64
	if err := in.db.QueryRow(ctx, `SELECT balance_micros FROM balances WHERE project = $1`, acme).Scan(&balance); err != nil {
		t.Fatal(err)
	}
	ledger, err := db.Planned(in.db).LedgerSum(ctx, acme)
	if err != nil {
		t.Fatal(err)
	}
	if balance != 3_000_000 || ledger != balance {
		t.Errorf("balance %d, ledger %d: want 5.00 less the 2.00 spent", balance, ledger)
	}
	if n := in.count(`SELECT count(*) FROM ledger_entries WHERE note = $1 AND project <> $2`, "broadcast "+id, acme); n != 0 ||
		in.count(`SELECT count(*) FROM ledger_entries WHERE project = $1`, bystander) != bystanderLedger {
		t.Errorf("another project's ledger moved (%d entries of the broadcast)", n)
	}
}

// TestBroadcastPacing: a Provider's messagesPerSecond spaces a broadcast's sends from one
// address, while a single send from the same address goes at once.
func TestBroadcastPacing(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted())
	peer := twiliotest.NewServer(t)
	acme, live := twilioProject(t, in, peer, rcv)
	updateProject(t, in, acme, func(s *v1alpha1.ProjectSpec) { s.Verification = v1alpha1.VerificationIdentityApproved })
	var p v1alpha1.Provider
	if err := in.k8s.Get(context.Background(), client.ObjectKey{Namespace: acme, Name: "twilio"}, &p); err != nil {
		t.Fatal(err)
	}
	perSecond := int32(4)
	p.Spec.MessagesPerSecond = &perSecond
	if err := in.k8s.Update(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the informer cache takes the change

	id := in.post("/v1/broadcasts", live, `{"channel":"sms","name":"Paced","text":"Paced"}`).body["broadcast"].(map[string]any)["id"].(string)
	var contacts []string
	for i := range 12 {
		contacts = append(contacts, fmt.Sprintf(`{"recipient":"+4477009001%02d"}`, i))
	}
	in.post("/v1/broadcasts/"+id+"/contacts", live, `{"contacts":[`+strings.Join(contacts, ",")+`]}`)
	in.post("/v1/broadcasts/"+id+"/send", live, `{}`)
	waitFor(t, func() bool {
		return in.get("/v1/broadcasts/"+id, live).body["broadcast"].(map[string]any)["pendingCount"] == 0.0
	})
	single := time.Now()
	if r := in.post("/v1/messages", live, `{"to":"+447700900200","text":"single"}`); r.status != 200 {
		t.Fatalf("single send = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { return len(peer.Messages()) == 13 })
	var paced []time.Time
	for _, m := range peer.Messages() {
		if m.Body == "single" {
			if late := m.Received.Sub(single); late > 2*time.Second {
				t.Errorf("the single send waited %v behind the broadcast", late)
			}
			continue
		}
		paced = append(paced, m.Received)
	}
	slices.SortFunc(paced, func(a, b time.Time) int { return a.Compare(b) })
	// 12 messages at 4 a second: a second's worth at once, then the other 8 over 2 s.
	if spread := paced[len(paced)-1].Sub(paced[0]); spread < 1500*time.Millisecond {
		t.Errorf("12 messages at 4/s went out within %v", spread)
	}
}

// TestBroadcastEmailBlocks: live broadcast emails are billed in blocks of 1,000 a month, each
// block charged the PriceList's email price as the month's count crosses its end.
func TestBroadcastEmailBlocks(t *testing.T) {
	in := start(t, fastSandbox)
	ctx := context.Background()
	paid := verified
	paid.Plan = v1alpha1.PlanPaid // the Free plan's email caps are not what this is about
	acme, live := pricedLiveProject(t, in, paid, v1alpha1.PriceListSpec{FreeCredit: "5.00",
		Prices: []v1alpha1.Price{{Channel: "email", Prefix: "+", Price: "0.80"}}},
		v1alpha1.SenderSpec{DisplayName: "Main", Default: true, Transport: v1alpha1.TransportSandbox,
			Email: &v1alpha1.EmailSettings{Address: "news@acme.example"}})
	if _, err := billing.Credit(ctx, in.db, billing.Account{Project: acme}, 5_000_000, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	send := func(from, n int) map[string]any {
		t.Helper()
		id := in.post("/v1/broadcasts", live, `{"channel":"email","name":"News","emailSubject":"News","text":"Hello"}`).body["broadcast"].(map[string]any)["id"].(string)
		for start := from; start < from+n; start += 1000 {
			var contacts []string
			for i := start; i < min(start+1000, from+n); i++ {
				contacts = append(contacts, fmt.Sprintf(`{"recipient":"r%d@example.com"}`, i))
			}
			if r := in.post("/v1/broadcasts/"+id+"/contacts", live, `{"contacts":[`+strings.Join(contacts, ",")+`]}`); r.status != 200 {
				t.Fatalf("add = %d %v", r.status, r.body)
			}
		}
		if r := in.post("/v1/broadcasts/"+id+"/send", live, `{}`); r.status != 200 {
			t.Fatalf("send = %d %v", r.status, r.body)
		}
		// Billed as they are accepted (their delivery, through email pre-flight, is not what
		// this is about).
		waitFor(t, func() bool {
			b := in.get("/v1/broadcasts/"+id, live).body["broadcast"].(map[string]any)
			return b["status"] != "pending_review" && b["pendingCount"] == 0.0
		})
		return in.get("/v1/broadcasts/"+id, live).body["broadcast"].(map[string]any)
	}
	// 1,500 emails cross the first block's end: one block charged.
	b := send(0, 1500)
	if b["estimatedCost"] != 1.2 || b["actualCost"] != 0.8 || b["reservedAmount"] != 0.0 {
		t.Errorf("first broadcast = %v", b)
	}
	if bal := in.get("/v1/balance", live).body; bal["balance"] != 420.0 {
		t.Errorf("balance after 1,500 = %v", bal)
	}
	// 400 more make 1,900: no block ends; 200 more make 2,100: the second block is charged.
	if b := send(1500, 400); b["actualCost"] != nil && b["actualCost"] != 0.0 {
		t.Errorf("second broadcast = %v", b)
	}
	if b := send(1900, 200); b["actualCost"] != 0.8 {
		t.Errorf("third broadcast = %v", b)
	}
	if bal := in.get("/v1/balance", live).body; bal["balance"] != 340.0 || bal["totalSpent"] != 160.0 {
		t.Errorf("balance after 2,100 = %v", bal)
	}
}

// TestBroadcastPausesAtTheDailyLimit: a broadcast uses what is left of the project's daily
// ceiling, then waits paused for the reset, the rest of its recipients still pending.
func TestBroadcastPausesAtTheDailyLimit(t *testing.T) {
	in := start(t, fastSandbox)
	three := int64(3)
	limited := verified
	limited.DailyLimits = &v1alpha1.DailyLimits{SMS: &three}
	_, key := sendingProjectOf(t, in, limited, nil, apikey.Test)
	id := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"Capped","text":"Hello"}`).body["broadcast"].(map[string]any)["id"].(string)
	var contacts []string
	for i := range 8 {
		contacts = append(contacts, fmt.Sprintf(`{"recipient":"+4477009002%02d"}`, i))
	}
	in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[`+strings.Join(contacts, ",")+`]}`)
	in.post("/v1/broadcasts/"+id+"/send", key, `{}`)
	waitFor(t, func() bool {
		return in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)["status"] == "paused"
	})
	b := in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)
	if b["pendingCount"] != 5.0 || b["totalContacts"] != 8.0 {
		t.Errorf("paused = %v", b)
	}
	var until time.Time
	var reason string
	if err := in.db.QueryRow(context.Background(), `SELECT paused_until, pause_reason FROM broadcasts WHERE id = $1`, id).Scan(&until, &reason); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if reason != "daily_limit_exceeded" || !until.Equal(time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("paused until %v for %q", until, reason)
	}
	if items := in.get("/v1/broadcasts?status=paused", key).body["items"].([]any); len(items) != 1 {
		t.Errorf("paused broadcasts = %v", items)
	}
	// Cancel works on it: the rest is skipped.
	r := in.post("/v1/broadcasts/"+id+"/cancel", key, "")
	if b := r.body["broadcast"].(map[string]any); r.status != 200 || b["skippedCount"] != 5.0 || b["pendingCount"] != 0.0 {
		t.Errorf("cancel = %d %v", r.status, r.body)
	}
}

// TestSmartBroadcast: smart sends each recipient on the cheapest channel that takes the message:
// WhatsApp to a recipient whose 24-hour window is open, SMS to the others.
func TestSmartBroadcast(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProjectOf(t, in, verified, nil, apikey.Test)
	openWindow(t, in, key, "+447700900301")
	id := in.post("/v1/broadcasts", key, `{"channel":"smart","name":"Smart","text":"Hello"}`).body["broadcast"].(map[string]any)["id"].(string)
	in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[{"recipient":"+447700900301"},{"recipient":"+447700900302"}]}`)
	in.post("/v1/broadcasts/"+id+"/send", key, `{}`)
	waitFor(t, func() bool {
		return in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)["status"] == "completed"
	})
	channels := map[string]string{}
	for _, it := range in.get("/v1/broadcasts/"+id+"/contacts", key).body["items"].([]any) {
		c := it.(map[string]any)
		if c["messageId"] == nil {
			t.Fatalf("recipient not sent: %v", c)
		}
		m := in.get("/v1/messages/"+c["messageId"].(string), key).body["message"].(map[string]any)
		channels[c["recipient"].(string)] = m["channel"].(string)
	}
	if channels["+447700900301"] != "whatsapp" || channels["+447700900302"] != "sms" {
		t.Errorf("channels = %v", channels)
	}
}

// TestTemplateBroadcast: a WhatsApp template broadcast fills each recipient's variables; a
// recipient without the variable the template takes fails with the reason, and the rest go.
func TestTemplateBroadcast(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProjectOf(t, in, verified, nil, apikey.Test)
	tpl := approvedTemplate(t, in, key)
	r := in.post("/v1/broadcasts", key, `{"channel":"whatsapp","name":"Greeting","messageType":"template","content":{"templateId":"`+tpl+`"}}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	id := r.body["broadcast"].(map[string]any)["id"].(string)
	in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[{"recipient":"+447700900401","templateVariables":{"1":"Ann"}},
		{"recipient":"+447700900402"},{"recipient":"+447700900403","templateVariables":{"1":"Cy"}}]}`)
	in.post("/v1/broadcasts/"+id+"/send", key, `{}`)
	waitFor(t, func() bool {
		return in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)["status"] == "completed"
	})
	b := in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)
	if b["failedCount"] != 1.0 || b["pendingCount"] != 0.0 {
		t.Errorf("broadcast = %v", b)
	}
	for _, it := range in.get("/v1/broadcasts/"+id+"/contacts", key).body["items"].([]any) {
		c := it.(map[string]any)
		if c["recipient"] == "+447700900402" {
			if c["status"] != "failed" || c["errorCode"] != "INVALID_REQUEST" || !strings.Contains(c["errorMessage"].(string), "templateVariables") {
				t.Errorf("recipient without the variable = %v", c)
			}
			continue
		}
		m := in.get("/v1/messages/"+c["messageId"].(string), key).body["message"].(map[string]any)
		content, _ := m["content"].(map[string]any)
		if m["channel"] != "whatsapp" || m["messageType"] != "template" || content["templateVariables"] == nil {
			t.Errorf("message of %v = %v", c["recipient"], m)
		}
	}
}

// TestScheduledBroadcast: an approved broadcast whose time is ahead waits scheduled, then
// sends at its time.
func TestScheduledBroadcast(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProjectOf(t, in, verified, nil, apikey.Test)
	id := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"Later","text":"Hello"}`).body["broadcast"].(map[string]any)["id"].(string)
	in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[{"recipient":"+447700900501"}]}`)
	at := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)
	in.post("/v1/broadcasts/"+id+"/send", key, `{"scheduledAt":"`+at.Format(time.RFC3339)+`"}`)
	waitFor(t, func() bool {
		return in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)["status"] == "scheduled"
	})
	waitFor(t, func() bool {
		return in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)["status"] == "completed"
	})
	b := in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)
	started, _ := time.Parse(time.RFC3339Nano, b["startedAt"].(string))
	if started.Before(at) {
		t.Errorf("started at %v, before its time %v", started, at)
	}
}

// TestBroadcastsTakeTurns: two broadcasts of one project sending at once both go forward: each
// pass of the fan-out hands a chunk of each.
func TestBroadcastsTakeTurns(t *testing.T) {
	in := start(t, fastSandbox, func(c *app.Config) { c.BroadcastChunk = 2 })
	_, key := sendingProjectOf(t, in, verified, nil, apikey.Test)
	ids := make([]string, 2)
	for n := range ids {
		ids[n] = in.post("/v1/broadcasts", key, `{"channel":"sms","name":"Turns","text":"Hello"}`).body["broadcast"].(map[string]any)["id"].(string)
		var contacts []string
		for i := range 600 {
			contacts = append(contacts, fmt.Sprintf(`{"recipient":"+44770%d%06d"}`, 1+n, i))
		}
		in.post("/v1/broadcasts/"+ids[n]+"/contacts", key, `{"contacts":[`+strings.Join(contacts, ",")+`]}`)
	}
	for _, id := range ids {
		in.post("/v1/broadcasts/"+id+"/send", key, `{}`)
	}
	pending := func(id string) float64 {
		return in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any)["pendingCount"].(float64)
	}
	// Once either is half handed over, the other is well under way too.
	waitFor(t, func() bool { return pending(ids[0]) <= 300 || pending(ids[1]) <= 300 })
	if a, b := pending(ids[0]), pending(ids[1]); a > 500 || b > 500 {
		t.Errorf("one broadcast waited for the other: %v and %v recipients pending", a, b)
	}
}

// TestBroadcastPausesForItsBalance: a live broadcast whose balance was spent between its send
// and its start cannot reserve its estimate: it waits paused, takes nothing, and can be cancelled.
func TestBroadcastPausesForItsBalance(t *testing.T) {
	in := start(t, fastSandbox)
	ctx := context.Background()
	_, live := pricedLiveProject(t, in, verified, v1alpha1.PriceListSpec{FreeCredit: "1.00",
		Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+44", Price: "0.05"}}}, smsSandboxSender)

	id := in.post("/v1/broadcasts", live, `{"channel":"sms","name":"Later","text":"Hello"}`).body["broadcast"].(map[string]any)["id"].(string)
	var contacts []string
	for i := range 10 {
		contacts = append(contacts, fmt.Sprintf(`{"recipient":"+4477009006%02d"}`, i))
	}
	in.post("/v1/broadcasts/"+id+"/contacts", live, `{"contacts":[`+strings.Join(contacts, ",")+`]}`)
	at := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)
	if r := in.post("/v1/broadcasts/"+id+"/send", live, `{"scheduledAt":"`+at.Format(time.RFC3339)+`"}`); r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body) // 0.50 estimated, 1.00 in the balance
	}
	// Meanwhile single sends spend 0.60 of it.
	for i := range 12 {
		if r := in.post("/v1/messages", live, fmt.Sprintf(`{"to":"+4477009007%02d","text":"single"}`, i)); r.status != 200 {
			t.Fatalf("single send %d = %d %v", i, r.status, r.body)
		}
	}
	waitFor(t, func() bool {
		return in.get("/v1/broadcasts/"+id, live).body["broadcast"].(map[string]any)["status"] == "paused"
	})
	var reason string
	if err := in.db.QueryRow(ctx, `SELECT pause_reason FROM broadcasts WHERE id = $1`, id).Scan(&reason); err != nil || reason != "insufficient_balance" {
		t.Errorf("pause reason %q %v", reason, err)
	}
	b := in.get("/v1/broadcasts/"+id, live).body["broadcast"].(map[string]any)
	if b["pendingCount"] != 10.0 || b["reservedAmount"] != nil {
		t.Errorf("paused = %v", b)
	}
	if bal := in.get("/v1/balance", live).body; bal["balance"] != 40.0 { // cents: nothing reserved
		t.Errorf("balance = %v", bal)
	}
	if r := in.post("/v1/broadcasts/"+id+"/cancel", live, ""); r.status != 200 || r.body["broadcast"].(map[string]any)["skippedCount"] != 10.0 {
		t.Errorf("cancel = %d %v", r.status, r.body)
	}
}

// TestBroadcastDispatchedInBatches follows a test-mode broadcast through the batch dispatch (one
// job a chunk, one statement for the chunk's sent and one for its delivered): a recipient who
// opted out and one the sandbox refuses fail alone, the others' messages raise their events and
// count in their contacts' metrics as single sends do.
func TestBroadcastDispatchedInBatches(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted(), func(c *app.Config) { c.BroadcastChunk = 4 })
	acme, key := sendingProjectOf(t, in, verified, rcv, apikey.Test)
	in.exec(`INSERT INTO opt_outs (project, test_mode, originator, recipient, created_at) VALUES ($1, true, '+15005550006', '+447700900103', now())`, acme)
	for _, n := range []string{"+447700900100", "+447700900101"} { // contacts whose metrics the sends count in
		if r := in.post("/v1/contacts", key, `{"channels":[{"channel":"sms","identifier":"`+n+`"}]}`); r.status != 201 {
			t.Fatalf("contact %s = %d %v", n, r.status, r.body)
		}
	}

	r := in.post("/v1/broadcasts", key, `{"channel":"sms","name":"Batches","text":"Hello"}`)
	id := r.body["broadcast"].(map[string]any)["id"].(string)
	var sb strings.Builder
	for i := range 10 {
		fmt.Fprintf(&sb, `{"recipient":"+4477009001%02d"},`, i)
	}
	sb.WriteString(`{"recipient":"+15005550001"}`) // the sandbox refuses it: RISK_BLOCKED
	if r := in.post("/v1/broadcasts/"+id+"/contacts", key, `{"contacts":[`+sb.String()+`]}`); r.body["added"] != 11.0 {
		t.Fatalf("add = %v", r.body)
	}
	in.post("/v1/broadcasts/"+id+"/send", key, `{}`)
	get := func() map[string]any { return in.get("/v1/broadcasts/"+id, key).body["broadcast"].(map[string]any) }
	waitFor(t, func() bool { return get()["status"] == "completed" && get()["deliveredCount"] == 9.0 })
	if b := get(); b["failedCount"] != 2.0 || b["sentCount"] != 9.0 || b["sendingCount"] != 0.0 {
		t.Errorf("broadcast = %v", b)
	}

	failed := map[string]string{}
	for _, it := range in.get("/v1/broadcasts/"+id+"/contacts", key).body["items"].([]any) {
		if c := it.(map[string]any); c["status"] == "failed" {
			failed[c["recipient"].(string)] = c["errorCode"].(string)
		}
	}
	if failed["+447700900103"] != "RECIPIENT_UNSUBSCRIBED" || failed["+15005550001"] != "RISK_BLOCKED" || len(failed) != 2 {
		t.Errorf("failed recipients = %v", failed)
	}
	// One dispatch job a chunk of three or four, none a message.
	if n := in.count(`SELECT count(*) FROM river_job WHERE kind = 'message.dispatch'`); n != 0 {
		t.Errorf("%d single dispatch jobs for a test-mode broadcast", n)
	}
	if n := in.count(`SELECT count(*) FROM river_job WHERE kind = 'message.dispatch_many'`); n < 3 || n > 4 {
		t.Errorf("%d batch dispatch jobs for 11 recipients in chunks of 4", n)
	}
	// A delivered message: the sandbox's id, both events, the contact's metrics.
	var msgID, providerID string
	if err := in.db.QueryRow(context.Background(), `SELECT id, provider_message_id FROM messages WHERE recipient = '+447700900100' AND project = $1`,
		acme).Scan(&msgID, &providerID); err != nil || !strings.HasPrefix(providerID, "sbx_") {
		t.Fatalf("message of +447700900100: %q %q %v", msgID, providerID, err)
	}
	waitFor(t, func() bool { return slices.Contains(rcv.names(msgID), "message.delivered") })
	if names := rcv.names(msgID); !slices.Contains(names, "message.sent") {
		t.Errorf("events of a broadcast message = %v", names)
	}
	if n := in.count(`SELECT count(*) FROM contact_channels WHERE project = $1 AND identifier LIKE '+4477009001%' AND total_attempts = 1 AND delivered_count = 1
		AND success_count = 1 AND last_success_at IS NOT NULL`, acme); n != 2 {
		t.Errorf("%d contact channels counted one attempt and one delivery, want 2", n)
	}
}
