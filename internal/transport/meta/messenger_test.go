package meta_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
)

const graphPSID = "1254477777772919"

// TestSendPageBodies sends Messenger and Instagram messages and checks the Send API body Meta
// gets.
func TestSendPageBodies(t *testing.T) {
	t.Parallel()
	const head = `"recipient":{"id":"` + graphPSID + `"}`
	cases := []struct {
		name, channel string
		m             transport.Outbound
		want          string
		noID          bool // a sender action: Meta answers no message id
	}{
		{name: "messenger text", channel: "messenger", m: transport.Outbound{Text: "Hello"},
			want: `{` + head + `,"messaging_type":"RESPONSE","message":{"text":"Hello"}}`},
		{name: "instagram text", channel: "instagram", m: transport.Outbound{MessageType: "text", Text: "Hello"},
			want: `{` + head + `,"messaging_type":"RESPONSE","message":{"text":"Hello"}}`},
		{name: "messenger image by URL", channel: "messenger", m: transport.Outbound{MessageType: "image",
			Content: &transport.Content{MediaURL: "https://cdn.example.com/a.jpg"}},
			want: `{` + head + `,"messaging_type":"RESPONSE","message":{"attachment":{"type":"image","payload":{"url":"https://cdn.example.com/a.jpg"}}}}`},
		{name: "messenger document is a file", channel: "messenger", m: transport.Outbound{MessageType: "document",
			Content: &transport.Content{MediaURL: "https://cdn.example.com/i.pdf"}},
			want: `{` + head + `,"messaging_type":"RESPONSE","message":{"attachment":{"type":"file","payload":{"url":"https://cdn.example.com/i.pdf"}}}}`},
		{name: "instagram video by attachment id", channel: "instagram", m: transport.Outbound{MessageType: "video",
			Content: &transport.Content{MediaID: "778899"}},
			want: `{` + head + `,"messaging_type":"RESPONSE","message":{"attachment":{"type":"video","payload":{"attachment_id":"778899"}}}}`},
		{name: "instagram audio", channel: "instagram", m: transport.Outbound{MessageType: "audio",
			Content: &transport.Content{MediaURL: "https://cdn.example.com/a.m4a"}},
			want: `{` + head + `,"messaging_type":"RESPONSE","message":{"attachment":{"type":"audio","payload":{"url":"https://cdn.example.com/a.m4a"}}}}`},
		{name: "buttons are quick replies", channel: "messenger", m: transport.Outbound{MessageType: "buttons", Text: "Pick one",
			Content: &transport.Content{Buttons: []transport.Button{{ID: "red", Title: "Red"}, {ID: "blue", Title: "Blue"}}}},
			want: `{` + head + `,"messaging_type":"RESPONSE","message":{"text":"Pick one","quick_replies":[
				{"content_type":"text","title":"Red","payload":"red"},{"content_type":"text","title":"Blue","payload":"blue"}]}}`},
		{name: "messenger reaction", channel: "messenger", noID: true, m: transport.Outbound{MessageType: "reaction",
			ReactToProviderMessageID: "m_abc", Content: &transport.Content{Emoji: "😊"}},
			want: `{` + head + `,"sender_action":"react","payload":{"message_id":"m_abc","reaction":"😊"}}`},
		{name: "instagram heart is love", channel: "instagram", noID: true, m: transport.Outbound{MessageType: "reaction",
			ReactToProviderMessageID: "aWdfZAG1", Content: &transport.Content{Emoji: "❤️"}},
			want: `{` + head + `,"sender_action":"react","payload":{"message_id":"aWdfZAG1","reaction":"love"}}`},
		{name: "reaction removed", channel: "instagram", noID: true, m: transport.Outbound{MessageType: "reaction", ReactToProviderMessageID: "aWdfZAG1"},
			want: `{` + head + `,"sender_action":"unreact","payload":{"message_id":"aWdfZAG1"}}`},
	}
	peer, tr := graphPeer(t, metatest.Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := c.m
			m.Channel, m.To, m.From = c.channel, graphPSID, graphPage
			res, got := sendOK(t, peer, tr, m)
			if got.PageID != graphPage || got.PhoneNumberID != "" {
				t.Fatalf("accepted for Page %q, phone %q", got.PageID, got.PhoneNumberID)
			}
			switch {
			case c.noID && res.ProviderMessageID != "":
				t.Fatalf("ProviderMessageID = %q for a sender action", res.ProviderMessageID)
			case !c.noID && (!strings.HasPrefix(res.ProviderMessageID, "m_") || res.ProviderMessageID != got.ID):
				t.Fatalf("ProviderMessageID = %q, want the peer's m_ id %q", res.ProviderMessageID, got.ID)
			}
			sameJSON(t, got.Raw, c.want)
		})
	}
}

func TestSendPageRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, channel string
		m             transport.Outbound
		code          string
	}{
		{"instagram document", "instagram", transport.Outbound{MessageType: "document",
			Content: &transport.Content{MediaURL: "https://cdn.example.com/i.pdf"}}, meta.CodeMessageTypeUnsupported},
		{"messenger location", "messenger", transport.Outbound{MessageType: "location"}, meta.CodeMessageTypeUnsupported},
		{"messenger template", "messenger", transport.Outbound{MessageType: "template"}, meta.CodeMessageTypeUnsupported},
		{"instagram sticker", "instagram", transport.Outbound{MessageType: "sticker"}, meta.CodeMessageTypeUnsupported},
		{"a caption", "messenger", transport.Outbound{MessageType: "image", Text: "look",
			Content: &transport.Content{MediaURL: "https://cdn.example.com/a.jpg"}}, meta.CodeInvalidRequest},
		{"instagram text over 1000 bytes", "instagram", transport.Outbound{Text: strings.Repeat("é", 501)}, meta.CodeInvalidRequest},
		{"a quick reply title over 20", "messenger", transport.Outbound{MessageType: "buttons", Text: "?",
			Content: &transport.Content{Buttons: []transport.Button{{ID: "a", Title: strings.Repeat("x", 21)}}}}, meta.CodeInvalidRequest},
		{"no text", "messenger", transport.Outbound{}, meta.CodeInvalidRequest},
	}
	peer, tr := graphPeer(t, metatest.Options{})
	for _, c := range cases {
		m := c.m
		m.Channel, m.To, m.From = c.channel, graphPSID, graphPage
		_, err := tr.Send(context.Background(), m)
		if f := transport.AsFailure(err); f == nil || f.Code != c.code {
			t.Errorf("%s: err = %v, want a Failure %s", c.name, err, c.code)
		}
	}
	if n := len(peer.Messages()); n != 0 {
		t.Fatalf("the peer accepted %d messages", n)
	}
}

func TestPageCarries(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		typ                  string
		messenger, instagram bool
	}{
		{"", true, true}, {"text", true, true}, {"image", true, true}, {"video", true, true}, {"audio", true, true},
		{"document", true, false}, {"buttons", true, true}, {"reaction", true, true},
		{"sticker", false, false}, {"location", false, false}, {"contact", false, false}, {"list", false, false},
		{"cta_url", false, false}, {"template", false, false}, {"location_request", false, false}, {"request_contact_info", false, false},
	} {
		if got := meta.MessengerCarries(c.typ); got != c.messenger {
			t.Errorf("MessengerCarries(%q) = %v", c.typ, got)
		}
		if got := meta.InstagramCarries(c.typ); got != c.instagram {
			t.Errorf("InstagramCarries(%q) = %v", c.typ, got)
		}
	}
}

// TestSendPageOutsideTheWindow: inside the window a reply is RESPONSE; within seven days of the
// person's message it is tagged HUMAN_AGENT (which Meta takes with the window closed); later it
// fails without a call.
func TestSendPageOutsideTheWindow(t *testing.T) {
	t.Parallel()
	peer, tr := graphPeer(t, metatest.Options{})
	peer.Window(graphPSID, false)
	ctx := context.Background()
	at := func(ago time.Duration) *time.Time { w := time.Now().Add(24*time.Hour - ago); return &w }
	for _, c := range []struct {
		name      string
		window    *time.Time
		kind, tag string
	}{
		{"unknown", nil, "RESPONSE", ""},
		{"an hour ago", at(time.Hour), "RESPONSE", ""},
		{"three days ago", at(72 * time.Hour), "MESSAGE_TAG", "HUMAN_AGENT"},
	} {
		m := transport.Outbound{Channel: "messenger", To: graphPSID, From: graphPage, Text: "Hi", WindowUntil: c.window}
		before := len(peer.Messages())
		_, err := tr.Send(ctx, m)
		if c.kind == "RESPONSE" && c.window == nil {
			// The peer's window is closed: Meta refuses a RESPONSE, as it would.
			if f := transport.AsFailure(err); f == nil || f.Code != meta.CodeMessengerWindowClosed {
				t.Fatalf("%s: %v", c.name, err)
			}
			continue
		}
		if c.kind == "RESPONSE" {
			peer.Window(graphPSID, true)
			_, err = tr.Send(ctx, m)
			peer.Window(graphPSID, false)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := peer.Messages()[len(peer.Messages())-1]
		if len(peer.Messages()) == before || got.Body["messaging_type"] != c.kind || (c.tag != "" && got.Body["tag"] != c.tag) {
			t.Fatalf("%s: sent %v", c.name, got.Body)
		}
	}
	before := len(peer.Messages())
	_, err := tr.Send(ctx, transport.Outbound{Channel: "instagram", To: graphPSID, From: graphPage, Text: "Hi", WindowUntil: at(8 * 24 * time.Hour)})
	if f := transport.AsFailure(err); f == nil || f.Code != meta.CodeMessengerWindowClosed || len(peer.Messages()) != before {
		t.Fatalf("eight days later: %v, %d sent", err, len(peer.Messages())-before)
	}
}
