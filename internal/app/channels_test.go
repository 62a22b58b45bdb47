package app_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

func TestV2Channels(t *testing.T) {
	dnsServer := newDNS(t)
	in := start(t, withDNS(dnsServer))
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	rival := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	rivalKey := newKey(t, in, rival, apikey.Live)

	// A sender with a number (sms on), a connected but inactive WhatsApp and a Telegram bot.
	snd := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "main"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "Main", PhoneNumber: "+15005550006", SMS: &v1alpha1.Activation{Active: true},
		WhatsApp: &v1alpha1.ConnectedAccount{AccountID: "wa-1", DisplayPhoneNumber: "+1 500-555-0007"},
		Telegram: &v1alpha1.ConnectedAccount{AccountID: "123", DisplayName: "acme_bot", Active: true},
	}}
	if err := in.k8s.Create(ctx, snd); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(in.get("/v2/channels", key).body["items"].([]any)) == 3 })
	r := in.get("/v2/channels", key)
	got := []string{}
	for _, it := range r.body["items"].([]any) {
		e := it.(map[string]any)
		got = append(got, e["type"].(string)+"@"+e["address"].(string)+"="+map[bool]string{true: "on", false: "off"}[e["active"].(bool)])
		if e["v1SenderId"] != "main" {
			t.Errorf("entry %v: v1SenderId", e)
		}
	}
	if strings.Join(got, " ") != "sms@+15005550006=on whatsapp@+15005550007=off telegram@@acme_bot=on" {
		t.Fatalf("channels = %v", got)
	}

	// Activate the WhatsApp account; deactivate SMS; the number keeps its channel entry.
	r = in.post("/v2/channels/"+url.PathEscape("+15005550007")+"/whatsapp/activate", key, "")
	if r.status != 200 || r.body["channel"].(map[string]any)["active"] != true {
		t.Fatalf("activate = %d %v", r.status, r.body)
	}
	r = in.post("/v2/channels/+15005550006/sms/deactivate", key, "")
	if r.status != 200 || r.body["channel"].(map[string]any)["active"] != false {
		t.Fatalf("deactivate = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		r := in.get("/v2/channels/+15005550006", key)
		return r.status == 200 && len(r.body["channels"].([]any)) == 1 && r.body["channels"].([]any)[0].(map[string]any)["active"] == false
	})

	// Detach the Telegram bot.
	if r := in.do("DELETE", "/v2/channels/@acme_bot/telegram", key, nil); r.status != 204 {
		t.Fatalf("remove telegram = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { return in.get("/v2/channels/@acme_bot", key).status == 404 })

	// New addresses: email (its domain verified first), and one-way SMS without a number.
	if r := in.post("/v2/channels", key, `{"type":"email","address":"news@acme.example","name":"News"}`); r.status != 400 || fieldErrors(r)[0].(map[string]any)["path"] != "address" {
		t.Fatalf("create email on an unverified domain = %d %v", r.status, r.body)
	}
	verifiedDomain(t, in, dnsServer, key, "acme.example", false)
	r = in.post("/v2/channels", key, `{"type":"email","address":"news@acme.example","name":"News"}`)
	if c, _ := r.body["channel"].(map[string]any); r.status != 201 || c["address"] != "news@acme.example" || c["active"] != true || c["type"] != "email" {
		t.Fatalf("create email = %d %v", r.status, r.body)
	}
	r = in.post("/v2/channels", key, `{"type":"sms_oneway"}`)
	if c, _ := r.body["channel"].(map[string]any); r.status != 201 || c["active"] != true || c["address"] != c["v1SenderId"] {
		t.Fatalf("create one-way = %d %v", r.status, r.body)
	}

	// Pages of one walk every entry once.
	waitFor(t, func() bool { return len(in.get("/v2/channels", key).body["items"].([]any)) == 4 })
	seen, cursor := 0, ""
	for i := 0; i < 10; i++ {
		r := in.get("/v2/channels?limit=1&cursor="+cursor, key)
		seen += len(r.body["items"].([]any))
		if cursor, _ = r.body["nextCursor"].(string); cursor == "" {
			break
		}
	}
	if seen != 4 {
		t.Errorf("pages held %d entries, want 4", seen)
	}

	// Bad input and other projects.
	for name, c := range map[string]struct {
		do     func() response
		status int
	}{
		"unknown address":         {func() response { return in.get("/v2/channels/+19999999999", key) }, 404},
		"another project's":       {func() response { return in.get("/v2/channels/+15005550006", rivalKey) }, 404},
		"another project's write": {func() response { return in.post("/v2/channels/+15005550006/sms/activate", rivalKey, "") }, 404},
		"type not at the address": {func() response { return in.post("/v2/channels/+15005550006/voice/activate", key, "") }, 404},
		"remove sms":              {func() response { return in.do("DELETE", "/v2/channels/+15005550006/sms", key, nil) }, 400},
		"create whatsapp":         {func() response { return in.post("/v2/channels", key, `{"type":"whatsapp","address":"+15005550008"}`) }, 400},
		"create bad email":        {func() response { return in.post("/v2/channels", key, `{"type":"email","address":"nope"}`) }, 400},
		"create without type":     {func() response { return in.post("/v2/channels", key, `{}`) }, 400},
		"wrong method":            {func() response { return in.do("PUT", "/v2/channels", key, nil) }, 405},
	} {
		if r := c.do(); r.status != c.status {
			t.Errorf("%s: %d %v, want %d", name, r.status, r.body, c.status)
		} else if r.status == 400 && len(fieldErrors(r)) == 0 {
			t.Errorf("%s: v2 400 without details.errors: %v", name, r.body)
		}
	}
}
