package telegram_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/telegram"
)

// msg is an Update with a message from Ada in private chat 42, holding fields (JSON members).
func msg(fields string) string {
	return `{"update_id":10000,"message":{"message_id":7,"date":1700000000,
		"from":{"id":42,"is_bot":false,"first_name":"Ada","last_name":"Lovelace","username":"ada","language_code":"en"},
		"chat":{"id":42,"first_name":"Ada","last_name":"Lovelace","username":"ada","type":"private"},` + fields + `}}`
}

func TestParseUpdate(t *testing.T) {
	t.Parallel()
	at := time.Unix(1700000000, 0).UTC()
	base := func(messageType, text string, c *transport.Content) transport.Inbound {
		return transport.Inbound{Channel: "telegram", From: "42", MessageType: messageType, Text: text, Content: c,
			ProviderMessageID: "42:7", ProviderTimestamp: &at, ProfileName: "Ada Lovelace"}
	}
	unsupported := func(kind string) transport.Inbound {
		in := base("", "", nil)
		in.Unsupported = kind
		return in
	}
	lat, lng := 48.8584, 2.2945
	for _, tc := range []struct {
		name string
		body string
		want transport.Inbound
		ok   bool
	}{
		{"text", msg(`"text":"Hello"`), base("text", "Hello", nil), true},
		{"photo: the largest size, caption as text", msg(`"caption":"Receipt","photo":[
			{"file_id":"small","file_unique_id":"a","width":90,"height":60,"file_size":1000},
			{"file_id":"large","file_unique_id":"c","width":1280,"height":853,"file_size":90000},
			{"file_id":"medium","file_unique_id":"b","width":320,"height":213,"file_size":9000}]`),
			base("image", "Receipt", &transport.Content{MediaID: "large", MimeType: "image/jpeg"}), true},
		{"video", msg(`"video":{"file_id":"vid","file_unique_id":"v","width":640,"height":360,"duration":5,"mime_type":"video/mp4","file_name":"clip.mp4"}`),
			base("video", "", &transport.Content{MediaID: "vid", MimeType: "video/mp4", Filename: "clip.mp4"}), true},
		{"animation, which also fills document", msg(`"animation":{"file_id":"gif","file_unique_id":"g","width":1,"height":1,"duration":1,"mime_type":"video/mp4"},
			"document":{"file_id":"gif","file_unique_id":"g","mime_type":"video/mp4"}`),
			base("video", "", &transport.Content{MediaID: "gif", MimeType: "video/mp4"}), true},
		{"video note", msg(`"video_note":{"file_id":"round","file_unique_id":"r","length":240,"duration":3}`),
			base("video", "", &transport.Content{MediaID: "round", MimeType: "video/mp4"}), true},
		{"audio", msg(`"audio":{"file_id":"song","file_unique_id":"s","duration":200,"mime_type":"audio/mpeg","file_name":"song.mp3"}`),
			base("audio", "", &transport.Content{MediaID: "song", MimeType: "audio/mpeg", Filename: "song.mp3"}), true},
		{"voice is audio", msg(`"voice":{"file_id":"note","file_unique_id":"n","duration":4}`),
			base("audio", "", &transport.Content{MediaID: "note", MimeType: "audio/ogg"}), true},
		{"document", msg(`"caption":"Signed","document":{"file_id":"doc","file_unique_id":"d","file_name":"contract.pdf","mime_type":"application/pdf"}`),
			base("document", "Signed", &transport.Content{MediaID: "doc", MimeType: "application/pdf", Filename: "contract.pdf"}), true},
		{"sticker", msg(`"sticker":{"file_id":"stk","file_unique_id":"k","type":"regular","width":512,"height":512,"is_animated":true,"is_video":false,"emoji":"😀"}`),
			base("sticker", "", &transport.Content{MediaID: "stk", MimeType: "application/x-tgsticker"}), true},
		{"location", msg(`"location":{"latitude":48.8584,"longitude":2.2945}`),
			base("location", "", &transport.Content{Latitude: &lat, Longitude: &lng}), true},
		{"venue, which also fills location", msg(`"location":{"latitude":48.8584,"longitude":2.2945},
			"venue":{"location":{"latitude":48.8584,"longitude":2.2945},"title":"Eiffel Tower","address":"Champ de Mars"}`),
			base("location", "", &transport.Content{Latitude: &lat, Longitude: &lng, LocationName: "Eiffel Tower", LocationAddress: "Champ de Mars"}), true},
		{"contact", msg(`"contact":{"phone_number":"+33612345678","first_name":"Jean","last_name":"Dupont","user_id":99}`),
			base("contact", "", &transport.Content{Contacts: []transport.ContactCard{{Name: "Jean Dupont", Phones: []string{"+33612345678"}}}}), true},
		{"reply", msg(`"text":"Yes","reply_to_message":{"message_id":3,"date":1699999000,"chat":{"id":42,"type":"private"},"from":{"id":123456789,"is_bot":true,"first_name":"Acme"},"text":"Today?"}`),
			func() transport.Inbound {
				in := base("text", "Yes", nil)
				in.ReplyToProviderMessageID = "42:3"
				return in
			}(), true},
		{"a username only", `{"update_id":1,"message":{"message_id":7,"date":1700000000,"from":{"id":42,"is_bot":false,"first_name":"","username":"ada"},"chat":{"id":42,"type":"private"},"text":"x"}}`,
			func() transport.Inbound { in := base("text", "x", nil); in.ProfileName = "ada"; return in }(), true},
		{"anonymous group admin", `{"update_id":1,"message":{"message_id":7,"date":1700000000,"from":{"id":1087968824,"is_bot":true,"first_name":"Group","username":"GroupAnonymousBot"},
			"sender_chat":{"id":-100555,"title":"Acme fans","type":"supergroup"},"chat":{"id":-100555,"title":"Acme fans","type":"supergroup"},"text":"x"}}`,
			transport.Inbound{Channel: "telegram", From: "-100555", MessageType: "text", Text: "x", ProviderMessageID: "-100555:7", ProviderTimestamp: &at, ProfileName: "Acme fans"}, true},

		{"callback query", `{"update_id":10001,"callback_query":{"id":"4382bfdwdsb323b2d9","from":{"id":42,"is_bot":false,"first_name":"Ada","last_name":"Lovelace"},
			"message":{"message_id":3,"date":1699999000,"chat":{"id":42,"type":"private"},"from":{"id":123456789,"is_bot":true,"first_name":"Acme"},"text":"Today?",
			"reply_markup":{"inline_keyboard":[[{"text":"Yes","callback_data":"yes"}]]}},"chat_instance":"-81234","data":"yes"}}`,
			transport.Inbound{Channel: "telegram", From: "42", MessageType: "text", Text: "yes", ProviderMessageID: "callback:4382bfdwdsb323b2d9",
				ProfileName: "Ada Lovelace", ReplyToProviderMessageID: "42:3"}, true},
		{"callback query of a game", `{"update_id":10001,"callback_query":{"id":"1","from":{"id":42,"is_bot":false,"first_name":"Ada"},"chat_instance":"-1","game_short_name":"tetris"}}`,
			transport.Inbound{}, false},

		{"reaction", `{"update_id":10002,"message_reaction":{"chat":{"id":42,"type":"private"},"message_id":3,"user":{"id":42,"is_bot":false,"first_name":"Ada","last_name":"Lovelace"},
			"date":1700000000,"old_reaction":[],"new_reaction":[{"type":"emoji","emoji":"👍"}]}}`,
			transport.Inbound{Channel: "telegram", From: "42", MessageType: "reaction", ProviderMessageID: "42:3:reaction:10002", Content: &transport.Content{Emoji: "👍"}, ProviderTimestamp: &at,
				ProfileName: "Ada Lovelace", ReplyToProviderMessageID: "42:3"}, true},
		{"reaction taken back", `{"update_id":10002,"message_reaction":{"chat":{"id":42,"type":"private"},"message_id":3,"user":{"id":42,"is_bot":false,"first_name":"Ada"},
			"date":1700000000,"old_reaction":[{"type":"emoji","emoji":"👍"}],"new_reaction":[]}}`,
			transport.Inbound{Channel: "telegram", From: "42", MessageType: "reaction", ProviderMessageID: "42:3:reaction:10002", Content: &transport.Content{}, ProviderTimestamp: &at,
				ProfileName: "Ada", ReplyToProviderMessageID: "42:3"}, true},
		{"custom emoji reaction", `{"update_id":10002,"message_reaction":{"chat":{"id":42,"type":"private"},"message_id":3,"user":{"id":42,"is_bot":false,"first_name":"Ada"},
			"date":1700000000,"old_reaction":[],"new_reaction":[{"type":"custom_emoji","custom_emoji_id":"5368324170671202286"}]}}`,
			transport.Inbound{Channel: "telegram", From: "42", Unsupported: "custom_emoji_reaction", ProviderMessageID: "42:3:reaction:10002", ProviderTimestamp: &at,
				ProfileName: "Ada", ReplyToProviderMessageID: "42:3"}, true},

		{"poll", msg(`"poll":{"id":"1","question":"Lunch?","options":[{"text":"Yes","voter_count":0}],"total_voter_count":0,"is_closed":false,"is_anonymous":true,"type":"regular","allows_multiple_answers":false}`),
			unsupported("poll"), true},
		{"dice", msg(`"dice":{"emoji":"🎲","value":4}`), unsupported("dice"), true},
		{"game", msg(`"game":{"title":"Tetris","description":"x","photo":[]}`), unsupported("game"), true},
		{"invoice", msg(`"invoice":{"title":"T","description":"d","start_parameter":"s","currency":"EUR","total_amount":100}`), unsupported("invoice"), true},
		{"story", msg(`"story":{"chat":{"id":42,"type":"private"},"id":5}`), unsupported("story"), true},

		{"edited message", `{"update_id":1,"edited_message":{"message_id":7,"date":1700000000,"edit_date":1700000100,"chat":{"id":42,"type":"private"},"text":"Hello!"}}`,
			transport.Inbound{}, false},
		{"bot blocked", `{"update_id":1,"my_chat_member":{"chat":{"id":42,"type":"private"},"from":{"id":42,"is_bot":false,"first_name":"Ada"},"date":1700000000,
			"old_chat_member":{"status":"member","user":{"id":123456789,"is_bot":true,"first_name":"Acme"}},
			"new_chat_member":{"status":"kicked","user":{"id":123456789,"is_bot":true,"first_name":"Acme"},"until_date":0}}}`,
			transport.Inbound{}, false},
		{"service message", msg(`"new_chat_title":"Renamed"`), transport.Inbound{}, false},
		{"update id only", `{"update_id":1}`, transport.Inbound{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok, err := telegram.ParseUpdate([]byte(tc.body))
			if err != nil {
				t.Fatalf("ParseUpdate: %v", err)
			}
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseUpdate = %v\n%+v %+v\nwant %v\n%+v %+v", ok, got, got.Content, tc.ok, tc.want, tc.want.Content)
			}
		})
	}
}

func TestParseUpdateRefusesWhatIsNotAnUpdate(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `not json`, `[1,2]`, `{"update_id":1,"message":{"message_id":"seven"}}`,
		`{"update_id":1,"message":{"date":1,"text":"no chat"}}`, `{"update_id":1,"message_reaction":{"message_id":3}}`} {
		if _, ok, err := telegram.ParseUpdate([]byte(body)); err == nil || ok {
			t.Errorf("ParseUpdate(%q) = %v, %v; want an error", body, ok, err)
		} else if strings.Contains(err.Error(), "AAHdq") {
			t.Errorf("error %q", err)
		}
	}
}

func TestCallbackQueryID(t *testing.T) {
	t.Parallel()
	if id, ok := telegram.CallbackQueryID("callback:4382bfdwdsb323b2d9"); !ok || id != "4382bfdwdsb323b2d9" {
		t.Errorf("CallbackQueryID = %q, %v", id, ok)
	}
	for _, other := range []string{"42:7", "callback:", ""} {
		if _, ok := telegram.CallbackQueryID(other); ok {
			t.Errorf("CallbackQueryID(%q) ok", other)
		}
	}
}
