package meta_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

// The accounts the peer of these tests knows.
const (
	graphPhoneID = "106540352242922"
	graphDisplay = "+1 555-010-0100"
	graphWABA    = "102290129340398"
	graphPage    = "104000000000001"
	graphMediaID = "1234567890123456"
)

// graphPeer is a Graph API peer with a phone number, its WABA, a Page and an uploaded image, and
// the transport configured for it.
func graphPeer(t *testing.T, opts metatest.Options) (*metatest.Server, *meta.Transport) {
	t.Helper()
	peer := metatest.NewServer(t, opts)
	peer.AddPhoneNumber(graphPhoneID, graphDisplay, graphWABA)
	peer.AddPage(graphPage, "Acme")
	peer.AddMedia(graphMediaID, "image/jpeg", []byte("jpeg"))
	return peer, meta.New(meta.Config{BaseURL: peer.URL, AccessToken: metatest.Token, AppID: metatest.AppID})
}

// sendOK sends m and returns what the peer accepted of it.
func sendOK(t *testing.T, peer *metatest.Server, tr *meta.Transport, m transport.Outbound) (transport.Result, metatest.Message) {
	t.Helper()
	res, err := tr.Send(context.Background(), m)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := peer.Messages()
	if len(msgs) == 0 {
		t.Fatal("the peer accepted nothing")
	}
	return res, msgs[len(msgs)-1]
}

// sameJSON fails unless got and want are the same JSON value.
func sameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("body %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		var gi, wi bytes.Buffer
		_ = json.Indent(&gi, got, "", "  ")
		_ = json.Indent(&wi, []byte(want), "", "  ")
		t.Fatalf("body\n%s\nwant\n%s", gi.String(), wi.String())
	}
}

func f64(v float64) *float64 { return &v }

// TestSendWhatsAppBodies sends each message type and checks the body Meta gets is the one its
// reference documents for it.
func TestSendWhatsAppBodies(t *testing.T) {
	t.Parallel()
	const head = `"messaging_product":"whatsapp","recipient_type":"individual","to":"15551234567"`
	cases := []struct {
		name string
		m    transport.Outbound
		want string
	}{
		{"text", transport.Outbound{Text: "Hello there"},
			`{` + head + `,"type":"text","text":{"body":"Hello there"}}`},
		{"text with a link previews it", transport.Outbound{MessageType: "text", Text: "See https://example.com/a"},
			`{` + head + `,"type":"text","text":{"body":"See https://example.com/a","preview_url":true}}`},
		{"image by link with caption", transport.Outbound{MessageType: "image", Text: "Our menu",
			Content: &transport.Content{MediaURL: "https://cdn.example.com/menu.jpg"}},
			`{` + head + `,"type":"image","image":{"link":"https://cdn.example.com/menu.jpg","caption":"Our menu"}}`},
		{"image by id", transport.Outbound{MessageType: "image", Content: &transport.Content{MediaID: graphMediaID, MediaURL: "https://ignored.example"}},
			`{` + head + `,"type":"image","image":{"id":"` + graphMediaID + `"}}`},
		{"video", transport.Outbound{MessageType: "video", Text: "Watch", Content: &transport.Content{MediaURL: "https://cdn.example.com/v.mp4"}},
			`{` + head + `,"type":"video","video":{"link":"https://cdn.example.com/v.mp4","caption":"Watch"}}`},
		{"audio", transport.Outbound{MessageType: "audio", Content: &transport.Content{MediaURL: "https://cdn.example.com/a.ogg"}},
			`{` + head + `,"type":"audio","audio":{"link":"https://cdn.example.com/a.ogg"}}`},
		{"document", transport.Outbound{MessageType: "document", Text: "Your invoice",
			Content: &transport.Content{MediaURL: "https://cdn.example.com/i.pdf", Filename: "invoice.pdf"}},
			`{` + head + `,"type":"document","document":{"link":"https://cdn.example.com/i.pdf","caption":"Your invoice","filename":"invoice.pdf"}}`},
		{"sticker", transport.Outbound{MessageType: "sticker", Content: &transport.Content{MediaURL: "https://cdn.example.com/s.webp"}},
			`{` + head + `,"type":"sticker","sticker":{"link":"https://cdn.example.com/s.webp"}}`},
		{"location", transport.Outbound{MessageType: "location", Content: &transport.Content{Latitude: f64(37.4847), Longitude: f64(-122.1477),
			LocationName: "HQ", LocationAddress: "1 Hacker Way, Menlo Park"}},
			`{` + head + `,"type":"location","location":{"latitude":37.4847,"longitude":-122.1477,"name":"HQ","address":"1 Hacker Way, Menlo Park"}}`},
		{"contact", transport.Outbound{MessageType: "contact", Content: &transport.Content{Contacts: []transport.ContactCard{
			{Name: "Ada Lovelace", Phones: []string{"+15550001111", "+15550002222"}}, {Phones: []string{"+15550003333"}}}}},
			`{` + head + `,"type":"contacts","contacts":[
				{"name":{"formatted_name":"Ada Lovelace","first_name":"Ada Lovelace"},"phones":[{"phone":"+15550001111"},{"phone":"+15550002222"}]},
				{"name":{"formatted_name":"+15550003333","first_name":"+15550003333"},"phones":[{"phone":"+15550003333"}]}]}`},
		{"buttons", transport.Outbound{MessageType: "buttons", Text: "Confirm your booking?", Content: &transport.Content{
			Buttons: []transport.Button{{ID: "yes", Title: "Yes"}, {ID: "no", Title: "No"}}, FooterText: "Acme Hotels"}},
			`{` + head + `,"type":"interactive","interactive":{"type":"button","body":{"text":"Confirm your booking?"},
				"footer":{"text":"Acme Hotels"},"action":{"buttons":[
				{"type":"reply","reply":{"id":"yes","title":"Yes"}},{"type":"reply","reply":{"id":"no","title":"No"}}]}}}`},
		{"list", transport.Outbound{MessageType: "list", Text: "Pick a slot", Content: &transport.Content{ListButton: "Slots",
			Sections: []transport.Section{
				{Title: "Morning", Rows: []transport.Row{{ID: "m9", Title: "9:00", Description: "Front desk"}, {ID: "m10", Title: "10:00"}}},
				{Title: "Evening", Rows: []transport.Row{{ID: "e18", Title: "18:00"}}}}}},
			`{` + head + `,"type":"interactive","interactive":{"type":"list","body":{"text":"Pick a slot"},"action":{"button":"Slots","sections":[
				{"title":"Morning","rows":[{"id":"m9","title":"9:00","description":"Front desk"},{"id":"m10","title":"10:00"}]},
				{"title":"Evening","rows":[{"id":"e18","title":"18:00"}]}]}}}`},
		{"cta_url with an image header", transport.Outbound{MessageType: "cta_url", Text: "Tap to see dates", Content: &transport.Content{
			CTADisplayText: "See dates", CTAURL: "https://example.com/dates", CTAHeaderType: "image",
			CTAHeaderMedia: "https://cdn.example.com/banner.png", FooterText: "Subject to change"}},
			`{` + head + `,"type":"interactive","interactive":{"type":"cta_url",
				"header":{"type":"image","image":{"link":"https://cdn.example.com/banner.png"}},
				"body":{"text":"Tap to see dates"},"footer":{"text":"Subject to change"},
				"action":{"name":"cta_url","parameters":{"display_text":"See dates","url":"https://example.com/dates"}}}}`},
		{"cta_url with a text header", transport.Outbound{MessageType: "cta_url", Text: "Tap", Content: &transport.Content{
			CTADisplayText: "Open", CTAURL: "https://example.com", CTAHeaderText: "Offer"}},
			`{` + head + `,"type":"interactive","interactive":{"type":"cta_url","header":{"type":"text","text":"Offer"},
				"body":{"text":"Tap"},"action":{"name":"cta_url","parameters":{"display_text":"Open","url":"https://example.com"}}}}`},
		{"location_request", transport.Outbound{MessageType: "location_request", Text: "Where should we pick you up?"},
			`{` + head + `,"type":"interactive","interactive":{"type":"location_request_message",
				"body":{"text":"Where should we pick you up?"},"action":{"name":"send_location"}}}`},
		{"request_contact_info", transport.Outbound{MessageType: "request_contact_info", Text: "Share your number?"},
			`{` + head + `,"type":"interactive","interactive":{"type":"request_contact_info",
				"body":{"text":"Share your number?"},"action":{"name":"request_contact_info"}}}`},
		{"reaction", transport.Outbound{MessageType: "reaction", ReactToProviderMessageID: "wamid.HBgLMTU1NTEyMzQ1NjcVAgASGBQzQTk=",
			ReplyToProviderMessageID: "wamid.ignored", Content: &transport.Content{Emoji: "👍"}},
			`{` + head + `,"type":"reaction","reaction":{"message_id":"wamid.HBgLMTU1NTEyMzQ1NjcVAgASGBQzQTk=","emoji":"👍"}}`},
		{"reaction removed", transport.Outbound{MessageType: "reaction", ReactToProviderMessageID: "wamid.X"},
			`{` + head + `,"type":"reaction","reaction":{"message_id":"wamid.X","emoji":""}}`},
		{"reply in context", transport.Outbound{Text: "Yes, it is", ReplyToProviderMessageID: "wamid.Q"},
			`{` + head + `,"type":"text","text":{"body":"Yes, it is"},"context":{"message_id":"wamid.Q"}}`},
	}
	peer, tr := graphPeer(t, metatest.Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := c.m
			m.Channel, m.To, m.From = "whatsapp", "+15551234567", graphPhoneID
			res, got := sendOK(t, peer, tr, m)
			if !strings.HasPrefix(res.ProviderMessageID, "wamid.HBgL") || res.ProviderMessageID != got.ID {
				t.Fatalf("ProviderMessageID = %q, want the peer's wamid %q", res.ProviderMessageID, got.ID)
			}
			if got.PhoneNumberID != graphPhoneID || got.WABAID != graphWABA || got.Token != metatest.Token {
				t.Fatalf("accepted on %s (WABA %s) with another token, want %s", got.PhoneNumberID, got.WABAID, graphPhoneID)
			}
			sameJSON(t, got.Raw, c.want)
		})
	}
}

func TestSendWhatsAppTemplate(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	peer.SetTemplateStatus(graphWABA, "order_shipped", "en_US", "APPROVED", "UTILITY")
	_, got := sendOK(t, peer, tr, transport.Outbound{Channel: "whatsapp", MessageType: "template", To: "15551234567", From: graphPhoneID,
		Template: &transport.OutboundTemplate{Name: "order_shipped", Language: "en_US",
			HeaderType: "image", HeaderMediaURL: "https://cdn.example.com/box.png",
			BodyParams: []string{"Ada", "#1234"},
			Buttons: []transport.TemplateButtonParam{
				{Index: 0, SubType: "url", Value: "track/1234"},
				{Index: 1, SubType: "copy_code", Value: "SAVE10"},
				{Index: 2, SubType: "quick_reply", Value: "stop-promos"}}}})
	sameJSON(t, got.Raw, `{"messaging_product":"whatsapp","recipient_type":"individual","to":"15551234567","type":"template",
		"template":{"name":"order_shipped","language":{"code":"en_US"},"components":[
			{"type":"header","parameters":[{"type":"image","image":{"link":"https://cdn.example.com/box.png"}}]},
			{"type":"body","parameters":[{"type":"text","text":"Ada"},{"type":"text","text":"#1234"}]},
			{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"track/1234"}]},
			{"type":"button","sub_type":"copy_code","index":"1","parameters":[{"type":"coupon_code","coupon_code":"SAVE10"}]},
			{"type":"button","sub_type":"quick_reply","index":"2","parameters":[{"type":"payload","payload":"stop-promos"}]}]}}`)

	// A text header's parameters, and a template without parameters (no components at all).
	peer.SetTemplateStatus(graphWABA, "hello_world", "en", "APPROVED", "MARKETING")
	_, got = sendOK(t, peer, tr, transport.Outbound{Channel: "whatsapp", MessageType: "template", To: "15551234567", From: graphPhoneID,
		Template: &transport.OutboundTemplate{Name: "hello_world", Language: "en", HeaderType: "text", HeaderParams: []string{"Ada"}}})
	sameJSON(t, got.Raw, `{"messaging_product":"whatsapp","recipient_type":"individual","to":"15551234567","type":"template",
		"template":{"name":"hello_world","language":{"code":"en"},"components":[{"type":"header","parameters":[{"type":"text","text":"Ada"}]}]}}`)
	_, got = sendOK(t, peer, tr, transport.Outbound{Channel: "whatsapp", MessageType: "template", To: "15551234567", From: graphPhoneID,
		Template: &transport.OutboundTemplate{Name: "hello_world", Language: "en"}})
	sameJSON(t, got.Raw, `{"messaging_product":"whatsapp","recipient_type":"individual","to":"15551234567","type":"template",
		"template":{"name":"hello_world","language":{"code":"en"}}}`)
}

// TestSendWhatsAppToBusinessScopedUserID: a BSUID goes as recipient, not to.
func TestSendWhatsAppToBusinessScopedUserID(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	_, got := sendOK(t, peer, tr, transport.Outbound{Channel: "whatsapp", To: "US.13491208655302741918", From: graphPhoneID, Text: "Hi"})
	sameJSON(t, got.Raw, `{"messaging_product":"whatsapp","recipient_type":"individual","recipient":"US.13491208655302741918",
		"type":"text","text":{"body":"Hi"}}`)
	if got.To != "US.13491208655302741918" {
		t.Fatalf("peer recorded recipient %q", got.To)
	}
}

// TestSendWhatsAppAccountToken: a sender's own token replaces the Provider's.
func TestSendWhatsAppAccountToken(t *testing.T) {
	t.Parallel()
	const own = "EAAOwnSenderToken000000000000ZDZD"
	peer, tr := graphPeer(t, metatest.Options{Tokens: []string{own}})
	_, got := sendOK(t, peer, tr, transport.Outbound{Channel: "whatsapp", To: "15551234567", From: graphPhoneID, Text: "Hi", AccountToken: own})
	if got.Token != own {
		t.Fatalf("the peer got token %q, want the sender's", got.Token)
	}
}

// TestSendWhatsAppRefusedBeforeSending: content Meta would refuse fails with the transport's own
// code, and nothing reaches Meta.
func TestSendWhatsAppRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	four := []transport.Button{{ID: "a", Title: "A"}, {ID: "b", Title: "B"}, {ID: "c", Title: "C"}, {ID: "d", Title: "D"}}
	var eleven []transport.Row
	for _, id := range strings.Split("a b c d e f g h i j k", " ") {
		eleven = append(eleven, transport.Row{ID: id, Title: id})
	}
	cases := []struct {
		name string
		m    transport.Outbound
		code string
	}{
		{"four buttons", transport.Outbound{MessageType: "buttons", Text: "?", Content: &transport.Content{Buttons: four}}, meta.CodeInvalidRequest},
		{"a button title of 21 characters", transport.Outbound{MessageType: "buttons", Text: "?",
			Content: &transport.Content{Buttons: []transport.Button{{ID: "a", Title: strings.Repeat("x", 21)}}}}, meta.CodeInvalidRequest},
		{"two buttons with one id", transport.Outbound{MessageType: "buttons", Text: "?",
			Content: &transport.Content{Buttons: []transport.Button{{ID: "a", Title: "A"}, {ID: "a", Title: "B"}}}}, meta.CodeInvalidRequest},
		{"eleven rows", transport.Outbound{MessageType: "list", Text: "?", Content: &transport.Content{ListButton: "Open",
			Sections: []transport.Section{{Title: "All", Rows: eleven}}}}, meta.CodeInvalidRequest},
		{"buttons without a body", transport.Outbound{MessageType: "buttons", Content: &transport.Content{Buttons: four[:1]}}, meta.CodeInvalidRequest},
		{"audio with a caption", transport.Outbound{MessageType: "audio", Text: "listen",
			Content: &transport.Content{MediaURL: "https://cdn.example.com/a.ogg"}}, meta.CodeInvalidRequest},
		{"image without media", transport.Outbound{MessageType: "image"}, meta.CodeInvalidRequest},
		{"location without coordinates", transport.Outbound{MessageType: "location"}, meta.CodeInvalidRequest},
		{"template not resolved", transport.Outbound{MessageType: "template"}, meta.CodeInvalidRequest},
		{"reaction without its message", transport.Outbound{MessageType: "reaction", Content: &transport.Content{Emoji: "👍"}}, meta.CodeInvalidRequest},
		{"unknown type", transport.Outbound{MessageType: "poll", Text: "?"}, meta.CodeMessageTypeUnsupported},
		{"no sender", transport.Outbound{Text: "hi", From: "-"}, meta.CodeInvalidRequest},
		{"a sender id that is not a Graph id", transport.Outbound{Text: "hi", From: "../me"}, meta.CodeInvalidRequest},
	}
	peer, tr := graphPeer(t, metatest.Options{})
	for _, c := range cases {
		m := c.m
		m.Channel, m.To = "whatsapp", "15551234567"
		switch m.From {
		case "":
			m.From = graphPhoneID
		case "-":
			m.From = ""
		}
		_, err := tr.Send(context.Background(), m)
		if f := transport.AsFailure(err); f == nil || f.Code != c.code {
			t.Errorf("%s: err = %v, want a Failure %s", c.name, err, c.code)
		}
	}
	if n := len(peer.Messages()); n != 0 {
		t.Fatalf("the peer accepted %d messages", n)
	}
	_, err := tr.Send(context.Background(), transport.Outbound{Channel: "sms", To: "15551234567", From: graphPhoneID, Text: "hi"})
	if f := transport.AsFailure(err); f == nil || f.Code != meta.CodeChannelUnsupported {
		t.Fatalf("sms: err = %v, want CHANNEL_UNSUPPORTED", err)
	}
}

func TestWhatsAppCarriesEveryType(t *testing.T) {
	t.Parallel()
	for _, typ := range strings.Split("text image video audio document sticker location contact buttons list cta_url request_contact_info location_request reaction template", " ") {
		if !meta.WhatsAppCarries(typ) {
			t.Errorf("WhatsAppCarries(%q) = false", typ)
		}
	}
	if meta.WhatsAppCarries("poll") {
		t.Error("WhatsAppCarries(poll) = true")
	}
}

func TestChannels(t *testing.T) {
	t.Parallel()
	got := meta.New(meta.Config{}).Channels()
	if want := []string{"whatsapp", "instagram", "messenger"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Channels() = %v, want %v", got, want)
	}
}
