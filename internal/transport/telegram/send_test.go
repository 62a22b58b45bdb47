package telegram_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
	"github.com/switchboard-io/switchboard/internal/transport/telegram/telegramtest"
)

const chat = 42

func ptr(f float64) *float64 { return &f }

// newTransport is a Transport against a fresh peer.
func newTransport(t *testing.T) (telegram.Transport, *telegramtest.Server) {
	srv := telegramtest.NewServer(t)
	return telegram.Transport{Client: telegram.Client{API: srv.URL}}, srv
}

func outbound(messageType, text string, c *transport.Content) transport.Outbound {
	return transport.Outbound{ID: "msg_1", Channel: "telegram", MessageType: messageType, To: "42", Text: text, Content: c, AccountToken: goodToken}
}

func markup(t *testing.T, c telegramtest.Call) string {
	t.Helper()
	if c.ReplyMarkup == nil {
		return ""
	}
	b, err := json.Marshal(c.ReplyMarkup)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSendShapes sends each message type and checks the Bot API call the peer received.
func TestSendShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		m     transport.Outbound
		check func(t *testing.T, calls []telegramtest.Call)
	}{
		{"text", outbound("text", "Hello", nil), func(t *testing.T, calls []telegramtest.Call) {
			if c := calls[0]; c.Method != "sendMessage" || c.ChatID != chat || c.Text != "Hello" || c.ReplyMarkup != nil || c.Param("parse_mode") != "" {
				t.Errorf("call = %+v", c)
			}
		}},
		{"image by URL with caption", outbound("image", "Our shop", &transport.Content{MediaURL: "https://cdn.acme.example/shop.jpg"}), func(t *testing.T, calls []telegramtest.Call) {
			if c := calls[0]; c.Method != "sendPhoto" || c.Param("photo") != "https://cdn.acme.example/shop.jpg" || c.Text != "Our shop" {
				t.Errorf("call = %+v", c)
			}
		}},
		{"image by file_id", outbound("image", "", &transport.Content{MediaID: "AgACAgQAAxkBAAIB"}), func(t *testing.T, calls []telegramtest.Call) {
			if c := calls[0]; c.Method != "sendPhoto" || c.Param("photo") != "AgACAgQAAxkBAAIB" || c.Param("caption") != "" {
				t.Errorf("call = %+v", c)
			}
		}},
		{"video", outbound("video", "Tour", &transport.Content{MediaURL: "https://cdn.acme.example/tour.mp4"}), func(t *testing.T, calls []telegramtest.Call) {
			if c := calls[0]; c.Method != "sendVideo" || c.Param("video") != "https://cdn.acme.example/tour.mp4" || c.Text != "Tour" {
				t.Errorf("call = %+v", c)
			}
		}},
		{"audio", outbound("audio", "", &transport.Content{MediaURL: "https://cdn.acme.example/jingle.mp3"}), func(t *testing.T, calls []telegramtest.Call) {
			if c := calls[0]; c.Method != "sendAudio" || c.Param("audio") != "https://cdn.acme.example/jingle.mp3" {
				t.Errorf("call = %+v", c)
			}
		}},
		{"document", outbound("document", "Invoice", &transport.Content{MediaURL: "https://cdn.acme.example/inv.pdf", Filename: "inv.pdf"}), func(t *testing.T, calls []telegramtest.Call) {
			if c := calls[0]; c.Method != "sendDocument" || c.Param("document") != "https://cdn.acme.example/inv.pdf" || c.Text != "Invoice" {
				t.Errorf("call = %+v", c)
			}
		}},
		{"sticker has no caption", outbound("sticker", "ignored", &transport.Content{MediaID: "CAACAgIAAxkBAAEL"}), func(t *testing.T, calls []telegramtest.Call) {
			if c := calls[0]; c.Method != "sendSticker" || c.Param("sticker") != "CAACAgIAAxkBAAEL" || c.Param("caption") != "" {
				t.Errorf("call = %+v", c)
			}
		}},
		{"location", outbound("location", "", &transport.Content{Latitude: ptr(52.52), Longitude: ptr(-13.405)}), func(t *testing.T, calls []telegramtest.Call) {
			if c := calls[0]; c.Method != "sendLocation" || c.Param("latitude") != "52.52" || c.Param("longitude") != "-13.405" {
				t.Errorf("call = %+v %v", c, c.Params)
			}
		}},
		{"venue", outbound("location", "", &transport.Content{Latitude: ptr(52.52), Longitude: ptr(13.405), LocationName: "Acme HQ", LocationAddress: "Unter den Linden 1"}), func(t *testing.T, calls []telegramtest.Call) {
			if c := calls[0]; c.Method != "sendVenue" || c.Param("title") != "Acme HQ" || c.Param("address") != "Unter den Linden 1" || c.Param("latitude") != "52.52" {
				t.Errorf("call = %+v", c)
			}
		}},
		{"venue with a name only", outbound("location", "", &transport.Content{Latitude: ptr(1), Longitude: ptr(2), LocationName: "Acme HQ"}), func(t *testing.T, calls []telegramtest.Call) {
			if c := calls[0]; c.Method != "sendVenue" || c.Param("title") != "Acme HQ" || c.Param("address") != "Acme HQ" {
				t.Errorf("call = %+v", c)
			}
		}},
		{"contact, a message a card", outbound("contact", "", &transport.Content{Contacts: []transport.ContactCard{
			{Name: "Ada Lovelace", Phones: []string{"+15005550100"}},
			{Name: "Bob", Phones: []string{"+15005550101", "+15005550102"}},
		}}), func(t *testing.T, calls []telegramtest.Call) {
			if len(calls) != 2 {
				t.Fatalf("%d calls, want 2", len(calls))
			}
			if c := calls[0]; c.Method != "sendContact" || c.Param("phone_number") != "+15005550100" || c.Param("first_name") != "Ada Lovelace" || c.Param("vcard") != "" {
				t.Errorf("first card = %+v", c)
			}
			if c := calls[1]; c.Param("phone_number") != "+15005550101" || c.Param("first_name") != "Bob" ||
				!strings.Contains(c.Param("vcard"), "TEL:+15005550101") || !strings.Contains(c.Param("vcard"), "TEL:+15005550102") {
				t.Errorf("second card = %+v", c)
			}
		}},
		{"buttons", outbound("buttons", "Delivery today?", &transport.Content{FooterText: "Acme", Buttons: []transport.Button{{ID: "yes", Title: "Yes"}, {ID: "no", Title: "No"}}}), func(t *testing.T, calls []telegramtest.Call) {
			c := calls[0]
			if want := `{"inline_keyboard":[[{"text":"Yes","callback_data":"yes"}],[{"text":"No","callback_data":"no"}]]}`; c.Method != "sendMessage" || markup(t, c) != want {
				t.Errorf("markup = %s, want %s", markup(t, c), want)
			}
			if c.Text != "Delivery today?\n\nAcme" {
				t.Errorf("text = %q", c.Text)
			}
		}},
		{"list", outbound("list", "Pick a slot", &transport.Content{ListButton: "Slots", Sections: []transport.Section{
			{Title: "Morning", Rows: []transport.Row{{ID: "m9", Title: "9:00"}, {ID: "m10", Title: "10:00", Description: "busy"}}},
			{Title: "Evening", Rows: []transport.Row{{ID: "e18", Title: "18:00"}}},
		}}), func(t *testing.T, calls []telegramtest.Call) {
			c := calls[0]
			want := `{"inline_keyboard":[[{"text":"9:00","callback_data":"m9"}],[{"text":"10:00","callback_data":"m10"}],[{"text":"18:00","callback_data":"e18"}]]}`
			if c.Method != "sendMessage" || c.Text != "Pick a slot" || markup(t, c) != want {
				t.Errorf("call = %s %q, want %s", markup(t, c), c.Text, want)
			}
		}},
		{"cta_url", outbound("cta_url", "Track your order", &transport.Content{CTADisplayText: "Track", CTAURL: "https://acme.example/t/1", FooterText: "Acme Shipping"}), func(t *testing.T, calls []telegramtest.Call) {
			c := calls[0]
			if want := `{"inline_keyboard":[[{"text":"Track","url":"https://acme.example/t/1"}]]}`; c.Method != "sendMessage" || markup(t, c) != want {
				t.Errorf("markup = %s, want %s", markup(t, c), want)
			}
			if c.Text != "Track your order\n\nAcme Shipping" {
				t.Errorf("text = %q", c.Text)
			}
		}},
		{"cta_url with a text header", outbound("cta_url", "Body", &transport.Content{CTADisplayText: "Go", CTAURL: "https://acme.example", CTAHeaderType: "text", CTAHeaderText: "Header"}), func(t *testing.T, calls []telegramtest.Call) {
			if c := calls[0]; c.Method != "sendMessage" || c.Text != "Header\n\nBody" {
				t.Errorf("call = %+v", c)
			}
		}},
		{"cta_url with an image header", outbound("cta_url", "Body", &transport.Content{CTADisplayText: "Go", CTAURL: "https://acme.example", CTAHeaderType: "image", CTAHeaderMedia: "https://cdn.acme.example/h.jpg"}), func(t *testing.T, calls []telegramtest.Call) {
			c := calls[0]
			if c.Method != "sendPhoto" || c.Param("photo") != "https://cdn.acme.example/h.jpg" || c.Text != "Body" || c.ReplyMarkup == nil || c.ReplyMarkup.InlineKeyboard[0][0].URL != "https://acme.example" {
				t.Errorf("call = %+v", c)
			}
		}},
		{"request_contact_info", outbound("request_contact_info", "May we have your number?", nil), func(t *testing.T, calls []telegramtest.Call) {
			c := calls[0]
			want := `{"keyboard":[[{"text":"Share my contact","request_contact":true}]],"one_time_keyboard":true,"resize_keyboard":true}`
			if c.Method != "sendMessage" || c.Text != "May we have your number?" || markup(t, c) != want {
				t.Errorf("markup = %s, want %s", markup(t, c), want)
			}
		}},
		{"location_request", outbound("location_request", "Where are you?", nil), func(t *testing.T, calls []telegramtest.Call) {
			c := calls[0]
			want := `{"keyboard":[[{"text":"Share my location","request_location":true}]],"one_time_keyboard":true,"resize_keyboard":true}`
			if c.Method != "sendMessage" || markup(t, c) != want {
				t.Errorf("markup = %s, want %s", markup(t, c), want)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr, srv := newTransport(t)
			res, err := tr.Send(context.Background(), tc.m)
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			calls := srv.Sent()
			if len(calls) == 0 {
				t.Fatal("the peer received nothing")
			}
			if res.ProviderMessageID != "42:1" {
				t.Errorf("provider id = %q, want 42:1 (the first message of the chat)", res.ProviderMessageID)
			}
			tc.check(t, calls)
		})
	}
}

func TestSendNumbersMessagesPerChat(t *testing.T) {
	t.Parallel()
	tr, _ := newTransport(t)
	var ids []string
	for _, to := range []string{"42", "42", "-1001234567890", "42"} {
		m := outbound("text", "hi", nil)
		m.To = to
		res, err := tr.Send(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ProviderMessageID)
	}
	if want := []string{"42:1", "42:2", "-1001234567890:1", "42:3"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
}

func TestSendReaction(t *testing.T) {
	t.Parallel()
	tr, srv := newTransport(t)
	sent, err := tr.Send(context.Background(), outbound("text", "Your order shipped", nil))
	if err != nil {
		t.Fatal(err)
	}
	m := outbound("reaction", "", &transport.Content{Emoji: "❤️"}) // with U+FE0F, as keyboards type it
	m.ReactToProviderMessageID = sent.ProviderMessageID
	res, err := tr.Send(context.Background(), m)
	if err != nil {
		t.Fatalf("Send reaction: %v", err)
	}
	if res.ProviderMessageID != "42:1:reaction" {
		t.Errorf("provider id = %q, want one apart from the message's", res.ProviderMessageID)
	}
	calls := srv.Sent()
	c := calls[len(calls)-1]
	if c.Method != "setMessageReaction" || c.ChatID != chat || c.MessageID != 1 || c.Param("reaction") != `[{"emoji":"❤","type":"emoji"}]` {
		t.Fatalf("call = %+v, reaction %s", c, c.Param("reaction"))
	}

	// A message Telegram does not know is refused by Telegram.
	m.ReactToProviderMessageID = "42:99"
	if _, err := tr.Send(context.Background(), m); failureCode(err) != telegram.CodeRejected {
		t.Errorf("reaction to an unknown message: %v", err)
	}
}

func failureCode(err error) string {
	if f := transport.AsFailure(err); f != nil {
		return f.Code
	}
	return ""
}

// TestSendRefusedBeforeTelegram: what Telegram cannot carry fails for good without a call.
func TestSendRefusedBeforeTelegram(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 65)
	reaction := func(target string) transport.Outbound {
		m := outbound("reaction", "", &transport.Content{Emoji: "👍"})
		m.ReactToProviderMessageID = target
		return m
	}
	noToken := outbound("text", "hi", nil)
	noToken.AccountToken = ""
	badChat := outbound("text", "hi", nil)
	badChat.To = "+15005550100"
	for name, tc := range map[string]struct {
		m    transport.Outbound
		code string
	}{
		"template":              {outbound("template", "", &transport.Content{TemplateID: "tpl_1"}), "MESSAGE_TYPE_UNSUPPORTED"},
		"unknown type":          {outbound("carousel", "", nil), "MESSAGE_TYPE_UNSUPPORTED"},
		"media without a file":  {outbound("image", "x", &transport.Content{}), telegram.CodeRejected},
		"location without lat":  {outbound("location", "", &transport.Content{Longitude: ptr(1)}), telegram.CodeRejected},
		"contact without phone": {outbound("contact", "", &transport.Content{Contacts: []transport.ContactCard{{Name: "A", Phones: []string{"+1500"}}, {Name: "B"}}}), telegram.CodeRejected},
		"button id over 64":     {outbound("buttons", "x", &transport.Content{Buttons: []transport.Button{{ID: long, Title: "Yes"}}}), telegram.CodeRejected},
		"row id over 64":        {outbound("list", "x", &transport.Content{Sections: []transport.Section{{Rows: []transport.Row{{ID: long, Title: "r"}}}}}), telegram.CodeRejected},
		"reaction, bad target":  {reaction("wamid.HBgL"), telegram.CodeRejected},
		"reaction, other chat":  {reaction("43:1"), telegram.CodeRejected},
		"no bot token":          {noToken, telegram.CodeAuthFailed},
		"phone number as chat":  {badChat, "INVALID_RECIPIENT"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr, srv := newTransport(t)
			_, err := tr.Send(context.Background(), tc.m)
			if got := failureCode(err); got != tc.code {
				t.Fatalf("err = %v, want a failure %s", err, tc.code)
			}
			if n := len(srv.Calls()); n != 0 {
				t.Errorf("the peer received %d calls", n)
			}
		})
	}
}

func TestSupports(t *testing.T) {
	t.Parallel()
	for _, mt := range []string{"text", "image", "video", "audio", "document", "sticker", "location", "contact", "buttons",
		"list", "cta_url", "request_contact_info", "location_request", "reaction"} {
		if !telegram.Supports(mt) {
			t.Errorf("Supports(%q) = false", mt)
		}
	}
	for _, mt := range []string{"template", "", "voice", "carousel"} {
		if telegram.Supports(mt) {
			t.Errorf("Supports(%q) = true", mt)
		}
	}
}

func TestChannels(t *testing.T) {
	t.Parallel()
	var tr transport.Transport = telegram.Transport{}
	if got := tr.Channels(); !reflect.DeepEqual(got, []string{"telegram"}) {
		t.Fatalf("Channels = %v", got)
	}
}

func TestProviderMessageID(t *testing.T) {
	t.Parallel()
	for _, ids := range [][2]int64{{42, 1}, {-1001234567890, 77}, {9007199254740991, 2147483647}} {
		s := telegram.ProviderMessageID(ids[0], ids[1])
		c, m, ok := telegram.ParseProviderMessageID(s)
		if !ok || c != ids[0] || m != ids[1] {
			t.Errorf("%q reads back as %d %d %v", s, c, m, ok)
		}
	}
	if s := telegram.ProviderMessageID(-100123, 5); s != "-100123:5" {
		t.Errorf("ProviderMessageID = %q", s)
	}
	for _, bad := range []string{"", "42", "42:", ":1", "a:1", "42:b", "42:1:reaction", "42:-1", "42:0", "0:1", "+42:1", "42:+1", "callback:123"} {
		if _, _, ok := telegram.ParseProviderMessageID(bad); ok {
			t.Errorf("ParseProviderMessageID(%q) ok", bad)
		}
	}
}

// TestSendContactWaitsOutFloodControlBetweenCards: a later card that meets a short flood wait is
// sent after it rather than failing the message (and repeating the first card on a retry).
func TestSendContactWaitsOutFloodControlBetweenCards(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := fakeAPI(t, func() (int, string) {
		switch n.Add(1) {
		case 1:
			return 200, `{"ok":true,"result":{"message_id":1,"date":1,"chat":{"id":42,"type":"private"}}}`
		case 2:
			return 429, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 1","parameters":{"retry_after":1}}`
		}
		return 200, `{"ok":true,"result":{"message_id":2,"date":1,"chat":{"id":42,"type":"private"}}}`
	})
	tr := telegram.Transport{Client: telegram.Client{API: srv.URL}}
	res, err := tr.Send(context.Background(), outbound("contact", "", &transport.Content{Contacts: []transport.ContactCard{
		{Name: "A", Phones: []string{"+15005550100"}}, {Name: "B", Phones: []string{"+15005550101"}}}}))
	if err != nil || res.ProviderMessageID != "42:1" || n.Load() != 3 {
		t.Fatalf("Send = %+v, %v after %d calls; want 42:1 after 3", res, err, n.Load())
	}
}
