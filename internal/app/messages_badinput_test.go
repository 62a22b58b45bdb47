package app_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/apikey"
)

// badSend is a send with invalid input and the fields it must be refused for.
type badSend struct {
	name string
	body string
	// paths are the invalid fields details.errors must list, in any order; none for invalid_json.
	paths []string
	code  string // invalid_request unless set
}

// badSends are every field of every message type wrong in turn. Non-text types and whatsapp are
// refused for their input, before any WhatsApp window is looked at.
func badSends() []badSend {
	const phone = `"to":"+15005550100"`
	const email = `"to":"ada@example.com","subject":"Hi"`
	s := func(n int) string { return strings.Repeat("s", n) }
	button := func(i int) string { return fmt.Sprintf(`{"id":"%d","title":"b%d"}`, i, i) }
	buttons := func(n int) string {
		var b []string
		for i := 0; i < n; i++ {
			b = append(b, button(i))
		}
		return strings.Join(b, ",")
	}
	row := `{"id":"r","title":"Row"}`
	section := `{"title":"S","rows":[` + row + `]}`
	repeat := func(item string, n int) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	file := `{"filename":"a.pdf","content":"JVBERi0xLjc="}`
	// 41 MiB of zeros in base64: over the 40 MB total, under the route's 64 MiB body limit.
	large := strings.Repeat("A", 4*((41<<20)/3+1))

	cases := []badSend{
		// The recipient.
		{"missing to", `{"text":"x"}`, []string{"to"}, ""},
		{"empty to", `{"to":"","text":"x"}`, []string{"to"}, ""},
		{"to of 16 digits", `{"to":"+1234567890123456","text":"x"}`, []string{"to"}, ""},
		{"to of 16 bare digits", `{"to":"1234567890123456","text":"x"}`, []string{"to"}, ""},
		{"to with a national 0", `{"to":"0612345678","text":"x"}`, []string{"to"}, ""},
		{"to not an address", `{"to":"nope","text":"x"}`, []string{"to"}, ""},
		{"to not a string", `{"to":15005550100,"text":"x"}`, []string{"to"}, ""},
		// Channel and type.
		{"unknown channel", `{` + phone + `,"text":"x","channel":"pigeon"}`, []string{"channel"}, ""},
		{"unknown messageType", `{` + phone + `,"text":"x","messageType":"hologram"}`, []string{"messageType"}, ""},
		{"unknown messageType on sms", `{` + phone + `,"text":"x","messageType":"hologram","channel":"sms"}`, []string{"messageType"}, ""},
		{"email to on sms", `{` + email + `,"text":"x","channel":"sms"}`, []string{"to"}, ""},
		{"phone to on email", `{` + phone + `,"subject":"Hi","text":"x","channel":"email"}`, []string{"to"}, ""},
		{"phone to on telegram", `{` + phone + `,"text":"x","channel":"telegram"}`, []string{"to"}, ""},
		// MMS goes only where the destination takes it (+1); a sticker is never an MMS.
		{"image on sms abroad", `{"to":"+447700900100","messageType":"image","channel":"sms","content":{"mediaUrl":"https://cdn.acme.example/a.jpg"}}`, []string{"messageType"}, ""},
		{"sticker on sms", `{` + phone + `,"messageType":"sticker","channel":"sms","content":{"mediaUrl":"https://cdn.acme.example/a.webp"}}`, []string{"messageType"}, ""},
		// text.
		{"text missing", `{` + phone + `}`, []string{"text"}, ""},
		{"text empty", `{` + phone + `,"text":""}`, []string{"text"}, ""},
		{"text over 4096", `{` + phone + `,"text":"` + s(4097) + `"}`, []string{"text"}, ""},
		{"text not a string", `{` + phone + `,"text":5}`, []string{"text"}, ""},
		// Email fields.
		{"email without subject", `{"to":"ada@example.com","text":"x"}`, []string{"subject"}, ""},
		{"email with an empty subject", `{"to":"ada@example.com","subject":"","text":"x"}`, []string{"subject"}, ""},
		{"subject of 999", `{"to":"ada@example.com","subject":"` + s(999) + `","text":"x"}`, []string{"subject"}, ""},
		{"htmlBody on sms", `{` + phone + `,"text":"x","htmlBody":"<p>x</p>"}`, []string{"htmlBody"}, ""},
		{"replyTo on sms", `{` + phone + `,"text":"x","replyTo":"help@acme.example"}`, []string{"replyTo"}, ""},
		{"replyTo not an address", `{` + email + `,"text":"x","replyTo":"help"}`, []string{"replyTo"}, ""},
		// Options.
		{"bad voiceLanguage", `{` + phone + `,"text":"x","voiceLanguage":"english please"}`, []string{"voiceLanguage"}, ""},
		{"voiceLanguage not a string", `{` + phone + `,"text":"x","voiceLanguage":1}`, []string{"voiceLanguage"}, ""},
		{"fallbackEnabled not a boolean", `{` + phone + `,"text":"x","fallbackEnabled":"yes"}`, []string{"fallbackEnabled"}, ""},
		{"metadata with a number", `{` + phone + `,"text":"x","metadata":{"order":42}}`, []string{"metadata"}, ""},
		{"metadata not an object", `{` + phone + `,"text":"x","metadata":"order"}`, []string{"metadata"}, ""},
		{"empty idempotencyKey", `{` + phone + `,"text":"x","idempotencyKey":""}`, []string{"idempotencyKey"}, ""},
		{"idempotencyKey of 256", `{` + phone + `,"text":"x","idempotencyKey":"` + s(256) + `"}`, []string{"idempotencyKey"}, ""},
		// Content of each type.
		{"image URL not http", `{` + phone + `,"messageType":"image","content":{"mediaUrl":"ftp://cdn.acme.example/a.jpg"}}`, []string{"content.mediaUrl"}, ""},
		{"content not an object", `{` + phone + `,"messageType":"image","content":"a.jpg"}`, []string{"content"}, ""},
		{"location without latitude", `{` + phone + `,"messageType":"location","content":{"longitude":13.4}}`, []string{"content.latitude"}, ""},
		{"location out of range", `{` + phone + `,"messageType":"location","content":{"latitude":91,"longitude":-181}}`, []string{"content.latitude", "content.longitude"}, ""},
		{"location of the wrong type", `{` + phone + `,"messageType":"location","content":{"latitude":"north","longitude":13.4}}`, []string{"content.latitude"}, ""},
		{"contact without contacts", `{` + phone + `,"messageType":"contact","content":{}}`, []string{"content.contacts"}, ""},
		{"contact without name or phone", `{` + phone + `,"messageType":"contact","content":{"contacts":[{"name":"Ada"},{}]}}`, []string{"content.contacts[1]"}, ""},
		{"buttons with 4 entries", `{` + phone + `,"messageType":"buttons","text":"x","content":{"buttons":[` + buttons(4) + `]}}`, []string{"content.buttons"}, ""},
		{"buttons with none", `{` + phone + `,"messageType":"buttons","text":"x","content":{"buttons":[]}}`, []string{"content.buttons"}, ""},
		{"buttons without text", `{` + phone + `,"messageType":"buttons","content":{"buttons":[` + buttons(2) + `]}}`, []string{"text"}, ""},
		{"button title of 21", `{` + phone + `,"messageType":"buttons","text":"x","content":{"buttons":[{"id":"1","title":"` + s(21) + `"}]}}`, []string{"content.buttons[0]"}, ""},
		{"button without id", `{` + phone + `,"messageType":"buttons","text":"x","content":{"buttons":[` + button(0) + `,{"title":"b"}]}}`, []string{"content.buttons[1]"}, ""},
		{"list without text", `{` + phone + `,"messageType":"list","content":{"listButton":"Pick","sections":[` + section + `]}}`, []string{"text"}, ""},
		{"list without listButton", `{` + phone + `,"messageType":"list","text":"x","content":{"sections":[` + section + `]}}`, []string{"content.listButton"}, ""},
		{"list without sections", `{` + phone + `,"messageType":"list","text":"x","content":{"listButton":"Pick"}}`, []string{"content.sections"}, ""},
		{"list with 11 sections", `{` + phone + `,"messageType":"list","text":"x","content":{"listButton":"Pick","sections":[` + repeat(section, 11) + `]}}`, []string{"content.sections"}, ""},
		{"list section without rows", `{` + phone + `,"messageType":"list","text":"x","content":{"listButton":"Pick","sections":[{"title":"S","rows":[]}]}}`, []string{"content.sections[0].rows"}, ""},
		{"list section with 11 rows", `{` + phone + `,"messageType":"list","text":"x","content":{"listButton":"Pick","sections":[{"title":"S","rows":[` + repeat(row, 11) + `]}]}}`, []string{"content.sections[0].rows"}, ""},
		{"list row title of 25", `{` + phone + `,"messageType":"list","text":"x","content":{"listButton":"Pick","sections":[{"title":"S","rows":[{"id":"r","title":"` + s(25) + `"}]}]}}`, []string{"content.sections[0].rows[0]"}, ""},
		{"cta_url without text", `{` + phone + `,"messageType":"cta_url","content":{"ctaDisplayText":"Open","ctaUrl":"https://acme.example"}}`, []string{"text"}, ""},
		{"cta_url without display text", `{` + phone + `,"messageType":"cta_url","text":"x","content":{"ctaUrl":"https://acme.example"}}`, []string{"content.ctaDisplayText"}, ""},
		{"cta_url without url", `{` + phone + `,"messageType":"cta_url","text":"x","content":{"ctaDisplayText":"Open"}}`, []string{"content.ctaUrl"}, ""},
		{"cta_url url not http", `{` + phone + `,"messageType":"cta_url","text":"x","content":{"ctaDisplayText":"Open","ctaUrl":"javascript:alert(1)"}}`, []string{"content.ctaUrl"}, ""},
		{"cta_url bad header type", `{` + phone + `,"messageType":"cta_url","text":"x","content":{"ctaDisplayText":"Open","ctaUrl":"https://acme.example","ctaHeaderType":"gif"}}`, []string{"content.ctaHeaderType"}, ""},
		{"reaction without anything", `{` + phone + `,"messageType":"reaction","content":{}}`, []string{"content.emoji", "content.reactToMessageId"}, ""},
		{"template without templateId", `{` + phone + `,"messageType":"template","content":{"templateVariables":{"1":"Ada"}}}`, []string{"content.templateId"}, ""},
		{"template without content", `{` + phone + `,"messageType":"template"}`, []string{"content.templateId"}, ""},
		// Attachments.
		{"51 attachments", `{` + email + `,"text":"x","attachments":[` + repeat(file, 51) + `]}`, []string{"attachments"}, ""},
		{"41 MB of attachments", `{` + email + `,"text":"x","attachments":[{"filename":"big.bin","content":"` + large + `"}]}`, []string{"attachments"}, ""},
		{"attachments on sms", `{` + phone + `,"text":"x","attachments":[` + file + `]}`, []string{"attachments"}, ""},
		{"attachments not a list", `{` + email + `,"text":"x","attachments":"a.pdf"}`, []string{"attachments"}, ""},
		{"attachment without filename", `{` + email + `,"text":"x","attachments":[{"content":"JVBERi0xLjc="}]}`, []string{"attachments[0].filename"}, ""},
		{"attachment with content and path", `{` + email + `,"text":"x","attachments":[{"filename":"a.pdf","content":"JVBERi0xLjc=","path":"https://cdn.acme.example/a.pdf"}]}`, []string{"attachments[0]"}, ""},
		{"attachment without content or path", `{` + email + `,"text":"x","attachments":[{"filename":"a.pdf"}]}`, []string{"attachments[0].content"}, ""},
		{"attachment 3 not base64", `{` + email + `,"text":"x","attachments":[` + repeat(file, 3) + `,{"filename":"d.pdf","content":"%%%"}]}`, []string{"attachments[3].content"}, ""},
		{"attachment path not a URL", `{` + email + `,"text":"x","attachments":[{"filename":"a.pdf","path":"file:///etc/passwd"}]}`, []string{"attachments[0].path"}, ""},
		{"attachment bad content_type and content_id", `{` + email + `,"text":"x","attachments":[{"filename":"a.pdf","content":"JVBERi0xLjc=","content_type":"pdf","content_id":"<a b>"}]}`,
			[]string{"attachments[0].content_type", "attachments[0].content_id"}, ""},
		// Every field at once: each is listed.
		{"several invalid fields", `{"to":"1234567890123456","channel":"pigeon","messageType":"buttons","content":{"buttons":[` + buttons(4) + `]},` +
			`"subject":"` + s(999) + `","htmlBody":"<p>x</p>","voiceLanguage":"english please","idempotencyKey":"","attachments":[{"filename":"a.pdf"}]}`,
			[]string{"to", "channel", "text", "content.buttons", "subject", "htmlBody", "voiceLanguage", "idempotencyKey", "attachments", "attachments[0].content"}, ""},
		// The body itself.
		{"not JSON", `{"to":`, nil, "invalid_json"},
		{"not an object", `["to"]`, []string{""}, ""},
	}
	for _, t := range []string{"image", "video", "audio", "document", "sticker"} {
		cases = append(cases, badSend{t + " without media", `{` + phone + `,"messageType":"` + t + `","text":"caption"}`, []string{"content.mediaUrl"}, ""})
	}
	for _, t := range []string{"request_contact_info", "location_request"} {
		cases = append(cases,
			badSend{t + " without a prompt", `{` + phone + `,"messageType":"` + t + `"}`, []string{"text"}, ""},
			badSend{t + " with a prompt of 1025", `{` + phone + `,"messageType":"` + t + `","text":"` + s(1025) + `"}`, []string{"text"}, ""})
	}
	return cases
}

// Every field of every message type wrong in turn, on both generations: the documented 400 with
// every invalid field in details.errors, and nothing stored, queued or announced.
func TestSendBadInput(t *testing.T) {
	rcv := newHookReceiver(t)
	in := start(t, fastSandbox, rcv.trusted())
	// sendingProject returns with the webhook's secret in place: a valid send records its
	// message.queued delivery, so "no webhook delivery" below is something a bad send could break.
	acme, key := sendingProject(t, in, rcv, apikey.Test)
	for _, gen := range []string{"v1", "v2"} {
		for _, c := range badSends() {
			r := in.post("/"+gen+"/messages", key, c.body)
			code := c.code
			if code == "" {
				code = "invalid_request"
			}
			var paths []string
			for _, e := range fieldErrors(r) {
				paths = append(paths, fmt.Sprint(e.(map[string]any)["path"]))
			}
			slices.Sort(paths)
			want := slices.Clone(c.paths)
			slices.Sort(want)
			if r.status != http.StatusBadRequest || r.body["code"] != code || !slices.Equal(paths, want) {
				t.Errorf("%s %s: %d %s %v, want 400 %s on %v", gen, c.name, r.status, r.body["code"], paths, code, want)
			}
		}
	}

	// Nothing of any refused send exists: no message, attachment, idempotency key, dispatch job,
	// webhook delivery or conversation (Switchboard has no balance yet: nothing is charged).
	tables := map[string]string{
		"message":         "SELECT count(*) FROM messages",
		"attachment":      "SELECT count(*) FROM message_attachments",
		"idempotency key": "SELECT count(*) FROM message_idempotency_keys",
		"dispatch job":    "SELECT count(*) FROM river_job WHERE kind = 'message.dispatch'",
		// The project's own: the controllers of this instance also reconcile the email domains
		// and templates of other tests on the shared API server, and record their events here.
		"webhook delivery": "SELECT count(*) FROM webhook_deliveries WHERE project = '" + acme + "'",
	}
	for what, sql := range tables {
		if n := in.count(sql); n != 0 {
			t.Errorf("refused sends left %d %s rows", n, what)
		}
	}
	if n := in.count("SELECT count(*) FROM conversations"); n != 0 {
		t.Errorf("refused sends opened %d conversations", n)
	}

	// The same counts see a valid send: one of each.
	r := in.post("/v1/messages", key, `{"to":"ada@example.com","subject":"Hi","text":"x","idempotencyKey":"ok-1","attachments":[{"filename":"a.pdf","content":"JVBERi0xLjc="}]}`)
	if r.status != http.StatusOK {
		t.Fatalf("valid send = %d %v", r.status, r.body)
	}
	for what, sql := range tables {
		if n := in.count(sql); n == 0 {
			t.Errorf("a valid send left no %s row", what)
		}
	}
}
