package app_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

func (in *instance) patch(path, auth, body string) response {
	return in.do(http.MethodPatch, path, auth, strings.NewReader(body))
}

func (in *instance) delete(path, auth string) response {
	return in.do(http.MethodDelete, path, auth, nil)
}

// exec runs a statement the way another part of Switchboard would (inbound messages, the message
// lifecycle) and returns how many rows it touched.
func (in *instance) exec(sql string, args ...any) int {
	return in.count("WITH done AS ("+sql+" RETURNING 1) SELECT count(*) FROM done", args...)
}

// channelsOf returns a contact's channels by channel:identifier.
func channelsOf(t *testing.T, contact map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	list, _ := contact["channels"].([]any)
	for _, c := range list {
		ch := c.(map[string]any)
		out[ch["channel"].(string)+":"+ch["identifier"].(string)] = ch
	}
	return out
}

func ids(r response) []string {
	var out []string
	items, _ := r.body["items"].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any)["id"].(string))
	}
	return out
}

func TestContactLifecycle(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Test)

	r := in.post("/v1/contacts", key, `{"displayName":"Ana Souza","metadata":{"plan":"pro"},"tags":["vip","chile","vip"],
		"channels":[{"channel":"sms","identifier":"+14155550100","countryCode":"us","label":"mobile"},
		            {"channel":"email","identifier":"Ana@Example.com"},
		            {"channel":"sms","identifier":"+14155550101"},
		            {"channel":"whatsapp","identifier":"US.13491208655302741918"}]}`)
	if r.status != 201 {
		t.Fatalf("create = %d %s", r.status, r.raw)
	}
	ana := r.body
	id := ana["id"].(string)
	if !strings.HasPrefix(id, "ct_") || ana["displayName"] != "Ana Souza" || ana["primaryPhone"] != "+14155550100" ||
		ana["phoneNumber"] != "+14155550100" || ana["primaryEmail"] != "ana@example.com" || ana["countryCode"] != "US" ||
		ana["profileName"] != nil || ana["verified"] != false || !jsonEqual(ana["metadata"], map[string]string{"plan": "pro"}) ||
		!jsonEqual(ana["tags"], []string{"vip", "chile"}) || !jsonEqual(ana["availableChannels"], []string{"sms", "whatsapp", "email"}) {
		t.Errorf("created contact = %s", r.raw)
	}
	chans := channelsOf(t, ana)
	first, second := chans["sms:+14155550100"], chans["sms:+14155550101"]
	if len(chans) != 4 || !strings.HasPrefix(first["id"].(string), "cch_") || first["isPrimary"] != true || second["isPrimary"] != false ||
		chans["email:ana@example.com"]["isPrimary"] != true || first["label"] != "mobile" || first["countryCode"] != "US" ||
		!jsonEqual(first["metrics"], map[string]int{"successCount": 0, "failureCount": 0, "totalAttempts": 0, "avgDeliveryTimeMs": 0}) {
		t.Errorf("created channels = %v", chans)
	}

	if r := in.get("/v1/contacts/"+id, key); r.status != 200 || !jsonEqual(r.body, ana) {
		t.Errorf("get = %d %s, want the created contact", r.status, r.raw)
	}
	for _, path := range []string{"/v1/contacts/phone/+14155550101", "/v1/contacts/phone/%2B14155550101"} {
		if r := in.get(path, key); r.status != 200 || r.body["id"] != id {
			t.Errorf("GET %s = %d %s", path, r.status, r.raw)
		}
	}
	if r := in.get("/v1/contacts/phone/+14155550199", key); r.status != 404 {
		t.Errorf("unknown phone = %d", r.status)
	}
	if r := in.get("/v1/contacts/phone/14155550101", key); r.status != 400 || len(fieldErrors(r)) != 1 {
		t.Errorf("phone without + = %d %s", r.status, r.raw)
	}

	r = in.patch("/v1/contacts/"+id, key, `{"displayName":"Ana S.","defaultChannel":"email","metadata":{"city":"Lima"},"tags":["peru"]}`)
	if r.status != 200 || r.body["displayName"] != "Ana S." || r.body["defaultChannel"] != "email" ||
		!jsonEqual(r.body["metadata"], map[string]string{"city": "Lima"}) || !jsonEqual(r.body["tags"], []string{"peru"}) ||
		r.body["updatedAt"] == ana["updatedAt"] {
		t.Errorf("patch = %d %s", r.status, r.raw)
	}
	r = in.patch("/v1/contacts/"+id, key, `{"displayName":null,"metadata":null}`)
	if _, has := r.body["displayName"]; r.status != 200 || has || r.body["defaultChannel"] != "email" || !jsonEqual(r.body["metadata"], map[string]string{}) ||
		!jsonEqual(r.body["tags"], []string{"peru"}) {
		t.Errorf("patch with nulls = %d %s", r.status, r.raw)
	}
	if r := in.patch("/v1/contacts/"+id, key, `{"defaultChannel":"voice"}`); r.status != 400 || len(fieldErrors(r)) != 1 {
		t.Errorf("a default channel the contact lacks = %d %s", r.status, r.raw)
	}

	if r := in.delete("/v1/contacts/"+id, key); r.status != 204 {
		t.Errorf("delete = %d %s", r.status, r.raw)
	}
	if r := in.get("/v1/contacts/"+id, key); r.status != 404 || r.body["code"] != "not_found" {
		t.Errorf("get after delete = %d %s", r.status, r.raw)
	}
	if r := in.delete("/v1/contacts/"+id, key); r.status != 404 {
		t.Errorf("second delete = %d, want 404", r.status)
	}
	if n := in.count("SELECT count(*) FROM contact_channels WHERE contact_id = $1", id); n != 0 {
		t.Errorf("the deleted contact left %d channels", n)
	}
	// Its identifiers are free again.
	if r := in.post("/v1/contacts", key, `{"channels":[{"channel":"sms","identifier":"+14155550100"}]}`); r.status != 201 {
		t.Errorf("create with a deleted contact's number = %d %s", r.status, r.raw)
	}
}

func TestContactListFilters(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	create := func(body string) string {
		t.Helper()
		r := in.post("/v1/contacts", key, body)
		if r.status != 201 {
			t.Fatalf("create %s = %d %s", body, r.status, r.raw)
		}
		return r.body["id"].(string)
	}
	ana := create(`{"displayName":"Ana Souza","tags":["vip","chile"],"channels":[{"channel":"sms","identifier":"+56911112222"}]}`)
	bob := create(`{"displayName":"Bob","tags":["vip"],"channels":[{"channel":"email","identifier":"bob@souza.example"}]}`)
	cam := create(`{"displayName":"Cam 100%","channels":[{"channel":"whatsapp","identifier":"+56933334444"},{"channel":"telegram","identifier":"777"}]}`)
	// A contact that an inbound message created: only a profile name and the address it wrote from.
	if in.exec(`INSERT INTO contacts (id, project, test_mode, profile_name, created_at, updated_at)
		VALUES ('ct_inbound0000000000000001', $1, false, 'Dora WA', now(), now())`, acme) != 1 ||
		in.exec(`INSERT INTO contact_channels (id, contact_id, project, test_mode, channel, identifier, is_primary, created_at, updated_at)
		VALUES ('cch_inbound000000000000001', 'ct_inbound0000000000000001', $1, false, 'whatsapp', '+56955556666', true, now(), now())`, acme) != 1 {
		t.Fatal("insert an inbound contact")
	}
	dora := "ct_inbound0000000000000001"

	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", []string{dora, cam, bob, ana}},
		{"?phoneNumber=%2B56911112222", []string{ana}},
		{"?phoneNumber=+56933334444", []string{cam}}, // an unencoded + reads as a space; taken as +
		{"?phoneNumber=%2B56900000000", nil},
		{"?search=SOUZA", []string{bob, ana}},
		{"?search=dora", []string{dora}},
		{"?search=5555", []string{dora}},
		{"?search=777", []string{cam}},
		{"?search=100%25", []string{cam}},
		{"?search=%25", []string{cam}},
		{"?tag=vip", []string{bob, ana}},
		{"?tag=vip,chile", []string{ana}},
		{"?tag=vip&tag=chile", []string{ana}},
		{"?tag=vip&search=bob", []string{bob}},
	} {
		r := in.get("/v1/contacts"+c.query, key)
		if r.status != 200 || !slices.Equal(ids(r), c.want) {
			t.Errorf("GET /v1/contacts%s = %d %v, want %v", c.query, r.status, ids(r), c.want)
		}
	}
	r := in.get("/v1/contacts?search=dora", key)
	if items := r.body["items"].([]any); len(items) == 1 {
		d := items[0].(map[string]any)
		if d["profileName"] != "Dora WA" || d["primaryPhone"] != "+56955556666" || !jsonEqual(d["metadata"], map[string]string{}) || !jsonEqual(d["tags"], []string{}) {
			t.Errorf("inbound contact = %v", d)
		}
	}
	for _, q := range []string{"?tag=vip,nobody", "?tag=nobody&tag=vip"} {
		r := in.get("/v1/contacts"+q, key)
		if r.status != 400 || r.body["code"] != "invalid_request" || !strings.Contains(r.body["message"].(string), `"nobody"`) {
			t.Errorf("unknown tag %s = %d %s", q, r.status, r.raw)
		}
	}
	if r := in.get("/v1/contacts?phoneNumber=555", key); r.status != 400 {
		t.Errorf("a phoneNumber filter that is not E.164 = %d", r.status)
	}

	var seen []string
	cursor := ""
	for page := 0; page < 5; page++ {
		r := in.get("/v1/contacts?limit=3&cursor="+cursor, key)
		seen = append(seen, ids(r)...)
		if cursor, _ = r.body["nextCursor"].(string); cursor == "" {
			break
		}
	}
	if !slices.Equal(seen, []string{dora, cam, bob, ana}) {
		t.Errorf("pages of 3 = %v", seen)
	}
	if r := in.get("/v1/contacts?tag=vip&limit=1", key); len(ids(r)) != 1 || r.body["nextCursor"] == "" {
		t.Errorf("first filtered page = %s", r.raw)
	} else if r2 := in.get("/v1/contacts?tag=vip&limit=1&cursor="+r.body["nextCursor"].(string), key); !slices.Equal(ids(r2), []string{ana}) {
		t.Errorf("second filtered page = %v", ids(r2))
	}
}

func TestContactChannels(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Test)
	r := in.post("/v1/contacts", key, `{"defaultChannel":"email","channels":[{"channel":"sms","identifier":"+14155550100"},{"channel":"email","identifier":"ana@example.com"}]}`)
	if r.status != 201 {
		t.Fatalf("create = %d %s", r.status, r.raw)
	}
	id := r.body["id"].(string)
	base := "/v1/contacts/" + id + "/channels"
	first := channelsOf(t, r.body)["sms:+14155550100"]["id"].(string)
	email := channelsOf(t, r.body)["email:ana@example.com"]["id"].(string)

	r = in.post(base, key, `{"channel":"sms","identifier":"+14155550101","label":"work"}`)
	second, _ := r.body["channel"].(map[string]any)
	if r.status != 201 || second["isPrimary"] != false || second["label"] != "work" {
		t.Fatalf("add a second sms = %d %s", r.status, r.raw)
	}
	r = in.post(base, key, `{"channel":"sms","identifier":"+14155550102","isPrimary":true}`)
	third, _ := r.body["channel"].(map[string]any)
	if r.status != 201 || third["isPrimary"] != true {
		t.Fatalf("add a primary sms = %d %s", r.status, r.raw)
	}
	primaries := func() []string {
		var out []string
		for key, ch := range channelsOf(t, in.get("/v1/contacts/"+id, key).body) {
			if ch["isPrimary"] == true {
				out = append(out, key)
			}
		}
		slices.Sort(out)
		return out
	}
	if got := primaries(); !slices.Equal(got, []string{"email:ana@example.com", "sms:+14155550102"}) {
		t.Errorf("primaries after adding a primary = %v", got)
	}
	r = in.post(base+"/"+first+"/primary", key, "")
	if r.status != 200 || r.body["channel"].(map[string]any)["id"] != first || r.body["channel"].(map[string]any)["isPrimary"] != true {
		t.Errorf("set primary = %d %s", r.status, r.raw)
	}
	if got := primaries(); !slices.Equal(got, []string{"email:ana@example.com", "sms:+14155550100"}) {
		t.Errorf("primaries after POST primary = %v", got)
	}
	if c := in.get("/v1/contacts/"+id, key).body; c["primaryPhone"] != "+14155550100" || c["verified"] != false {
		t.Errorf("contact after POST primary = %v", c)
	}

	r = in.patch(base+"/"+second["id"].(string), key, `{"metadata":{"source":"crm"},"verified":true}`)
	ch, _ := r.body["channel"].(map[string]any)
	if r.status != 200 || ch["label"] != "work" || ch["verified"] != true || !jsonEqual(ch["metadata"], map[string]string{"source": "crm"}) {
		t.Errorf("patch channel = %d %s", r.status, r.raw)
	}
	r = in.patch(base+"/"+second["id"].(string), key, `{"label":null}`)
	if _, has := r.body["channel"].(map[string]any)["label"]; r.status != 200 || has {
		t.Errorf("label null = %d %s", r.status, r.raw)
	}
	if c := in.get("/v1/contacts/"+id, key).body; c["verified"] != true {
		t.Errorf("a contact with a verified channel is not verified: %v", c["verified"])
	}
	if r := in.patch(base+"/"+second["id"].(string), key, `{"label":"`+strings.Repeat("l", 101)+`"}`); r.status != 400 || len(fieldErrors(r)) != 1 {
		t.Errorf("long label = %d %s", r.status, r.raw)
	}

	// The message lifecycle and inbound messages keep the counters; the API shows them.
	if in.exec(`UPDATE contact_channels SET success_count = 7, failure_count = 2, total_attempts = 9, delivered_count = 3,
		total_delivery_ms = 1000, last_success_at = '2030-01-02T03:04:05Z', last_inbound_at = '2030-01-02T03:00:00Z' WHERE id = $1`, first) != 1 {
		t.Fatal("set metrics")
	}
	c := in.get("/v1/contacts/"+id, key).body
	got := channelsOf(t, c)["sms:+14155550100"]
	if !jsonEqual(got["metrics"], map[string]any{"successCount": 7, "failureCount": 2, "totalAttempts": 9, "avgDeliveryTimeMs": 333,
		"lastSuccessAt": "2030-01-02T03:04:05Z"}) || got["lastInboundAt"] != "2030-01-02T03:00:00Z" {
		t.Errorf("metrics = %v, lastInboundAt %v", got["metrics"], got["lastInboundAt"])
	}

	// Removing the primary hands it to the oldest remaining sms channel.
	if r := in.delete(base+"/"+first, key); r.status != 204 {
		t.Errorf("delete channel = %d %s", r.status, r.raw)
	}
	if got := primaries(); !slices.Equal(got, []string{"email:ana@example.com", "sms:+14155550101"}) {
		t.Errorf("primaries after removing the primary = %v", got)
	}
	if r := in.delete(base+"/"+first, key); r.status != 404 {
		t.Errorf("delete a removed channel = %d", r.status)
	}
	// Removing the last channel of the default type clears the default.
	if r := in.delete(base+"/"+email, key); r.status != 204 {
		t.Errorf("delete email = %d", r.status)
	}
	if c := in.get("/v1/contacts/"+id, key).body; c["defaultChannel"] != nil || c["primaryEmail"] != nil {
		t.Errorf("after removing the only email: defaultChannel %v primaryEmail %v", c["defaultChannel"], c["primaryEmail"])
	}

	// An identifier is one contact's: another contact's is refused, v1 without details.
	other := in.post("/v1/contacts", key, `{"channels":[{"channel":"email","identifier":"bob@example.com"}]}`)
	otherID := other.body["id"].(string)
	r = in.post("/v1/contacts/"+otherID+"/channels", key, `{"channel":"sms","identifier":"+14155550101"}`)
	if _, has := r.body["details"]; r.status != 400 || r.body["code"] != "invalid_request" || has {
		t.Errorf("another contact's number on v1 = %d %s", r.status, r.raw)
	}
	// The same number on another channel is another address.
	if r := in.post("/v1/contacts/"+otherID+"/channels", key, `{"channel":"whatsapp","identifier":"+14155550101"}`); r.status != 201 {
		t.Errorf("the number on whatsapp = %d %s", r.status, r.raw)
	}
	if r := in.post(base, key, `{"channel":"sms","identifier":"+14155550101"}`); r.status != 400 || len(fieldErrors(r)) != 1 {
		t.Errorf("a number the contact has = %d %s", r.status, r.raw)
	}
	// A channel through another contact's path is not found.
	if r := in.patch("/v1/contacts/"+otherID+"/channels/"+second["id"].(string), key, `{"verified":false}`); r.status != 404 {
		t.Errorf("patch through another contact = %d", r.status)
	}
	if r := in.post("/v1/contacts/"+otherID+"/channels/"+second["id"].(string)+"/primary", key, ""); r.status != 404 {
		t.Errorf("primary through another contact = %d", r.status)
	}
	if r := in.post("/v1/contacts/ct_nobody/channels", key, `{"channel":"sms","identifier":"+14155550109"}`); r.status != 404 {
		t.Errorf("add to an unknown contact = %d", r.status)
	}
	if r := in.post(base, key, `{"channel":"sms","identifier":"555"}`); r.status != 400 || len(fieldErrors(r)) != 1 {
		t.Errorf("bad identifier = %d %s", r.status, r.raw)
	}
	if n := in.count("SELECT count(*) FROM contact_channels"); n != 4 {
		t.Errorf("%d channels stored, want 4", n)
	}
}

func TestContactMerge(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Test)
	live := newKey(t, in, acme, apikey.Live)
	target := in.post("/v1/contacts", key, `{"displayName":"Ana","metadata":{"plan":"pro"},"tags":["vip"],
		"channels":[{"channel":"sms","identifier":"+14155550100"},{"channel":"email","identifier":"ana@example.com"}]}`).body["id"].(string)
	source := in.post("/v1/contacts", key, `{"displayName":"Ana (WhatsApp)","defaultChannel":"whatsapp","metadata":{"plan":"free","city":"Lima"},"tags":["peru","vip"],
		"channels":[{"channel":"sms","identifier":"+14155550101"},{"channel":"whatsapp","identifier":"+14155550101"},{"channel":"telegram","identifier":"4242"}]}`).body["id"].(string)
	in.exec(`UPDATE contacts SET profile_name = 'ana_wa' WHERE id = $1`, source)
	// The target's address as an inbound email stored it on the source, in its own case; both
	// have delivery counters.
	in.exec(`UPDATE contact_channels SET success_count = 1, total_attempts = 1, delivered_count = 1, total_delivery_ms = 100,
		last_success_at = '2030-01-01T00:00:00Z' WHERE contact_id = $1 AND channel = 'email'`, target)
	in.exec(`INSERT INTO contact_channels (id, contact_id, project, test_mode, channel, identifier, is_primary, verified, success_count,
		failure_count, total_attempts, delivered_count, total_delivery_ms, last_success_at, last_inbound_at, created_at, updated_at)
		VALUES ('cch_inboundmail000000000001', $1, $2, true, 'email', 'Ana@Example.com', true, true, 2, 1, 3, 1, 300,
		'2030-02-01T00:00:00Z', '2030-02-02T00:00:00Z', now(), now())`, source, acme)
	in.exec(`UPDATE contact_channels SET success_count = 4, delivered_count = 2, total_delivery_ms = 900 WHERE contact_id = $1 AND channel = 'whatsapp'`, source)
	in.exec(`INSERT INTO conversations (id, project, test_mode, sender, contact_identifier, contact_id, last_message_id, last_message_at,
		last_message_channel, last_message_direction, created_at, updated_at)
		VALUES ('conv_merge1', $1, true, 'main', '+14155550101', $2, 'msg_1', now(), 'whatsapp', 'inbound', now(), now())`, acme, source)

	for _, c := range []struct {
		body   string
		status int
	}{
		{`{}`, 400},
		{`{"sourceContactId":"` + target + `"}`, 400},
		{`{"sourceContactId":5}`, 400},
		{`{"sourceContactId":"ct_nobody"}`, 404},
	} {
		if r := in.post("/v1/contacts/"+target+"/merge", key, c.body); r.status != c.status {
			t.Errorf("merge %s = %d %s, want %d", c.body, r.status, r.raw, c.status)
		}
	}
	// Another mode's key sees neither contact.
	if r := in.post("/v1/contacts/"+target+"/merge", live, `{"sourceContactId":"`+source+`"}`); r.status != 404 {
		t.Errorf("merge with a live key = %d", r.status)
	}

	r := in.post("/v1/contacts/"+target+"/merge", key, `{"sourceContactId":"`+source+`"}`)
	if r.status != 200 || r.body["id"] != target {
		t.Fatalf("merge = %d %s", r.status, r.raw)
	}
	m := r.body
	chans := channelsOf(t, m)
	if len(chans) != 5 || chans["sms:+14155550100"]["isPrimary"] != true || chans["sms:+14155550101"]["isPrimary"] != false ||
		chans["whatsapp:+14155550101"]["isPrimary"] != true || chans["telegram:4242"]["isPrimary"] != true || chans["email:ana@example.com"]["isPrimary"] != true {
		t.Errorf("merged channels = %v", chans)
	}
	// One address, its metrics summed.
	mail := chans["email:ana@example.com"]
	if !jsonEqual(mail["metrics"], map[string]any{"successCount": 3, "failureCount": 1, "totalAttempts": 4, "avgDeliveryTimeMs": 200,
		"lastSuccessAt": "2030-02-01T00:00:00Z"}) || mail["lastInboundAt"] != "2030-02-02T00:00:00Z" || mail["verified"] != true {
		t.Errorf("folded email channel = %v", mail)
	}
	if !jsonEqual(chans["whatsapp:+14155550101"]["metrics"], map[string]int{"successCount": 4, "failureCount": 0, "totalAttempts": 0, "avgDeliveryTimeMs": 450}) {
		t.Errorf("moved metrics = %v", chans["whatsapp:+14155550101"]["metrics"])
	}
	if m["displayName"] != "Ana" || m["profileName"] != "ana_wa" || m["defaultChannel"] != "whatsapp" || m["primaryPhone"] != "+14155550100" ||
		!jsonEqual(m["metadata"], map[string]string{"plan": "pro", "city": "Lima"}) || !jsonEqual(m["tags"], []string{"vip", "peru"}) {
		t.Errorf("merged contact = %s", r.raw)
	}
	if r := in.get("/v1/contacts/"+source, key); r.status != 404 {
		t.Errorf("the source after the merge = %d", r.status)
	}
	if n := in.count("SELECT count(*) FROM conversations WHERE id = 'conv_merge1' AND contact_id = $1", target); n != 1 {
		t.Error("the source's conversation did not move to the target")
	}
	if r := in.get("/v1/contacts/"+target, key); !jsonEqual(r.body, m) {
		t.Errorf("get after merge = %s, want the merge's answer", r.raw)
	}
	if r := in.post("/v1/contacts/"+target+"/merge", key, `{"sourceContactId":"`+source+`"}`); r.status != 404 {
		t.Errorf("merging a merged contact again = %d", r.status)
	}
}

func TestContactsV2(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Test)
	r := in.post("/v2/contacts", key, `{"displayName":"Ana","tags":["vip"],"channels":[{"channel":"sms","identifier":"+14155550100"},{"channel":"email","identifier":"ana@example.com"}]}`)
	if r.status != 201 || !strings.HasPrefix(r.body["id"].(string), "ct_") || r.body["primaryPhone"] != "+14155550100" {
		t.Fatalf("v2 create = %d %s", r.status, r.raw)
	}
	ana := r.body["id"].(string)
	if r1, r2 := in.get("/v1/contacts/"+ana, key), in.get("/v2/contacts/"+ana, key); r1.status != 200 || !jsonEqual(r1.body, r2.body) {
		t.Errorf("v1 and v2 read the contact differently: %s / %s", r1.raw, r2.raw)
	}

	// The second channel is another contact's: duplicate_identifier naming it, and nothing stored.
	r = in.post("/v2/contacts", key, `{"channels":[{"channel":"telegram","identifier":"42"},{"channel":"email","identifier":"ANA@example.com"},{"channel":"sms","identifier":"+14155550100"}]}`)
	want := []map[string]string{{"channel": "email", "identifier": "ana@example.com", "contactId": ana}, {"channel": "sms", "identifier": "+14155550100", "contactId": ana}}
	if details, _ := r.body["details"].(map[string]any); r.status != 400 || r.body["code"] != "duplicate_identifier" || !jsonEqual(details["conflicts"], want) {
		t.Errorf("v2 duplicate = %d %s", r.status, r.raw)
	}
	// v1 answers the same request with a plain invalid_request.
	r = in.post("/v1/contacts", key, `{"channels":[{"channel":"telegram","identifier":"42"},{"channel":"sms","identifier":"+14155550100"}]}`)
	if _, has := r.body["details"]; r.status != 400 || r.body["code"] != "invalid_request" || has {
		t.Errorf("v1 duplicate = %d %s", r.status, r.raw)
	}
	if n := in.count("SELECT count(*) FROM contacts"); n != 1 {
		t.Errorf("refused creates stored contacts: %d, want 1", n)
	}
	if n := in.count("SELECT count(*) FROM contact_channels WHERE channel = 'telegram'"); n != 0 {
		t.Errorf("a refused create stored its first channel")
	}

	r = in.post("/v2/contacts", key, `{"channels":[{"channel":"sms","identifier":"555"}],"displayName":7}`)
	if r.status != 400 || r.body["code"] != "invalid_request" || len(fieldErrors(r)) != 1 {
		t.Errorf("v2 wrong type = %d %s", r.status, r.raw)
	}
	r = in.post("/v2/contacts", key, `{"channels":[{"channel":"sms","identifier":"555"}]}`)
	if errs := fieldErrors(r); r.status != 400 || len(errs) != 1 || errs[0].(map[string]any)["path"] != "channels[0].identifier" {
		t.Errorf("v2 bad identifier = %d %s", r.status, r.raw)
	}
	if r := in.post("/v2/contacts", key, `[]`); r.status != 400 || len(fieldErrors(r)) != 1 {
		t.Errorf("v2 array body = %d %s", r.status, r.raw)
	}
	if r := in.post("/v2/contacts", key, `{"channels":`); r.status != 400 || r.body["code"] != "invalid_json" {
		t.Errorf("v2 broken JSON = %d %s", r.status, r.raw)
	}

	r = in.patch("/v2/contacts/"+ana, key, `{"displayName":"Ana Souza","tags":null}`)
	if r.status != 200 || r.body["displayName"] != "Ana Souza" || !jsonEqual(r.body["tags"], []string{}) {
		t.Errorf("v2 patch = %d %s", r.status, r.raw)
	}
	if r := in.patch("/v2/contacts/"+ana, key, `{"defaultChannel":"fax"}`); r.status != 400 || len(fieldErrors(r)) != 1 {
		t.Errorf("v2 patch bad default = %d %s", r.status, r.raw)
	}
	if r := in.get("/v2/contacts?tag=vip", key); r.status != 400 || len(fieldErrors(r)) != 1 {
		t.Errorf("v2 unknown tag = %d %s", r.status, r.raw)
	}
	if r := in.get("/v2/contacts?search=souza", key); r.status != 200 || !slices.Equal(ids(r), []string{ana}) {
		t.Errorf("v2 list = %d %s", r.status, r.raw)
	}
	if r := in.delete("/v2/contacts/"+ana, key); r.status != 204 {
		t.Errorf("v2 delete = %d", r.status)
	}
	if r := in.delete("/v2/contacts/"+ana, key); r.status != 404 || r.body["code"] != "not_found" {
		t.Errorf("v2 second delete = %d %s", r.status, r.raw)
	}
	if r := in.do("PUT", "/v2/contacts/"+ana, key, nil); r.status != 405 || r.header.Get("Allow") != "GET, PATCH, DELETE" {
		t.Errorf("PUT /v2/contacts/{id} = %d (Allow %q)", r.status, r.header.Get("Allow"))
	}
}

func TestContactRoutesAnswerWrongMethods(t *testing.T) {
	in := start(t)
	key := newKey(t, in, newProject(t, in, v1alpha1.ProjectSpec{}), apikey.Test)
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/v1/contacts/ct_x/merge", "POST"},
		{"DELETE", "/v1/contacts/phone/+14155550100", "GET"},
		{"GET", "/v1/contacts/ct_x/channels", "POST"},
		{"GET", "/v1/contacts/ct_x/channels/cch_y", "PATCH, DELETE"},
		{"PUT", "/v1/contacts", "POST, GET"},
	} {
		r := in.do(c.method, c.path, key, nil)
		if r.status != 405 || r.body["code"] != "method_not_allowed" || r.header.Get("Allow") != c.allow {
			t.Errorf("%s %s = %d %v (Allow %q), want 405 (Allow %q)", c.method, c.path, r.status, r.body, r.header.Get("Allow"), c.allow)
		}
	}
	if r := in.get("/v1/contacts/ct_x/nothing", key); r.status != 404 {
		t.Errorf("GET an unknown contact path = %d", r.status)
	}
}

func TestContactsAreApartByProjectAndMode(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	rival := newProject(t, in, v1alpha1.ProjectSpec{})
	testKey := newKey(t, in, acme, apikey.Test)
	liveKey := newKey(t, in, acme, apikey.Live)
	rivalKey := newKey(t, in, rival, apikey.Test)
	reader := newKey(t, in, acme, apikey.Test, "contacts:read")
	sender := newKey(t, in, acme, apikey.Test, "messages:send")

	body := `{"channels":[{"channel":"sms","identifier":"+14155550100"}]}`
	r := in.post("/v1/contacts", testKey, body)
	id := r.body["id"].(string)
	chID := r.body["channels"].([]any)[0].(map[string]any)["id"].(string)
	for name, key := range map[string]string{"live": liveKey, "rival": rivalKey} {
		for _, req := range []struct{ method, path, body string }{
			{"GET", "/v1/contacts/" + id, ""},
			{"GET", "/v2/contacts/" + id, ""},
			{"GET", "/v1/contacts/phone/+14155550100", ""},
			{"PATCH", "/v1/contacts/" + id, `{"displayName":"x"}`},
			{"DELETE", "/v1/contacts/" + id, ""},
			{"POST", "/v1/contacts/" + id + "/channels", `{"channel":"email","identifier":"x@example.com"}`},
			{"PATCH", "/v1/contacts/" + id + "/channels/" + chID, `{"verified":true}`},
			{"POST", "/v1/contacts/" + id + "/channels/" + chID + "/primary", ""},
			{"DELETE", "/v1/contacts/" + id + "/channels/" + chID, ""},
		} {
			var r response
			if req.body != "" {
				r = in.do(req.method, req.path, key, strings.NewReader(req.body))
			} else {
				r = in.do(req.method, req.path, key, nil)
			}
			if r.status != 404 {
				t.Errorf("%s key: %s %s = %d, want 404", name, req.method, req.path, r.status)
			}
		}
		if r := in.get("/v1/contacts", key); len(ids(r)) != 0 {
			t.Errorf("%s key lists %v", name, ids(r))
		}
		// The number is free in the other mode and the other project.
		if r := in.post("/v1/contacts", key, body); r.status != 201 {
			t.Errorf("%s key creates the same number: %d %s", name, r.status, r.raw)
		}
	}
	if r := in.get("/v1/contacts", testKey); !slices.Equal(ids(r), []string{id}) {
		t.Errorf("the test key lists %v", ids(r))
	}

	if r := in.get("/v1/contacts/"+id, reader); r.status != 200 {
		t.Errorf("contacts:read reads: %d", r.status)
	}
	for _, req := range []struct{ method, path, key string }{
		{"POST", "/v1/contacts", reader},
		{"PATCH", "/v1/contacts/" + id, reader},
		{"DELETE", "/v2/contacts/" + id, reader},
		{"POST", "/v1/contacts/" + id + "/channels/" + chID + "/primary", reader},
		{"GET", "/v1/contacts", sender},
		{"GET", "/v2/contacts/" + id, sender},
	} {
		if r := in.do(req.method, req.path, req.key, strings.NewReader(body)); r.status != 403 || r.body["code"] != "forbidden" {
			t.Errorf("%s %s without the permission = %d", req.method, req.path, r.status)
		}
	}
	if n := in.count("SELECT count(*) FROM contacts"); n != 3 {
		t.Errorf("%d contacts stored, want 3", n)
	}
}

func TestBadContactRequestsChangeNothing(t *testing.T) {
	in := start(t)
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Test)
	held := in.post("/v1/contacts", key, `{"channels":[{"channel":"email","identifier":"held@example.com"}]}`)
	if held.status != 201 {
		t.Fatalf("create = %d %s", held.status, held.raw)
	}
	id := held.body["id"].(string)
	for name, c := range map[string]struct {
		body   string
		code   string
		fields int
	}{
		"not JSON":           {`channels=1`, "invalid_json", 0},
		"no body":            {``, "invalid_request", 1},
		"no channels":        {`{"displayName":"Ana"}`, "invalid_request", 1},
		"empty channels":     {`{"channels":[]}`, "invalid_request", 1},
		"channels not array": {`{"channels":{}}`, "invalid_request", 1},
		"unknown channel":    {`{"channels":[{"channel":"fax","identifier":"1"}]}`, "invalid_request", 1},
		"phone not E.164":    {`{"channels":[{"channel":"sms","identifier":"4155550100"}]}`, "invalid_request", 1},
		"voice email":        {`{"channels":[{"channel":"voice","identifier":"a@example.com"}]}`, "invalid_request", 1},
		"telegram handle":    {`{"channels":[{"channel":"telegram","identifier":"@ana"}]}`, "invalid_request", 1},
		"repeated":           {`{"channels":[{"channel":"sms","identifier":"+14155550100"},{"channel":"sms","identifier":"+14155550100"}]}`, "invalid_request", 1},
		"metadata numbers":   {`{"channels":[{"channel":"sms","identifier":"+14155550100"}],"metadata":{"a":1}}`, "invalid_request", 1},
		"everything":         {`{"channels":[{"channel":"sms","identifier":"1"},{"channel":"email"}],"displayName":"` + strings.Repeat("n", 257) + `","tags":["a,b"]}`, "invalid_request", 4},
		"held identifier":    {`{"channels":[{"channel":"sms","identifier":"+14155550100"},{"channel":"email","identifier":"held@example.com"}]}`, "duplicate_identifier", 0},
	} {
		r := in.post("/v2/contacts", key, c.body)
		if r.status != 400 || r.body["code"] != c.code || len(fieldErrors(r)) != c.fields {
			t.Errorf("%s: %d %s, want 400 %s with %d field errors", name, r.status, r.raw, c.code, c.fields)
		}
		if r := in.post("/v1/contacts", key, c.body); r.status != 400 {
			t.Errorf("%s on v1: %d %s", name, r.status, r.raw)
		}
	}
	for name, body := range map[string]string{
		"display name":  `{"displayName":"` + strings.Repeat("n", 257) + `"}`,
		"tags":          `{"tags":[""]}`,
		"tags type":     `{"tags":"vip"}`,
		"default":       `{"defaultChannel":"sms"}`,
		"metadata size": `{"metadata":{"k":"` + strings.Repeat("v", 501) + `"}}`,
	} {
		if r := in.patch("/v1/contacts/"+id, key, body); r.status != 400 {
			t.Errorf("patch %s: %d %s", name, r.status, r.raw)
		}
	}
	if n := in.count("SELECT count(*) FROM contacts"); n != 1 {
		t.Errorf("bad requests stored %d contacts, want 1", n)
	}
	if n := in.count("SELECT count(*) FROM contact_channels"); n != 1 {
		t.Errorf("bad requests stored %d channels, want 1", n)
	}
	if r := in.get("/v1/contacts/"+id, key); !jsonEqual(r.body, held.body) {
		t.Errorf("bad patches changed the contact: %s", r.raw)
	}
}

func TestConcurrentCreatesOfOneIdentifierLetOneWin(t *testing.T) {
	in := start(t)
	key := newKey(t, in, newProject(t, in, v1alpha1.ProjectSpec{}), apikey.Test)
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			statuses[i] = in.post("/v2/contacts", key, fmt.Sprintf(`{"displayName":"n%d","channels":[{"channel":"email","identifier":"race%d@example.com"},{"channel":"sms","identifier":"+14155550100"}]}`, i, i)).status
		}(i)
	}
	wg.Wait()
	created, refused := 0, 0
	for _, s := range statuses {
		switch s {
		case 201:
			created++
		case 400:
			refused++
		}
	}
	if created != 1 || refused != n-1 {
		t.Errorf("statuses = %v, want one 201 and the rest 400", statuses)
	}
	if c := in.count("SELECT count(*) FROM contacts"); c != 1 {
		t.Errorf("%d contacts stored, want 1", c)
	}
	if c := in.count("SELECT count(*) FROM contact_channels"); c != 2 {
		t.Errorf("%d channels stored, want 2", c)
	}
}
