package meta_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
	"github.com/switchboard-io/switchboard/internal/transport/meta"
)

// The accounts and contacts of the payloads in testdata, as Meta's documented examples write them.
const (
	hookPhoneNumberID = "106540352242922"
	hookBusiness      = "+15550783881"
	hookWABA          = "102290129340398"
	hookContact       = "+16505551234"
	hookPage          = "682498302938465"
	hookPSID          = "1254477777772919"
	hookIGAccount     = "17841405822304914"
	hookIGSID         = "6433221234567890"
	hookSent          = "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI3N0EyQUJDMjFEQzZCQUMzODMA"
)

func hookTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hookAt(seconds int64) *time.Time {
	t := time.Unix(seconds, 0).UTC()
	return &t
}

func hookAtMilli(ms int64) *time.Time {
	t := time.UnixMilli(ms).UTC()
	return &t
}

// hookWA is a WhatsApp message from Sheena Nelson (+16505551234) to the business's number.
func hookWA(wamid, messageType, text string, c *transport.Content) meta.HookMessage {
	return meta.HookMessage{AccountID: hookPhoneNumberID, Inbound: transport.Inbound{Channel: "whatsapp",
		From: hookContact, To: hookBusiness, MessageType: messageType, Text: text, Content: c,
		ProviderMessageID: wamid, ProviderTimestamp: hookAt(1739321024), ProfileName: "Sheena Nelson"}}
}

// hookExpect runs a subtest that reads testdata/file and wants exactly want.
func hookExpect(t *testing.T, file string, want meta.Events) {
	t.Run(file, func(t *testing.T) {
		t.Parallel()
		ev, err := meta.ParseWebhook(hookTestdata(t, file))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*ev, want) {
			t.Errorf("got %s\nwant %s", hookJSON(ev), hookJSON(want))
		}
	})
}

func hookJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func TestParseWebhookWhatsAppMessages(t *testing.T) {
	t.Parallel()
	lat, lng := 37.483307, -122.148981
	with := func(m meta.HookMessage, f func(*meta.HookMessage)) meta.HookMessage { f(&m); return m }
	for _, tc := range []struct {
		file string
		want meta.HookMessage
	}{
		{"wa_text_context.json", with(hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUFERjg0NDEzNDdFODU3MUMxMAA=", "text", "Yes, Tuesday works", nil),
			func(m *meta.HookMessage) { m.ReplyToProviderMessageID = hookSent })},
		{"wa_image.json", with(hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUI3RDA2RjY1NDQyRTg5OTkzMgA=", "image", "The receipt",
			&transport.Content{MediaID: "1003383421387256", MimeType: "image/jpeg"}), func(m *meta.HookMessage) {
			m.MediaID, m.MediaMime, m.MediaSHA256 = "1003383421387256", "image/jpeg", "SfInY4Ii4cCfPtpSo9qrqsTPtjBzZTaoYEWSGO3fmPM="
		})},
		{"wa_document.json", with(hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUY1QkQ2MjlFQ0FENjJDMDNDMgA=", "document", "Signed",
			&transport.Content{MediaID: "1374569193671829", MimeType: "application/pdf", Filename: "contract.pdf"}), func(m *meta.HookMessage) {
			m.MediaID, m.MediaMime, m.MediaSHA256 = "1374569193671829", "application/pdf", "Fp6Y2dC0s8r5mI9ho1ZrWm4Tg3eYbWm1Hc8I2Xb4n2Q="
		})},
		{"wa_location.json", hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUM0QTlENjQyRTk0NkU0RTA3MQA=", "location", "",
			&transport.Content{Latitude: &lat, Longitude: &lng, LocationName: "Meta Headquarters", LocationAddress: "1 Hacker Way, Menlo Park, CA 94025"})},
		{"wa_contacts.json", hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUE3OTY3RjY1MjQ0QjAwMDQ1QwA=", "contact", "",
			&transport.Content{Contacts: []transport.ContactCard{
				{Name: "Barbara J. Johnson", Phones: []string{"+1 (940) 555-1234", "+1 (650) 555-1234"}},
				{Name: "Ada Lovelace", Phones: []string{"+447700900123"}},
			}})},
		{"wa_button_reply.json", with(hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=", "text", "Cancel",
			&transport.Content{Buttons: []transport.Button{{ID: "cancel-button", Title: "Cancel"}}}),
			func(m *meta.HookMessage) {
				m.ReplyToProviderMessageID = "wamid.HBgLMTQxMjU1NTA4MjkVAgASGBQzQUNCNjk5RDUwNUZGMUZEM0VBRAA="
			})},
		{"wa_list_reply.json", with(hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTM2RDQ0QTVERTZCNTg2MDFFMgA=", "text", "Priority Mail Express",
			&transport.Content{Buttons: []transport.Button{{ID: "priority_express", Title: "Priority Mail Express"}}}),
			func(m *meta.HookMessage) {
				m.ReplyToProviderMessageID = "wamid.HBgLMTQxMjU1NTA4MjkVAgASGBQzQUNCNjk5RDUwNUZGMUZEM0VBRAA="
			})},
		{"wa_button.json", with(hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUIyQzQ5MEE3NDA3RUVGQjNGMQA=", "text", "Unsubscribe from promotions",
			&transport.Content{Buttons: []transport.Button{{ID: "Unsubscribe from promotions", Title: "Unsubscribe from promotions"}}}),
			func(m *meta.HookMessage) {
				m.ReplyToProviderMessageID = "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJEQjlFMDM4NUY1QzdBOUM4NUUA"
			})},
		{"wa_reaction.json", with(hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUM2QjM2QzA5N0Y4MUY0RkQ2MgA=", "reaction", "",
			&transport.Content{Emoji: "😀"}), func(m *meta.HookMessage) {
			m.ReplyToProviderMessageID = "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA"
		})},
		{"wa_reaction_removed.json", with(hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTc4QkU0NzA4MTY2RTFFMEQ0OAA=", "reaction", "",
			&transport.Content{}), func(m *meta.HookMessage) {
			m.ReplyToProviderMessageID = "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA"
			m.ProviderTimestamp = hookAt(1739321084)
		})},
		{"wa_unsupported.json", with(hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTk5QjA2NDdDNzFGMzY3NTg2NgA=", "", "", nil),
			func(m *meta.HookMessage) { m.Unsupported = "unsupported" })},
		{"wa_order.json", with(hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUJEMjFBQkE0QTFENUUyNDQ4RQA=", "", "", nil),
			func(m *meta.HookMessage) { m.Unsupported = "order" })},
		{"wa_referral.json", with(hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUVCRUE5MzM5NkE1RkNBRUM0RAA=", "text", "Is the sale still on?", nil),
			func(m *meta.HookMessage) {
				m.Referral = &transport.Referral{SourceType: "ad", SourceID: "120226305854810726", SourceURL: "https://fb.me/3cr4Wqqkv",
					Headline: "Summer sale", Body: "Chat with us", MediaType: "image", ImageURL: "https://scontent.xx.fbcdn.net/v/t45.1600-4/ad.jpg",
					ThumbnailURL: "https://scontent.xx.fbcdn.net/v/t45.1600-4/ad_t.jpg", CtwaClid: "Afc3nYt4TTydWM8NOVRRTHBWbuD8ZJDrKZ_8pBcjIxXt1cBMLkr"}
			})},
		{"wa_bsuid_text.json", with(hookWA("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUZBMTlGRjc0NjU3QzJFNkMzRgA=", "text", "Hello", nil),
			func(m *meta.HookMessage) {
				m.From, m.UserID, m.ProviderTimestamp = "US.13491208655302741918", "US.13491208655302741918", hookAt(1775000000)
			})},
	} {
		hookExpect(t, tc.file, meta.Events{Messages: []meta.HookMessage{tc.want}})
	}
}

func TestParseWebhookWhatsAppStatuses(t *testing.T) {
	t.Parallel()
	status := func(wamid, status string, at int64) meta.HookStatus {
		return meta.HookStatus{Channel: "whatsapp", AccountID: hookPhoneNumberID, Recipient: hookContact, Timestamp: *hookAt(at),
			StatusUpdate: transport.StatusUpdate{ProviderMessageID: wamid, Status: status}}
	}
	sent := status(hookSent, transport.StatusSent, 1739321024)
	sent.ConversationID, sent.PricingCategory = "a2f7e2a3b1c9d8e7f6a5b4c3d2e1f0a9", "utility"
	delivered := status(hookSent, transport.StatusDelivered, 1739321026)
	delivered.PricingCategory = "utility"
	read := status(hookSent, transport.StatusRead, 1739321090)
	window := status("wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJGNzE0NzE0NzE0NzE0NzE0NwA=", transport.StatusFailed, 1739321024)
	window.Failure = &transport.Failure{Code: "WHATSAPP_WINDOW_CLOSED", ProviderCode: "131047",
		Message: "Message failed to send because more than 24 hours have passed since the customer last replied to this number."}
	unreachable := status("wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJGMTMxMDI2MTMxMDI2MTMxMAA=", transport.StatusFailed, 1739321024)
	unreachable.Failure = &transport.Failure{Code: "WHATSAPP_UNDELIVERABLE", ProviderCode: "131026", Message: "Message Undeliverable."}
	for _, tc := range []struct {
		file string
		want []meta.HookStatus
	}{
		{"wa_statuses.json", []meta.HookStatus{sent, delivered, read}},
		{"wa_status_failed_131047.json", []meta.HookStatus{window}},
		{"wa_status_failed_131026.json", []meta.HookStatus{unreachable}},
	} {
		hookExpect(t, tc.file, meta.Events{Statuses: tc.want})
	}
}

func TestParseWebhookMessengerInstagram(t *testing.T) {
	t.Parallel()
	fromPSID := func(mid string, ms int64) meta.HookMessage {
		return meta.HookMessage{AccountID: hookPage, Inbound: transport.Inbound{Channel: "messenger", From: hookPSID,
			ProviderMessageID: mid, ProviderTimestamp: hookAtMilli(ms)}}
	}
	fromIGSID := func(id string, ms int64) meta.HookMessage {
		return meta.HookMessage{AccountID: hookIGAccount, Inbound: transport.Inbound{Channel: "instagram", From: hookIGSID,
			ProviderMessageID: id, ProviderTimestamp: hookAtMilli(ms)}}
	}
	text := func(m meta.HookMessage, text string) meta.HookMessage {
		m.MessageType, m.Text = "text", text
		return m
	}
	image := fromPSID("mid.$cAAJdkrCd2ORnva8ErFhjGm0X_Q_c", 1518479195308)
	image.MessageType, image.MediaURL = "image", "https://scontent.xx.fbcdn.net/v/t1.15752-9/photo.jpg"
	image.Content = &transport.Content{MediaURL: image.MediaURL}
	file := fromPSID("mid.$cAAJdkrCd2ORnva8ErFhjGm0X_Q_d", 1518479196000)
	file.MessageType, file.MediaURL = "document", "https://cdn.fbsbx.com/v/t59.2708-21/invoice.pdf"
	file.Content = &transport.Content{MediaURL: file.MediaURL}
	product := fromPSID("mid.$cAAJdkrCd2ORnva8ErFhjGm0X_Q_e", 1518479197000)
	product.Unsupported = "template"
	replyTo := text(fromPSID("m_1457764197618:41d102a3e1ae206a40", 1458692752478), "That one, please")
	replyTo.ReplyToProviderMessageID = "m_1fTq8oLumEyIp3Q2MR-aY7IfLZDamVrALniheU"
	quick := text(fromPSID("m_1457764197618:41d102a3e1ae206a39", 1458692752478), "Red")
	quick.Content = &transport.Content{Buttons: []transport.Button{{ID: "COLOR_RED", Title: "Red"}}}
	postback := text(fromPSID("m_AG5Hz2Uq7tuwNEhXfYYKj8mJEM_QPpz5jdCK48PnKAjSdjfipqxqMvK8ma6AC8fplwlqLP_5cgXIbu7I3rBN0P", 1458692752478), "Get Started")
	postback.Content = &transport.Content{Buttons: []transport.Button{{ID: "GET_STARTED", Title: "Get Started"}}}
	postback.Referral = &transport.Referral{SourceType: "shortlink", SourceID: "summer-promo"}

	igMID := "aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3ODQxNDA1ODIyMzA0OTE0OjM0MDI4MjM2Njg0MTcxMDMwMTI0NDI1OTY1NTg5OTA2NTY1NjAyODo="
	react := fromIGSID(igMID+":reaction:1569262485349", 1569262485349)
	react.MessageType, react.Content, react.ReplyToProviderMessageID = "reaction", &transport.Content{Emoji: "❤️"}, igMID
	unreact := fromIGSID(igMID+":reaction:1569262499000", 1569262499000)
	unreact.MessageType, unreact.Content, unreact.ReplyToProviderMessageID = "reaction", &transport.Content{}, igMID

	for _, tc := range []struct {
		file string
		want meta.Events
	}{
		{"messenger_text.json", meta.Events{Messages: []meta.HookMessage{text(fromPSID("m_1457764197618:41d102a3e1ae206a38", 1458692752478), "hello, world!")}}},
		{"messenger_attachment.json", meta.Events{Messages: []meta.HookMessage{image, file, product}}},
		{"messenger_reply_to.json", meta.Events{Messages: []meta.HookMessage{replyTo}}},
		{"messenger_quick_reply.json", meta.Events{Messages: []meta.HookMessage{quick}}},
		{"messenger_echo.json", meta.Events{}},
		{"messenger_read.json", meta.Events{Statuses: []meta.HookStatus{{Channel: "messenger", AccountID: hookPage, Recipient: hookPSID,
			Timestamp: *hookAtMilli(1458668856463), Watermark: *hookAtMilli(1458668856253),
			StatusUpdate: transport.StatusUpdate{Status: transport.StatusRead}}}}},
		{"messenger_delivery.json", meta.Events{Statuses: []meta.HookStatus{
			{Channel: "messenger", AccountID: hookPage, Recipient: hookPSID, Timestamp: *hookAtMilli(1458668856253),
				StatusUpdate: transport.StatusUpdate{ProviderMessageID: "mid.1458668856218:ed81099e15d3f4f233", Status: transport.StatusDelivered}},
			{Channel: "messenger", AccountID: hookPage, Recipient: hookPSID, Timestamp: *hookAtMilli(1458668856300), Watermark: *hookAtMilli(1458668856300),
				StatusUpdate: transport.StatusUpdate{Status: transport.StatusDelivered}},
		}}},
		{"messenger_postback.json", meta.Events{Messages: []meta.HookMessage{postback}, Referrals: []meta.HookReferral{{
			Channel: "messenger", AccountID: hookPage, From: hookPSID, Timestamp: *hookAtMilli(1458692760000),
			Referral: transport.Referral{SourceType: "ad", SourceID: "6045246247433", Headline: "Spring sale", MediaType: "image",
				ImageURL: "https://scontent.xx.fbcdn.net/v/ad.jpg"}}}}},
		{"instagram_message.json", meta.Events{Messages: []meta.HookMessage{text(fromIGSID(
			"aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3ODQxNDA1ODIyMzA0OTE0OjM0MDI4MjM2Njg0MTcxMDMwMTI0NDI1OTY1NTg5OTA2NTY1NjAyOTo=", 1569262485349),
			"Do you ship to Lisbon?")}}},
		{"instagram_reaction.json", meta.Events{Messages: []meta.HookMessage{react, unreact}, Statuses: []meta.HookStatus{{
			Channel: "instagram", AccountID: hookIGAccount, Recipient: hookIGSID, Timestamp: *hookAtMilli(1569262500000),
			StatusUpdate: transport.StatusUpdate{ProviderMessageID: igMID, Status: transport.StatusRead}}}}},
	} {
		hookExpect(t, tc.file, tc.want)
	}
}

func TestParseWebhookTemplatesAccounts(t *testing.T) {
	t.Parallel()
	at := *hookAt(1739321024)
	for _, tc := range []struct {
		file string
		want meta.Events
	}{
		{"template_approved.json", meta.Events{Templates: []meta.TemplateUpdate{{WABAID: hookWABA, TemplateID: "1689556908129832",
			Name: "order_confirmation", Language: "en_US", Event: "APPROVED", Category: "UTILITY", Timestamp: at}}}},
		{"template_rejected.json", meta.Events{Templates: []meta.TemplateUpdate{{WABAID: hookWABA, TemplateID: "1689556908129833",
			Name: "summer_promo", Language: "pt_BR", Event: "REJECTED", Reason: "INVALID_FORMAT", Category: "MARKETING", Timestamp: at}}}},
		{"template_category.json", meta.Events{Templates: []meta.TemplateUpdate{{WABAID: hookWABA, TemplateID: "1689556908129832",
			Name: "order_confirmation", Language: "en_US", Category: "MARKETING", PreviousCategory: "UTILITY", Timestamp: at}}}},
		{"template_category_impending.json", meta.Events{Templates: []meta.TemplateUpdate{{WABAID: hookWABA, TemplateID: "1689556908129832",
			Name: "order_confirmation", Language: "en_US", Category: "UTILITY", PendingCategory: "MARKETING", PendingAt: *hookAt(1739580224), Timestamp: at}}}},
		{"template_quality.json", meta.Events{Templates: []meta.TemplateUpdate{{WABAID: hookWABA, TemplateID: "1689556908129832",
			Name: "order_confirmation", Language: "en_US", Quality: "YELLOW", PreviousQuality: "GREEN", Timestamp: at}}}},
		{"account_name_update.json", meta.Events{Accounts: []meta.AccountUpdate{{WABAID: hookWABA, Field: "phone_number_name_update",
			PhoneNumber: hookBusiness, Event: "REJECTED", Name: "Acme Support", Reason: "DISPLAY_NAME_DOES_NOT_MATCH", Timestamp: at}}}},
		{"account_update.json", meta.Events{Accounts: []meta.AccountUpdate{{WABAID: hookWABA, Field: "account_update",
			PhoneNumber: hookBusiness, Event: "ACCOUNT_VIOLATION", Reason: "SCAM", Timestamp: at}}}},
	} {
		hookExpect(t, tc.file, tc.want)
	}
}

// hookEnvelope is a WhatsApp messages change whose value is value.
func hookEnvelope(value string) string {
	return `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":` + value + `}]}]}`
}

func TestParseWebhookLeavesOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body string }{
		{"another object", `{"object":"user","entry":[{"id":"1","changes":[{"field":"feed","value":{"x":1}}]}]}`},
		{"another field", `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"smb_message_echoes","value":{"messages":"not read"}}]}]}`},
		{"no entries", `{"object":"page"}`},
		{"null", `null`},
		{"an empty value", hookEnvelope(`{}`)},
		{"a Messenger standby event", `{"object":"page","entry":[{"id":"9","time":1,"standby":[{"sender":{"id":"9"},"recipient":{"id":"7"},"message":{"mid":"m","text":"x"}}]}]}`},
		{"a deleted Instagram message", `{"object":"instagram","entry":[{"id":"9","time":1,"messaging":[{"sender":{"id":"7"},"recipient":{"id":"9"},"timestamp":1,"message":{"mid":"m","is_deleted":true}}]}]}`},
		{"an echo without is_echo", `{"object":"instagram","entry":[{"id":"9","time":1,"messaging":[{"sender":{"id":"9"},"recipient":{"id":"7"},"timestamp":1,"message":{"mid":"m","text":"x"}}]}]}`},
		{"Messenger events Switchboard keeps nothing of", `{"object":"page","entry":[{"id":"9","time":1,"messaging":[{"sender":{"id":"7"},"recipient":{"id":"9"},"timestamp":1,"optin":{"ref":"x"}}]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, err := meta.ParseWebhook([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*ev, meta.Events{}) {
				t.Errorf("got %s, want nothing", hookJSON(ev))
			}
		})
	}
}

func TestParseWebhookUnknownFieldsAndKinds(t *testing.T) {
	t.Parallel()
	body := hookEnvelope(`{"messaging_product":"whatsapp","brand_new":{"a":[1,2]},"metadata":{"display_phone_number":"15550783881","phone_number_id":"77","extra":true},
		"contacts":[{"profile":{"name":"Ann","pronouns":"she"},"wa_id":"4412","identity_key_hash":"x"}],
		"messages":[
			{"from":"4412","id":"w1","timestamp":"5","type":"text","text":{"body":"hi","future":1},"context":{"from":"1","id":"w0","forwarded":true,"frequently_forwarded":true}},
			{"from":"4412","id":"w2","timestamp":"6","type":"hologram","hologram":{"id":"h"}},
			{"from":"4412","id":"w3","timestamp":"7","type":"interactive","interactive":{"type":"nfm_reply","nfm_reply":{"response_json":"{}"}}},
			{"from":"4412","id":"w4","timestamp":"8","type":"unsupported","unsupported":{"type":"poll"}},
			{"from":"4412","id":"w5","timestamp":"9","type":"system","system":{"body":"changed","type":"user_changed_number"}},
			{"from":"4412","id":"w6","timestamp":"10","group_id":"g1","type":"text","text":{"body":"to the group"}}
		]}`)
	ev, err := meta.ParseWebhook([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ev.Messages {
		got = append(got, m.ProviderMessageID+" "+m.MessageType+"/"+m.Unsupported+" "+m.Text+" "+m.ReplyToProviderMessageID+" "+m.From+" "+m.ProfileName)
	}
	want := []string{
		"w1 text/ hi w0 +4412 Ann",
		"w2 /hologram   +4412 Ann",
		"w3 /nfm_reply   +4412 Ann",
		"w4 /poll   +4412 Ann",
		"w5 /system   +4412 Ann",
		"w6 /group   +4412 Ann",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseWebhookErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{"not JSON", `{"object":`, "meta: read webhook"},
		{"an array", `[]`, "meta: read webhook"},
		{"entry not an array", `{"object":"page","entry":{}}`, "meta: read webhook"},
		{"a message without an id", `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[]},{"id":"1","changes":[{"field":"messages",
			"value":{"metadata":{"phone_number_id":"2"},"messages":[{"from":"1","type":"text","text":{"body":"x"}}]}}]}]}`, "entry 1: change 0 (messages): message 0: no id"},
		{"a message without a sender", hookEnvelope(`{"messages":[{"id":"w","type":"text","text":{"body":"x"}}]}`), "entry 0: change 0 (messages): message 0: no sender"},
		{"a status without an id", hookEnvelope(`{"statuses":[{"status":"sent"}]}`), "status 0: no id"},
		{"an image without its object", hookEnvelope(`{"messages":[{"from":"1","id":"w","type":"image"}]}`), "image without its image object"},
		{"a number where a string goes", hookEnvelope(`{"messages":[{"from":1,"id":"w","type":"text"}]}`), "entry 0: change 0 (messages)"},
		{"a timestamp that is no time", hookEnvelope(`{"messages":[{"from":"1","id":"w","timestamp":"soon","type":"text","text":{}}]}`), "not a Unix time"},
		{"an id that is an object", `{"object":"page","entry":[{"id":{"a":1},"messaging":[]}]}`, "entry 0: an id is an object"},
		{"a Messenger message without a mid", `{"object":"page","entry":[{"id":"9","messaging":[{"sender":{"id":"7"},"recipient":{"id":"9"},"message":{"text":"x"}}]}]}`,
			"entry 0: messaging 0: a message without a mid"},
		{"a Messenger event without a sender", `{"object":"page","entry":[{"id":"9","messaging":[{"recipient":{"id":"9"},"read":{"watermark":5}}]}]}`,
			"entry 0: messaging 0: no sender id"},
		{"a template change without a template", `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"message_template_status_update","value":{"event":"APPROVED"}}]}]}`,
			"change 0 (message_template_status_update): no template id or name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, err := meta.ParseWebhook([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want an error containing %q", hookJSON(ev), err, tc.want)
			}
			if ev != nil {
				t.Errorf("events beside an error: %s", hookJSON(ev))
			}
		})
	}
}

// FuzzParseWebhook: whatever arrives, ParseWebhook answers events or an error, never both,
// and never panics.
func FuzzParseWebhook(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") {
			b, err := os.ReadFile(filepath.Join("testdata", e.Name()))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte(`{"object":"page","entry":[{"messaging":[{"sender":{"id":1},"delivery":{"mids":[""]}}]}]}`))
	f.Add([]byte(`{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"account_update","value":{"phone_number":5}}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := meta.ParseWebhook(body)
		if (ev == nil) == (err == nil) {
			t.Fatalf("events %v and error %v", ev, err)
		}
	})
}
