package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
)

func TestSenderLifecycle(t *testing.T) {
	in := start(t)
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)

	r := in.post("/v1/senders", key, `{"name":"Support","phoneNumber":"+15005550006","enableSmsOneway":true,
		"webhookUrl":"https://hooks.acme.example/sb","webhookEvents":["message.delivered","message.failed"],"setAsDefault":true}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	id := r.body["id"].(string)
	hook := r.body["webhook"].(map[string]any)
	// A phone number alone enables nothing; one-way SMS is on at once; a new webhook signs with v2.
	if fmt.Sprint(r.body["channels"]) != "[sms_oneway]" || r.body["isDefault"] != true || hook["signatureVersion"] != "v2" ||
		!strings.HasPrefix(fmt.Sprint(hook["secret"]), "whsec_") || hook["active"] != true {
		t.Fatalf("create = %v", r.body)
	}
	secret := hook["secret"].(string)

	// The same object through kubectl: the secret the API showed is the one in the Secret.
	var s corev1.Secret
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id + "-webhook"}, &s); err != nil || string(s.Data["secret"]) != secret {
		t.Fatalf("webhook Secret: %v %q", err, s.Data["secret"])
	}
	var snd v1alpha1.Sender
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id}, &snd); err != nil {
		t.Fatal(err)
	}
	managers := map[string]bool{}
	for _, f := range snd.ManagedFields {
		managers[f.Manager] = true
	}
	if !managers["switchboard-api"] {
		t.Errorf("managed fields %v: the API must write as switchboard-api", managers)
	}

	// Reads, once the cache has it.
	waitFor(t, func() bool { return in.get("/v1/senders/"+id, key).status == 200 })
	if r := in.get("/v1/senders", key); len(r.body["items"].([]any)) != 1 {
		t.Errorf("list = %v", r.body)
	}

	// Secrets are never read back.
	if r := in.get("/v1/senders/"+id, key); r.body["webhook"].(map[string]any)["secret"] != nil {
		t.Errorf("GET shows the secret: %v", r.body)
	}

	// Activate SMS on the number, enable voice.
	r = in.post("/v1/senders/"+id+"/channels/sms/activate", key, "")
	if r.status != 200 || fmt.Sprint(r.body["channels"]) != "[sms sms_oneway]" {
		t.Fatalf("activate sms = %d %v", r.status, r.body)
	}
	r = in.do("PATCH", "/v1/senders/"+id, key, strings.NewReader(`{"enableVoice":true,"name":"Support desk"}`))
	if r.status != 200 || fmt.Sprint(r.body["channels"]) != "[sms sms_oneway voice]" || r.body["name"] != "Support desk" {
		t.Fatalf("patch = %d %v", r.status, r.body)
	}
	// Receiving asked of a sender with no email address is ignored (spec: without a verified
	// inbound MX the request is ignored and the response shows false), and makes no email channel.
	r = in.do("PATCH", "/v1/senders/"+id, key, strings.NewReader(`{"emailReceivingEnabled":true}`))
	if r.status != 200 || r.body["emailReceivingEnabled"] != false || r.body["emailAddress"] != nil {
		t.Fatalf("receiving without an address = %d %v", r.status, r.body)
	}

	// Signature versions move one step at a time; a jump is refused and changes nothing.
	r = in.do("PATCH", "/v1/senders/"+id, key, strings.NewReader(`{"webhookSignatureVersion":"v1"}`))
	if r.status != 400 || r.body["code"] != "invalid_request" {
		t.Fatalf("v2 → v1 = %d %v", r.status, r.body)
	}
	for _, v := range []string{"v1+v2", "v1", "v1+v2", "v2"} {
		if r := in.do("PATCH", "/v1/senders/"+id, key, strings.NewReader(`{"webhookSignatureVersion":"`+v+`"}`)); r.status != 200 {
			t.Fatalf("→ %s = %d %v", v, r.status, r.body)
		}
	}

	// Rotation: a new secret, in the Secret at once.
	r = in.post("/v1/senders/"+id+"/webhook/secret", key, "")
	rotated, _ := r.body["secret"].(string)
	if r.status != 200 || !strings.HasPrefix(rotated, "whsec_") || rotated == secret {
		t.Fatalf("rotate = %d %v", r.status, r.body)
	}
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id + "-webhook"}, &s); err != nil || string(s.Data["secret"]) != rotated {
		t.Fatalf("rotated Secret: %v", err)
	}

	// null removes the webhook, and its Secret at once.
	r = in.do("PATCH", "/v1/senders/"+id, key, strings.NewReader(`{"webhookUrl":null}`))
	if r.status != 200 || r.body["webhook"] != nil {
		t.Fatalf("remove webhook = %d %v", r.status, r.body)
	}
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id + "-webhook"}, &s); err == nil {
		t.Fatalf("the removed webhook's Secret is still there")
	}
	// A webhook added by a PATCH shows its secret in that answer only.
	r = in.do("PATCH", "/v1/senders/"+id, key, strings.NewReader(`{"webhookUrl":"https://hooks.acme.example/again"}`))
	if wh, _ := r.body["webhook"].(map[string]any); r.status != 200 || !strings.HasPrefix(fmt.Sprint(wh["secret"]), "whsec_") {
		t.Fatalf("add webhook = %d %v", r.status, r.body)
	} else if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id + "-webhook"}, &s); err != nil || string(s.Data["secret"]) != wh["secret"] {
		t.Fatalf("the secret shown is not the one in use: %v", err)
	}
	r = in.do("PATCH", "/v1/senders/"+id, key, strings.NewReader(`{"webhookActive":false}`))
	if wh, _ := r.body["webhook"].(map[string]any); r.status != 200 || wh["secret"] != nil || wh["active"] != false {
		t.Fatalf("later PATCH = %d %v", r.status, r.body)
	}
	r = in.do("PATCH", "/v1/senders/"+id, key, strings.NewReader(`{"webhookUrl":null}`))
	if r.status != 200 || r.body["webhook"] != nil {
		t.Fatalf("remove webhook again = %d %v", r.status, r.body)
	}

	// A second default takes over; the first stops being it.
	r = in.post("/v1/senders", key, `{"name":"Marketing","setAsDefault":true,"webhookUrl":"https://hooks.acme.example/m"}`)
	second := r.body["id"].(string)
	if r.status != 201 || r.body["isDefault"] != true {
		t.Fatalf("second default = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool { return in.get("/v1/senders/"+id, key).body["isDefault"] == false })

	for _, gone := range []string{id, second} {
		if r := in.do("DELETE", "/v1/senders/"+gone, key, nil); r.status != 204 {
			t.Fatalf("delete = %d", r.status)
		}
		waitFor(t, func() bool { return in.get("/v1/senders/"+gone, key).status == 404 })
	}
	if r := in.do("DELETE", "/v1/senders/"+id, key, nil); r.status != 404 {
		t.Errorf("second delete = %d, want 404", r.status)
	}
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: second + "-webhook"}, &s); err == nil {
		t.Errorf("the sender's webhook Secret outlived it")
	}
}

func TestSenderBadInputChangesNothing(t *testing.T) {
	in := start(t)
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	rival := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	rivalKey := newKey(t, in, rival, apikey.Live)
	narrow := newKey(t, in, acme, apikey.Live, "messages:send")

	r := in.post("/v1/senders", key, `{"name":"Support","webhookUrl":"https://hooks.acme.example/sb","webhookSignatureVersion":"v1"}`)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	id := r.body["id"].(string)
	waitFor(t, func() bool { return in.get("/v1/senders/"+id, key).status == 200 })
	var before v1alpha1.Sender
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id}, &before); err != nil {
		t.Fatal(err)
	}

	for name, c := range map[string]struct {
		method, body string
		fields       int
	}{
		"v1 straight to v2":   {"PATCH", `{"webhookSignatureVersion":"v2"}`, 1},
		"unknown version":     {"PATCH", `{"webhookSignatureVersion":"v3"}`, 1},
		"unknown events":      {"PATCH", `{"webhookEvents":["message.delivered","message.exploded","nope"]}`, 2},
		"voice without phone": {"PATCH", `{"enableVoice":true}`, 1},
		"bad url and name":    {"PATCH", `{"webhookUrl":"ftp://x","name":""}`, 2},
		"plain http":          {"PATCH", `{"webhookUrl":"http://hooks.acme.example/sb"}`, 1},
		"bad phone and email": {"PATCH", `{"phoneNumber":"555-1234","emailAddress":"nope"}`, 2},
		"long from-name":      {"PATCH", `{"emailAddress":"a@acme.example","emailFromName":"` + strings.Repeat("n", 101) + `"}`, 1},
		"wrong types":         {"PATCH", `{"name":1,"enableVoice":"yes","webhookEvents":"message.sent"}`, 3},
	} {
		r := in.do(c.method, "/v1/senders/"+id, key, strings.NewReader(c.body))
		errs := fieldErrors(r)
		if r.status != 400 || r.body["code"] != "invalid_request" || len(errs) != c.fields {
			t.Errorf("%s: %d %v, want 400 with %d field errors", name, r.status, r.body, c.fields)
		}
	}
	for name, c := range map[string]struct {
		req    func() response
		status int
	}{
		"another project's PATCH": {func() response {
			return in.do("PATCH", "/v1/senders/"+id, rivalKey, strings.NewReader(`{"name":"mine"}`))
		}, 404},
		"another project's rotate": {func() response { return in.post("/v1/senders/"+id+"/webhook/secret", rivalKey, "") }, 404},
		"another project's delete": {func() response { return in.do("DELETE", "/v1/senders/"+id, rivalKey, nil) }, 404},
		"another project's GET":    {func() response { return in.get("/v1/senders/"+id, rivalKey) }, 404},
		"a narrow key's PATCH":     {func() response { return in.do("PATCH", "/v1/senders/"+id, narrow, strings.NewReader(`{"name":"x"}`)) }, 403},
		"activate unconnected":     {func() response { return in.post("/v1/senders/"+id+"/channels/whatsapp/activate", key, "") }, 400},
		"activate sms, no number":  {func() response { return in.post("/v1/senders/"+id+"/channels/sms/activate", key, "") }, 400},
		"activate unknown channel": {func() response { return in.post("/v1/senders/"+id+"/channels/fax/activate", key, "") }, 400},
	} {
		if r := c.req(); r.status != c.status {
			t.Errorf("%s: %d %v, want %d", name, r.status, r.body, c.status)
		}
	}
	if r := in.get("/v1/senders/"+id, narrow); r.status != 200 {
		t.Errorf("a narrow key reads senders: %d", r.status)
	}

	var after v1alpha1.Sender
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: id}, &after); err != nil {
		t.Fatal(err)
	}
	if after.Generation != before.Generation || after.Spec.Webhook.SignatureVersion != v1alpha1.SignatureV1 {
		t.Errorf("bad requests changed the sender: generation %d → %d, spec %+v", before.Generation, after.Generation, after.Spec)
	}
}

func TestWhatsAppBusinessProfile(t *testing.T) {
	in := start(t, deliveringTo(nil))
	ctx := context.Background()
	acme := newProject(t, in, v1alpha1.ProjectSpec{})
	rival := newProject(t, in, v1alpha1.ProjectSpec{})
	key := newKey(t, in, acme, apikey.Live)
	rivalKey := newKey(t, in, rival, apikey.Live)

	// A sender with a connected business account, as an invitation (or kubectl) makes it.
	wa := &v1alpha1.Sender{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "wa"}, Spec: v1alpha1.SenderSpec{
		DisplayName: "WhatsApp", WhatsApp: &v1alpha1.ConnectedAccount{AccountID: "1234567890", DisplayPhoneNumber: "+1 500-555-0006", Active: true}}}
	if err := in.k8s.Create(ctx, wa); err != nil {
		t.Fatal(err)
	}
	plain := in.post("/v1/senders", key, `{"name":"No WhatsApp"}`).body["id"].(string)
	waitFor(t, func() bool {
		return in.get("/v1/senders/wa", key).status == 200 && in.get("/v1/senders/"+plain, key).status == 200
	})

	r := in.do("PATCH", "/v1/senders/wa/profile", key, strings.NewReader(
		`{"about":"We answer fast","websites":["https://acme.example","https://shop.acme.example"],"vertical":"RETAIL","email":"help@acme.example"}`))
	p, _ := r.body["profile"].(map[string]any)
	if r.status != 200 || r.body["success"] != true || p["about"] != "We answer fast" || p["vertical"] != "RETAIL" || len(p["websites"].([]any)) != 2 {
		t.Fatalf("PATCH profile = %d %v", r.status, r.body)
	}
	waitFor(t, func() bool {
		return in.get("/v1/senders/wa/profile", key).body["profile"].(map[string]any)["about"] == "We answer fast"
	})

	var before v1alpha1.Sender
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "wa"}, &before); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		path, body string
		key        string
		status     int
		fields     int
	}{
		"about of 140":        {"/v1/senders/wa/profile", `{"about":"` + strings.Repeat("a", 140) + `"}`, key, 400, 1},
		"three websites":      {"/v1/senders/wa/profile", `{"websites":["https://a.example","https://b.example","https://c.example"]}`, key, 400, 1},
		"unknown vertical":    {"/v1/senders/wa/profile", `{"vertical":"SPACESHIPS"}`, key, 400, 1},
		"all at once":         {"/v1/senders/wa/profile", `{"about":"` + strings.Repeat("a", 140) + `","address":"` + strings.Repeat("b", 257) + `","description":"` + strings.Repeat("c", 513) + `","email":"nope","websites":["ftp://x"],"vertical":"X"}`, key, 400, 6},
		"no business account": {"/v1/senders/" + plain + "/profile", `{"about":"hi"}`, key, 400, 1},
		"another project":     {"/v1/senders/wa/profile", `{"about":"mine"}`, rivalKey, 404, 0},
	} {
		r := in.do("PATCH", c.path, c.key, strings.NewReader(c.body))
		errs := fieldErrors(r)
		if r.status != c.status || len(errs) != c.fields {
			t.Errorf("%s: %d %v, want %d with %d field errors", name, r.status, r.body, c.status, c.fields)
		}
	}
	if r := in.get("/v1/senders/"+plain+"/profile", key); r.status != 400 {
		t.Errorf("GET profile without a business account = %d", r.status)
	}
	pictures := pictureServer(t)
	for name, c := range map[string]struct{ path, body, key string }{
		"no business account": {"/v1/senders/" + plain + "/profile/picture", `{"imageUrl":"` + pictures.URL + `/logo.png","mimeType":"image/png"}`, key},
		"another project":     {"/v1/senders/wa/profile/picture", `{"imageUrl":"` + pictures.URL + `/logo.png","mimeType":"image/png"}`, rivalKey},
		"too small":           {"/v1/senders/wa/profile/picture", `{"imageUrl":"` + pictures.URL + `/tiny.png","mimeType":"image/png"}`, key},
		"no fields":           {"/v1/senders/wa/profile/picture", `{}`, key},
	} {
		if r := in.do("POST", c.path, c.key, strings.NewReader(c.body)); r.status != 400 && r.status != 404 {
			t.Errorf("picture, %s: %d %v", name, r.status, r.body)
		}
	}
	var after v1alpha1.Sender
	if err := in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "wa"}, &after); err != nil || after.Generation != before.Generation {
		t.Errorf("bad profile updates changed the sender (generation %d → %d)", before.Generation, after.Generation)
	}

	// On the sandbox the profile keeps the URL of the picture it was given.
	r = in.do("POST", "/v1/senders/wa/profile/picture", key, strings.NewReader(`{"imageUrl":"`+pictures.URL+`/logo.png","mimeType":"image/png"}`))
	if p, _ := r.body["profile"].(map[string]any); r.status != 200 || p["profilePictureUrl"] != pictures.URL+"/logo.png" || p["about"] != "We answer fast" {
		t.Fatalf("picture on the sandbox = %d %v", r.status, r.body)
	}
}
