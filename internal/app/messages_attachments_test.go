package app_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/apikey"
)

func TestEmailAttachments(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	pdf := []byte("%PDF-1.7 an invoice \x00\x01\x02")
	r := in.post("/v1/messages", key, `{"to":"ada@example.com","subject":"Your invoice","text":"Attached.","htmlBody":"<img src=\"cid:logo\">",`+
		`"attachments":[{"filename":"invoice.pdf","content":"`+base64.StdEncoding.EncodeToString(pdf)+`"},`+
		`{"filename":"logo.png","path":"https://cdn.acme.example/logo.png","content_type":"image/png","content_id":"logo"}]}`)
	if r.status != 200 {
		t.Fatalf("send = %d %v", r.status, r.body)
	}
	id := r.body["message"].(map[string]any)["id"].(string)
	if n := in.count(`SELECT count(*) FROM message_attachments WHERE message_id = $1 AND position = 0 AND content = $2 AND path IS NULL`, id, pdf); n != 1 {
		t.Errorf("the inline attachment is not stored decoded")
	}

	r = in.get("/v1/messages/"+id+"/attachments", key)
	items, _ := r.body["items"].([]any)
	if r.status != 200 || len(items) != 2 {
		t.Fatalf("attachments = %d %v", r.status, r.body)
	}
	inline, url := items[0].(map[string]any), items[1].(map[string]any)
	if inline["filename"] != "invoice.pdf" || inline["mimeType"] != "application/pdf" || inline["size"] != float64(len(pdf)) ||
		inline["downloadUrl"] != nil || inline["contentId"] != nil || inline["isInline"] != false {
		t.Errorf("inline content attachment %v", inline)
	}
	if url["filename"] != "logo.png" || url["mimeType"] != "image/png" || url["size"] != float64(0) ||
		url["downloadUrl"] != "https://cdn.acme.example/logo.png" || url["contentId"] != "logo" || url["isInline"] != true {
		t.Errorf("URL attachment %v", url)
	}
	// The message is sent with them (the sandbox accepts them).
	waitFor(t, func() bool {
		return in.get("/v1/messages/"+id, key).body["message"].(map[string]any)["status"] == "delivered"
	})

	// v2 takes them too; a message without attachments lists none.
	r = in.post("/v2/messages", key, `{"to":"ada@example.com","subject":"Hi","text":"x","attachments":[{"filename":"a.txt","content":"aGk="}]}`)
	if r.status != 202 {
		t.Fatalf("v2 send = %d %v", r.status, r.body)
	}
	v2 := r.body["message"].(map[string]any)["id"].(string)
	if items := in.get("/v1/messages/"+v2+"/attachments", key).body["items"].([]any); len(items) != 1 ||
		items[0].(map[string]any)["size"] != float64(2) || !strings.HasPrefix(items[0].(map[string]any)["mimeType"].(string), "text/plain") {
		t.Errorf("v2 attachments %v", items)
	}
	plain := in.post("/v1/messages", key, `{"to":"+15005550100","text":"x"}`).body["message"].(map[string]any)["id"].(string)
	if r := in.get("/v1/messages/"+plain+"/attachments", key); r.status != 200 || len(r.body["items"].([]any)) != 0 {
		t.Errorf("attachments of an sms = %d %v", r.status, r.body)
	}

	// Another mode's message and an unknown id are not found; a key without messages:read is refused.
	if r := in.get("/v1/messages/"+id+"/attachments", newKey(t, in, acme, apikey.Live)); r.status != 404 {
		t.Errorf("a live key reads a test message's attachments: %d", r.status)
	}
	if r := in.get("/v1/messages/msg_nope/attachments", key); r.status != 404 {
		t.Errorf("unknown message = %d", r.status)
	}
	if r := in.get("/v1/messages/"+id+"/attachments", newKey(t, in, acme, apikey.Test, "messages:send")); r.status != 403 {
		t.Errorf("a send-only key reads attachments: %d", r.status)
	}
}
