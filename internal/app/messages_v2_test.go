package app_test

import (
	"testing"

	"github.com/switchboard-io/switchboard/internal/apikey"
)

func TestSendV2(t *testing.T) {
	in := start(t, fastSandbox)
	_, key := sendingProject(t, in, nil, apikey.Test) // sms, email and whatsapp on, at +15005550006

	// From an address; a number written with spaces and dashes is E.164.
	r := in.post("/v2/messages", key, `{"from":"+15005550006","to":"+1 500-555-0100","text":"Hi"}`)
	msg, _ := r.body["message"].(map[string]any)
	routing, _ := r.body["routing"].(map[string]any)
	if r.status != 202 || msg["to"] != "+15005550100" || msg["from"] != "+15005550006" || msg["senderId"] != nil ||
		routing["channel"] != "sms" || routing["reason"] != "phone" {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	// The same message through v1, with its sender id.
	id := msg["id"].(string)
	if r := in.get("/v1/messages/"+id, key); r.body["message"].(map[string]any)["senderId"] != "main" {
		t.Errorf("v1 read of a v2 send: %v", r.body)
	}
	waitFor(t, func() bool {
		return in.get("/v2/messages/"+id, key).body["message"].(map[string]any)["status"] == "delivered"
	})

	// Without from, the default sender; an email recipient goes to email.
	r = in.post("/v2/messages", key, `{"to":"a@example.com","text":"Hi","subject":"Hello"}`)
	if r.status != 202 || r.body["routing"].(map[string]any)["channel"] != "email" {
		t.Fatalf("email = %d %v", r.status, r.body)
	}

	// Nothing active reaches a channel: 409 no_channel with what to connect.
	r = in.post("/v2/messages", key, `{"to":"+15005550100","text":"Hi","channel":"voice"}`)
	connect, _ := r.body["details"].(map[string]any)["connect"].([]any)
	if r.status != 409 || r.body["code"] != "no_channel" || len(connect) != 1 || r.header.Get("X-Should-Retry") != "false" {
		t.Fatalf("voice = %d %v", r.status, r.body)
	}
	r = in.post("/v2/messages", key, `{"to":"1234567890123","text":"Hi","channel":"telegram"}`)
	if r.status != 409 || r.body["code"] != "no_channel" {
		t.Fatalf("telegram = %d %v", r.status, r.body)
	}

	// Bare digits are a chat id, not guessed to be a number: refused with the suggestion.
	r = in.post("/v2/messages", key, `{"to":"15005550100","text":"Hi"}`)
	if r.status != 400 || r.body["details"].(map[string]any)["suggestion"] != "+15005550100" || len(fieldErrors(r)) != 1 {
		t.Fatalf("bare digits = %d %v", r.status, r.body)
	}

	// Contradictions are 400 with every field; nothing is stored.
	before := in.count("SELECT count(*) FROM messages")
	for name, c := range map[string]struct {
		body   string
		fields int
	}{
		"email to, sms channel":   {`{"to":"a@example.com","text":"x","subject":"s","channel":"sms"}`, 1},
		"email channel, phone to": {`{"to":"+15005550100","text":"x","subject":"s","channel":"email"}`, 1},
		"unknown from":            {`{"from":"+19999999999","to":"+15005550100","text":"x"}`, 1},
		"several at once":         {`{"to":"","text":"","channel":"pigeon"}`, 3},
	} {
		r := in.post("/v2/messages", key, c.body)
		if r.status != 400 || r.body["code"] != "invalid_request" || len(fieldErrors(r)) != c.fields {
			t.Errorf("%s: %d %v, want 400 with %d field errors", name, r.status, r.body, c.fields)
		}
	}
	if r := in.post("/v2/messages", key, `{"conversationId":"conv_unknown","text":"x"}`); r.status != 404 {
		t.Errorf("unknown conversation = %d", r.status)
	}
	if after := in.count("SELECT count(*) FROM messages"); after != before {
		t.Errorf("refused sends stored %d messages", after-before)
	}

	// v2 lists in its own shape.
	r = in.get("/v2/messages?limit=1", key)
	items, _ := r.body["items"].([]any)
	if r.status != 200 || len(items) != 1 || items[0].(map[string]any)["senderId"] != nil || r.body["nextCursor"] == "" {
		t.Errorf("list = %d %v", r.status, r.body)
	}
}

// A v2 from names one address: only its channels may carry the message, and the answer's from
// is that address.
func TestSendV2FromNamesOneAddress(t *testing.T) {
	in := start(t, fastSandbox)
	key := deskProject(t, in)

	// From the number, bare digits reach nothing: refused with the number the client probably meant.
	before := in.count("SELECT count(*) FROM messages")
	r := in.post("/v2/messages", key, `{"from":"+15005550006","to":"447700900103","text":"Hi"}`)
	if r.status != 400 || r.body["details"].(map[string]any)["suggestion"] != "+447700900103" {
		t.Fatalf("from the number to bare digits = %d %v", r.status, r.body)
	}
	if after := in.count("SELECT count(*) FROM messages"); after != before {
		t.Fatalf("a refused send stored %d messages", after-before)
	}
	// From the bot, the same digits are a chat: telegram, from the bot's address.
	r = in.post("/v2/messages", key, `{"from":"@acme_bot","to":"447700900103","text":"Hi"}`)
	msg, _ := r.body["message"].(map[string]any)
	if r.status != 202 || msg["channel"] != "telegram" || msg["from"] != "@acme_bot" || r.body["routing"].(map[string]any)["from"] != "@acme_bot" {
		t.Fatalf("from the bot = %d %v", r.status, r.body)
	}
	// From the number, a number: sms from the number.
	r = in.post("/v2/messages", key, `{"from":"+15005550006","to":"+447700900103","text":"Hi"}`)
	if msg, _ := r.body["message"].(map[string]any); r.status != 202 || msg["channel"] != "sms" || msg["from"] != "+15005550006" {
		t.Fatalf("from the number = %d %v", r.status, r.body)
	}
}
