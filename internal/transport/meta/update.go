package meta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// Events is what one webhook post carries, each list in the order Meta wrote it. Meta batches:
// one post may hold several entries, each with several changes or messaging events.
type Events struct {
	// Statuses are reports on messages the business sent.
	Statuses []HookStatus
	// Messages are the contacts' messages, reactions and button presses.
	Messages []HookMessage
	// Referrals are Messenger and Instagram referrals that came without a message: a contact
	// already in a thread opened it again from an ad or an m.me / ig.me link.
	Referrals []HookReferral
	// Templates are changes of a WhatsApp template's status, category or quality.
	Templates []TemplateUpdate
	// Accounts are changes of a WhatsApp business account or phone number.
	Accounts []AccountUpdate
	// Coexistence is what a number onboarded from the WhatsApp Business app syncs: its app's
	// contacts, its history, and the messages the business sends from the app (coexistence.go).
	Coexistence
}

// HookStatus is a report on a message the business sent.
type HookStatus struct {
	// Channel is whatsapp, messenger or instagram.
	Channel string
	// AccountID is the business's account the message left from: the phone number id
	// (WhatsApp), the page id (Messenger), the Instagram account id.
	AccountID string
	// StatusUpdate names the message (ProviderMessageID: the wamid or mid) and what became of
	// it. Status is empty for a report that changes nothing (WhatsApp's deleted and warning).
	transport.StatusUpdate
	// Recipient is the contact the message went to: an E.164 number or a business-scoped user
	// id (WhatsApp), a PSID (Messenger), an IGSID (Instagram).
	Recipient string
	// Timestamp is when the status changed, as Meta says.
	Timestamp time.Time
	// Watermark is set, and ProviderMessageID empty, when Messenger reports by time rather than
	// by message: every message the page sent Recipient at or before Watermark reached Status
	// (a read, or a delivery from an old client).
	Watermark time.Time
	// ConversationID and PricingCategory are WhatsApp's conversation and its pricing category
	// (marketing, utility, authentication, service, …), when the status carries them.
	ConversationID  string
	PricingCategory string
	// Temporary is set on a failure whose code is worth sending the message again later (a
	// rate limit, Meta's outage): the message failed all the same, Meta does not send it again.
	Temporary bool
}

// HookMessage is a contact's message. Inbound is what Switchboard stores: its Channel, From
// (an E.164 number or BSUID on WhatsApp, the PSID or IGSID on Messenger and Instagram), To (the
// business's WhatsApp number; empty on Messenger and Instagram, where the account is the
// address), the type and content, ReplyToProviderMessageID (the message the contact quoted or
// reacted to), Referral, and Unsupported naming what Switchboard cannot represent.
type HookMessage struct {
	transport.Inbound
	// AccountID is the business's account written to: the phone number id (WhatsApp), the page
	// id (Messenger), the Instagram account id.
	AccountID string
	// UserID is the WhatsApp contact's business-scoped user id (BSUID) when Meta gave one;
	// From is the phone number when Meta gave that too.
	UserID string
	// The media the message carries, to fetch: WhatsApp gives an id (GET /<id> on the Graph API
	// gives a short-lived URL) with its MIME type and SHA-256; Messenger and Instagram give a
	// URL of Meta's CDN, valid for a while. Content carries the same id, type and URL.
	MediaID     string
	MediaURL    string
	MediaMime   string
	MediaSHA256 string
}

// HookReferral is a referral that came without a message (Messenger, Instagram).
type HookReferral struct {
	Channel   string
	AccountID string
	// From is the contact (PSID or IGSID).
	From      string
	Timestamp time.Time
	transport.Referral
}

// TemplateUpdate is a change Meta made to a WhatsApp template: its status
// (message_template_status_update), its category (template_category_update), or its quality
// (message_template_quality_update).
type TemplateUpdate struct {
	WABAID string
	// TemplateID is Meta's id of the template; Name and Language name it as a send does.
	TemplateID string
	Name       string
	Language   string
	// Event is the new status: APPROVED, REJECTED, PENDING, PAUSED, DISABLED, FLAGGED,
	// IN_APPEAL, REINSTATED, PENDING_DELETION, ARCHIVED, … as Meta writes it. Empty for a
	// category or quality change.
	Event string
	// Reason is why (a rejection's reason); Meta's "NONE" is left out.
	Reason string
	// Category is the category Meta bills the template under now (MARKETING, UTILITY,
	// AUTHENTICATION); PreviousCategory what it was before a category change.
	Category         string
	PreviousCategory string
	// PendingCategory is the category Meta announced it will move the template to at
	// PendingAt (an impending category change, which changes nothing yet).
	PendingCategory string
	PendingAt       time.Time
	// Quality and PreviousQuality are the quality scores of a quality change (GREEN, YELLOW,
	// RED, UNKNOWN).
	Quality         string
	PreviousQuality string
	// Timestamp is when Meta sent the change.
	Timestamp time.Time
}

// AccountUpdate is a change of a WhatsApp business account or of one of its numbers.
type AccountUpdate struct {
	WABAID string
	// Field is the webhook field: phone_number_name_update, phone_number_quality_update or
	// account_update.
	Field string
	// PhoneNumber is the number concerned, with its "+"; empty when the change is the account's.
	PhoneNumber string
	// Event is what happened: the decision of a display name review (APPROVED, REJECTED,
	// DEFERRED), the event of a quality or account update (FLAGGED, UPGRADE, VERIFIED_ACCOUNT,
	// DISABLED_UPDATE, ACCOUNT_VIOLATION, …).
	Event string
	// Name is the display name a name update decided on.
	Name string
	// Reason is a rejection's reason, or the violation type of an account violation.
	Reason string
	// Limit is a quality update's messaging limit tier (TIER_1K, …).
	Limit     string
	Timestamp time.Time
}

// ParseWebhook reads what Meta posted to a webhook (after VerifySignature): the envelope
// {"object": …, "entry": [...]} of a WhatsApp business account (object whatsapp_business_account,
// changes of the fields messages, message_template_status_update, template_category_update,
// message_template_quality_update, phone_number_name_update, phone_number_quality_update and
// account_update), of a page (object page, Messenger's messaging events) or of an Instagram
// account (object instagram, its messaging events).
//
// Left out, as they carry nothing Switchboard keeps: other objects and fields (Meta adds
// them), fields Meta adds to the ones read, Messenger's standby channel (events for another app
// in control of the thread), echoes of the business's own messages (Messenger's), messages a
// contact deleted, and the value-level errors of the messages field.
//
// An entry that cannot be read (a member of the wrong type, a message or status without an id)
// fails the whole post with an error naming the entry's index.
func ParseWebhook(body []byte) (*Events, error) {
	var env struct {
		Object string            `json:"object"`
		Entry  []json.RawMessage `json:"entry"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("meta: read webhook: %w", err)
	}
	ev := &Events{}
	for i, raw := range env.Entry {
		var err error
		switch env.Object {
		case "whatsapp_business_account":
			err = ev.hookWhatsAppEntry(raw)
		case "page":
			err = ev.hookMessagingEntry(string(v1alpha1.ChannelMessenger), raw)
		case "instagram":
			err = ev.hookMessagingEntry(string(v1alpha1.ChannelInstagram), raw)
		default:
			return ev, nil
		}
		if err != nil {
			return nil, fmt.Errorf("meta: read webhook: entry %d: %w", i, err)
		}
	}
	return ev, nil
}

// hookID is an id Meta writes as a string or as a number (template ids, some page ids): its
// text either way.
type hookID string

func (id *hookID) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*id = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = hookID(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("an id is %s, not a string or number", hookKind(b))
		}
		*id = hookID(n)
	}
	return nil
}

// hookUnix is a Unix time Meta writes as a number or as a string of digits: seconds on
// WhatsApp, milliseconds on Messenger and Instagram.
type hookUnix int64

func (u *hookUnix) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*u = 0
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "" {
			*u = 0
			return nil
		}
		b = []byte(s)
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		// A number with a fraction or an exponent: its whole part.
		f, ferr := strconv.ParseFloat(string(b), 64)
		if ferr != nil || f < -1e15 || f > 1e15 {
			return fmt.Errorf("a timestamp is %s, not a Unix time", hookKind(b))
		}
		n = int64(f)
	}
	*u = hookUnix(n)
	return nil
}

func (u hookUnix) seconds() time.Time {
	if u <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(u), 0).UTC()
}

func (u hookUnix) millis() time.Time {
	if u <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(u)).UTC()
}

// hookKind names the JSON kind of b for an error; never its content.
func hookKind(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "empty"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

func hookTimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// hookE164 is a number as Meta writes it (digits, without "+") in E.164; a business-scoped user
// id or anything else that is not digits is kept as it is.
func hookE164(number string) string {
	number = strings.TrimSpace(number)
	if number == "" || strings.HasPrefix(number, "+") {
		return number
	}
	for _, c := range number {
		if c < '0' || c > '9' {
			return number
		}
	}
	return "+" + number
}

// hookDisplayNumber is a business's display number in E.164: Meta writes it in digits, and
// sometimes formatted ("+1 555-078-3881").
func hookDisplayNumber(display string) string {
	var b strings.Builder
	for _, c := range display {
		if c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "+" + b.String()
}

// ---- WhatsApp ----

type hookWAEntry struct {
	ID      hookID   `json:"id"`
	Time    hookUnix `json:"time"`
	Changes []struct {
		Field string          `json:"field"`
		Value json.RawMessage `json:"value"`
	} `json:"changes"`
}

type hookWAValue struct {
	Metadata struct {
		DisplayPhoneNumber string `json:"display_phone_number"`
		PhoneNumberID      hookID `json:"phone_number_id"`
	} `json:"metadata"`
	Contacts []hookWAContact `json:"contacts"`
	Messages []hookWAMessage `json:"messages"`
	Statuses []hookWAStatus  `json:"statuses"`
}

type hookWAContact struct {
	Profile struct {
		Name string `json:"name"`
	} `json:"profile"`
	WaID   string `json:"wa_id"`
	UserID string `json:"user_id"`
}

type hookWAMedia struct {
	ID       hookID `json:"id"`
	MimeType string `json:"mime_type"`
	SHA256   string `json:"sha256"`
	Caption  string `json:"caption"`
	Filename string `json:"filename"`
}

// hookWAReferral is WhatsApp's referral; its fields are transport.Referral's, in its order.
type hookWAReferral struct {
	SourceType   string `json:"source_type"`
	SourceID     string `json:"source_id"`
	SourceURL    string `json:"source_url"`
	Headline     string `json:"headline"`
	Body         string `json:"body"`
	MediaType    string `json:"media_type"`
	ImageURL     string `json:"image_url"`
	VideoURL     string `json:"video_url"`
	ThumbnailURL string `json:"thumbnail_url"`
	CtwaClid     string `json:"ctwa_clid"`
}

type hookWAMessage struct {
	From       string   `json:"from"`
	FromUserID string   `json:"from_user_id"`
	ID         string   `json:"id"`
	Timestamp  hookUnix `json:"timestamp"`
	Type       string   `json:"type"`
	GroupID    string   `json:"group_id"`
	Context    *struct {
		ID string `json:"id"`
	} `json:"context"`
	Referral *hookWAReferral `json:"referral"`
	Text     *struct {
		Body string `json:"body"`
	} `json:"text"`
	Image    *hookWAMedia `json:"image"`
	Video    *hookWAMedia `json:"video"`
	Audio    *hookWAMedia `json:"audio"`
	Document *hookWAMedia `json:"document"`
	Sticker  *hookWAMedia `json:"sticker"`
	Location *struct {
		Latitude  float64 `json:"latitude"`
		Longitude float64 `json:"longitude"`
		Name      string  `json:"name"`
		Address   string  `json:"address"`
	} `json:"location"`
	Contacts []struct {
		Name struct {
			FormattedName string `json:"formatted_name"`
			FirstName     string `json:"first_name"`
			LastName      string `json:"last_name"`
		} `json:"name"`
		Phones []struct {
			Phone string `json:"phone"`
			WaID  string `json:"wa_id"`
		} `json:"phones"`
	} `json:"contacts"`
	Interactive *struct {
		Type        string `json:"type"`
		ButtonReply *struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"button_reply"`
		ListReply *struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"list_reply"`
	} `json:"interactive"`
	Button *struct {
		Payload string `json:"payload"`
		Text    string `json:"text"`
	} `json:"button"`
	Reaction *struct {
		MessageID string `json:"message_id"`
		Emoji     string `json:"emoji"`
	} `json:"reaction"`
	Unsupported *struct {
		Type string `json:"type"`
	} `json:"unsupported"`
}

type hookWAStatus struct {
	ID              string   `json:"id"`
	Status          string   `json:"status"`
	Timestamp       hookUnix `json:"timestamp"`
	RecipientID     string   `json:"recipient_id"`
	RecipientUserID string   `json:"recipient_user_id"`
	Conversation    *struct {
		ID     string `json:"id"`
		Origin struct {
			Type string `json:"type"`
		} `json:"origin"`
	} `json:"conversation"`
	Pricing *struct {
		Category string `json:"category"`
	} `json:"pricing"`
	Errors []struct {
		Code      int    `json:"code"`
		Title     string `json:"title"`
		Message   string `json:"message"`
		ErrorData struct {
			Details string `json:"details"`
		} `json:"error_data"`
	} `json:"errors"`
}

// hookWATemplateValue holds the values of the three template fields.
type hookWATemplateValue struct {
	Event                   string   `json:"event"`
	MessageTemplateID       hookID   `json:"message_template_id"`
	MessageTemplateName     string   `json:"message_template_name"`
	MessageTemplateLanguage string   `json:"message_template_language"`
	Reason                  string   `json:"reason"`
	MessageTemplateCategory string   `json:"message_template_category"`
	NewCategory             string   `json:"new_category"`
	PreviousCategory        string   `json:"previous_category"`
	CorrectCategory         string   `json:"correct_category"`
	CategoryUpdateTimestamp hookUnix `json:"category_update_timestamp"`
	NewQualityScore         string   `json:"new_quality_score"`
	PreviousQualityScore    string   `json:"previous_quality_score"`
}

func (e *Events) hookWhatsAppEntry(raw json.RawMessage) error {
	var entry hookWAEntry
	if err := json.Unmarshal(raw, &entry); err != nil {
		return err
	}
	at := entry.Time.seconds()
	for j, ch := range entry.Changes {
		if len(ch.Value) == 0 || string(ch.Value) == "null" {
			continue
		}
		var err error
		switch ch.Field {
		case "messages":
			err = e.hookWhatsAppMessages(ch.Value)
		case "message_template_status_update", "template_category_update", "message_template_quality_update":
			err = e.hookTemplate(string(entry.ID), ch.Field, at, ch.Value)
		case "phone_number_name_update", "phone_number_quality_update", "account_update":
			err = e.hookAccount(string(entry.ID), ch.Field, at, ch.Value)
		case "smb_app_state_sync", "history", "smb_message_echoes":
			err = e.hookCoexistence(string(entry.ID), ch.Field, at, ch.Value)
		}
		if err != nil {
			return fmt.Errorf("change %d (%s): %w", j, ch.Field, err)
		}
	}
	return nil
}

func (e *Events) hookWhatsAppMessages(raw json.RawMessage) error {
	var v hookWAValue
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	account := string(v.Metadata.PhoneNumberID)
	to := hookDisplayNumber(v.Metadata.DisplayPhoneNumber)
	for k, s := range v.Statuses {
		st, err := hookWhatsAppStatus(account, s)
		if err != nil {
			return fmt.Errorf("status %d: %w", k, err)
		}
		e.Statuses = append(e.Statuses, st)
	}
	for k, m := range v.Messages {
		msg, err := hookWhatsAppMessage(account, to, v.Contacts, m)
		if err != nil {
			return fmt.Errorf("message %d: %w", k, err)
		}
		e.Messages = append(e.Messages, msg)
	}
	return nil
}

func hookWhatsAppStatus(account string, s hookWAStatus) (HookStatus, error) {
	if s.ID == "" {
		return HookStatus{}, errors.New("no id")
	}
	st := HookStatus{Channel: string(v1alpha1.ChannelWhatsApp), AccountID: account,
		StatusUpdate: transport.StatusUpdate{ProviderMessageID: s.ID},
		Recipient:    hookE164(s.RecipientID), Timestamp: s.Timestamp.seconds()}
	if st.Recipient == "" {
		st.Recipient = s.RecipientUserID
	}
	if c := s.Conversation; c != nil {
		st.ConversationID, st.PricingCategory = c.ID, c.Origin.Type
	}
	if p := s.Pricing; p != nil && p.Category != "" {
		st.PricingCategory = p.Category
	}
	switch s.Status {
	case "sent":
		st.Status = transport.StatusSent
	case "delivered":
		st.Status = transport.StatusDelivered
	case "read":
		st.Status = transport.StatusRead
	case "failed":
		st.Status = transport.StatusFailed
		if len(s.Errors) == 0 {
			st.Failure, _ = failureOf(0, "", "")
			break
		}
		er := s.Errors[0]
		message := er.ErrorData.Details
		if message == "" {
			message = er.Message
		}
		st.Failure, st.Temporary = failureOf(er.Code, er.Title, message)
	}
	return st, nil
}

func hookWhatsAppMessage(account, to string, contacts []hookWAContact, m hookWAMessage) (HookMessage, error) {
	if m.ID == "" {
		return HookMessage{}, errors.New("no id")
	}
	var contact hookWAContact
	for _, c := range contacts {
		if (m.From != "" && c.WaID == m.From) || (m.FromUserID != "" && c.UserID == m.FromUserID) {
			contact = c
			break
		}
	}
	if contact == (hookWAContact{}) && len(contacts) == 1 {
		contact = contacts[0]
	}
	userID := m.FromUserID
	if userID == "" {
		userID = contact.UserID
	}
	from := hookE164(m.From)
	if from == "" {
		from = userID
	}
	if from == "" {
		return HookMessage{}, errors.New("no sender (from or from_user_id)")
	}
	msg := HookMessage{AccountID: account, UserID: userID, Inbound: transport.Inbound{
		Channel: string(v1alpha1.ChannelWhatsApp), From: from, To: to, ProviderMessageID: m.ID,
		ProviderTimestamp: hookTimePtr(m.Timestamp.seconds()), ProfileName: contact.Profile.Name}}
	if m.Context != nil {
		msg.ReplyToProviderMessageID = m.Context.ID
	}
	if m.Referral != nil {
		r := transport.Referral(*m.Referral)
		msg.Referral = &r
	}
	unsupported := func(kind string) (HookMessage, error) {
		msg.Unsupported = kind
		return msg, nil
	}
	missing := func() (HookMessage, error) {
		return HookMessage{}, fmt.Errorf("a message of type %s without its %s object", m.Type, m.Type)
	}
	media := func(f *hookWAMedia) (HookMessage, error) {
		if f == nil {
			return missing()
		}
		msg.MessageType, msg.Text = m.Type, f.Caption
		msg.MediaID, msg.MediaMime, msg.MediaSHA256 = string(f.ID), f.MimeType, f.SHA256
		msg.Content = &transport.Content{MediaID: string(f.ID), MimeType: f.MimeType, Filename: f.Filename}
		return msg, nil
	}
	reply := func(id, title string) (HookMessage, error) {
		msg.MessageType, msg.Text = "text", title
		msg.Content = &transport.Content{Buttons: []transport.Button{{ID: id, Title: title}}}
		return msg, nil
	}

	if m.GroupID != "" {
		// Groups API: a message to a group, which Switchboard neither stores nor answers.
		return unsupported("group")
	}
	switch m.Type {
	case "text":
		if m.Text == nil {
			return missing()
		}
		msg.MessageType, msg.Text = "text", m.Text.Body
		return msg, nil
	case "image":
		return media(m.Image)
	case "video":
		return media(m.Video)
	case "audio":
		return media(m.Audio)
	case "document":
		return media(m.Document)
	case "sticker":
		return media(m.Sticker)
	case "location":
		if m.Location == nil {
			return missing()
		}
		lat, lng := m.Location.Latitude, m.Location.Longitude
		msg.MessageType = "location"
		msg.Content = &transport.Content{Latitude: &lat, Longitude: &lng, LocationName: m.Location.Name, LocationAddress: m.Location.Address}
		return msg, nil
	case "contacts":
		if len(m.Contacts) == 0 {
			return missing()
		}
		cards := make([]transport.ContactCard, 0, len(m.Contacts))
		for _, c := range m.Contacts {
			card := transport.ContactCard{Name: c.Name.FormattedName}
			if card.Name == "" {
				card.Name = strings.TrimSpace(c.Name.FirstName + " " + c.Name.LastName)
			}
			for _, p := range c.Phones {
				if p.Phone != "" {
					card.Phones = append(card.Phones, p.Phone)
				} else if p.WaID != "" {
					card.Phones = append(card.Phones, hookE164(p.WaID))
				}
			}
			cards = append(cards, card)
		}
		msg.MessageType = "contact"
		msg.Content = &transport.Content{Contacts: cards}
		return msg, nil
	case "interactive":
		i := m.Interactive
		switch {
		case i == nil:
			return missing()
		case i.Type == "button_reply" && i.ButtonReply != nil:
			return reply(i.ButtonReply.ID, i.ButtonReply.Title)
		case i.Type == "list_reply" && i.ListReply != nil:
			return reply(i.ListReply.ID, i.ListReply.Title)
		case i.Type != "":
			return unsupported(i.Type) // nfm_reply (a Flow's answer), call_permission_reply, …
		}
		return unsupported("interactive")
	case "button":
		if m.Button == nil {
			return missing()
		}
		return reply(m.Button.Payload, m.Button.Text)
	case "reaction":
		if m.Reaction == nil {
			return missing()
		}
		msg.MessageType = "reaction"
		msg.Content = &transport.Content{Emoji: m.Reaction.Emoji}
		msg.ReplyToProviderMessageID = m.Reaction.MessageID
		return msg, nil
	case "unsupported":
		if m.Unsupported != nil && m.Unsupported.Type != "" {
			return unsupported(m.Unsupported.Type)
		}
		return unsupported("unsupported")
	case "":
		return unsupported("unknown")
	}
	// order, system, unknown, request_welcome, and what Meta adds.
	return unsupported(m.Type)
}

func (e *Events) hookTemplate(waba, field string, at time.Time, raw json.RawMessage) error {
	var v hookWATemplateValue
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	t := TemplateUpdate{WABAID: waba, TemplateID: string(v.MessageTemplateID), Name: v.MessageTemplateName,
		Language: v.MessageTemplateLanguage, Timestamp: at}
	switch field {
	case "message_template_status_update":
		t.Event, t.Category = v.Event, v.MessageTemplateCategory
		if !strings.EqualFold(v.Reason, "NONE") {
			t.Reason = v.Reason
		}
	case "template_category_update":
		// A change made: previous_category → new_category. A change announced: new_category is
		// the category now, correct_category the one it moves to at category_update_timestamp.
		t.Category, t.PreviousCategory = v.NewCategory, v.PreviousCategory
		t.PendingCategory, t.PendingAt = v.CorrectCategory, v.CategoryUpdateTimestamp.seconds()
	case "message_template_quality_update":
		t.Quality, t.PreviousQuality = v.NewQualityScore, v.PreviousQualityScore
	}
	if t.TemplateID == "" && t.Name == "" {
		return errors.New("no template id or name")
	}
	e.Templates = append(e.Templates, t)
	return nil
}

// hookAccount reads an account or number change leniently: these values vary more than the
// others between Meta's versions, so a member of an unexpected type is left empty rather than
// failing the post.
func (e *Events) hookAccount(waba, field string, at time.Time, raw json.RawMessage) error {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	str := func(m map[string]json.RawMessage, key string) string {
		var id hookID
		if json.Unmarshal(m[key], &id) != nil {
			return ""
		}
		return string(id)
	}
	obj := func(key string) map[string]json.RawMessage {
		var o map[string]json.RawMessage
		_ = json.Unmarshal(v[key], &o)
		return o
	}
	a := AccountUpdate{WABAID: waba, Field: field, Timestamp: at, Event: str(v, "event"), Name: str(v, "requested_verified_name"),
		Reason: str(v, "rejection_reason"), Limit: str(v, "current_limit")}
	number := str(v, "display_phone_number")
	if number == "" {
		number = str(v, "phone_number")
	}
	a.PhoneNumber = hookDisplayNumber(number)
	if a.Event == "" {
		a.Event = str(v, "decision")
	}
	if strings.EqualFold(a.Reason, "NONE") {
		a.Reason = ""
	}
	if a.Reason == "" {
		a.Reason = str(obj("violation_info"), "violation_type")
	}
	e.Accounts = append(e.Accounts, a)
	return nil
}

// ---- Messenger and Instagram ----

type hookPageEntry struct {
	ID        hookID          `json:"id"`
	Messaging []hookMessaging `json:"messaging"`
}

type hookMessaging struct {
	Sender struct {
		ID hookID `json:"id"`
	} `json:"sender"`
	Recipient struct {
		ID hookID `json:"id"`
	} `json:"recipient"`
	Timestamp hookUnix         `json:"timestamp"`
	Message   *hookPageMessage `json:"message"`
	Reaction  *struct {
		MID    string `json:"mid"`
		Action string `json:"action"`
		Emoji  string `json:"emoji"`
	} `json:"reaction"`
	Postback *struct {
		MID      string            `json:"mid"`
		Title    string            `json:"title"`
		Payload  string            `json:"payload"`
		Referral *hookPageReferral `json:"referral"`
	} `json:"postback"`
	Referral *hookPageReferral `json:"referral"`
	Read     *struct {
		Watermark hookUnix `json:"watermark"`
		MID       string   `json:"mid"`
	} `json:"read"`
	Delivery *struct {
		MIDs      []string `json:"mids"`
		Watermark hookUnix `json:"watermark"`
	} `json:"delivery"`
}

type hookPageMessage struct {
	MID           string `json:"mid"`
	Text          string `json:"text"`
	IsEcho        bool   `json:"is_echo"`
	IsDeleted     bool   `json:"is_deleted"`
	IsUnsupported bool   `json:"is_unsupported"`
	QuickReply    *struct {
		Payload string `json:"payload"`
	} `json:"quick_reply"`
	ReplyTo *struct {
		MID string `json:"mid"`
	} `json:"reply_to"`
	Attachments []struct {
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload"`
	} `json:"attachments"`
	Referral *hookPageReferral `json:"referral"`
}

// hookAttachmentPayload is what an attachment's payload holds of what Switchboard reads; the
// payloads of templates and shares vary, and one that does not decode is taken as empty.
type hookAttachmentPayload struct {
	URL         string `json:"url"`
	StickerID   hookID `json:"sticker_id"`
	Coordinates *struct {
		Lat  float64 `json:"lat"`
		Long float64 `json:"long"`
	} `json:"coordinates"`
	Title string `json:"title"`
}

type hookPageReferral struct {
	Ref            string `json:"ref"`
	Source         string `json:"source"`
	AdID           hookID `json:"ad_id"`
	RefererURI     string `json:"referer_uri"`
	AdsContextData *struct {
		AdTitle  string `json:"ad_title"`
		PhotoURL string `json:"photo_url"`
		VideoURL string `json:"video_url"`
	} `json:"ads_context_data"`
}

// referral is a Messenger or Instagram referral as Switchboard keeps it: the source lower-cased
// (ADS becomes ad; shortlink, messenger_code, customer_chat_plugin, … stay Meta's), the ad's
// id, else the link's ref parameter, as the source id.
func (r *hookPageReferral) referral() *transport.Referral {
	if r == nil {
		return nil
	}
	out := &transport.Referral{SourceType: strings.ToLower(r.Source), SourceID: string(r.AdID), SourceURL: r.RefererURI}
	if strings.EqualFold(r.Source, "ADS") {
		out.SourceType = "ad"
	}
	if out.SourceID == "" {
		out.SourceID = r.Ref
	}
	if c := r.AdsContextData; c != nil {
		out.Headline, out.ImageURL, out.VideoURL = c.AdTitle, c.PhotoURL, c.VideoURL
		switch {
		case c.VideoURL != "":
			out.MediaType = "video"
		case c.PhotoURL != "":
			out.MediaType = "image"
		}
	}
	return out
}

func (e *Events) hookMessagingEntry(channel string, raw json.RawMessage) error {
	var entry hookPageEntry
	if err := json.Unmarshal(raw, &entry); err != nil {
		return err
	}
	for k, ev := range entry.Messaging {
		if err := e.hookMessaging(channel, string(entry.ID), ev); err != nil {
			return fmt.Errorf("messaging %d: %w", k, err)
		}
	}
	return nil
}

func (e *Events) hookMessaging(channel, account string, ev hookMessaging) error {
	if account == "" {
		account = string(ev.Recipient.ID)
	}
	contact := string(ev.Sender.ID)
	at := ev.Timestamp.millis()
	if contact == "" {
		return errors.New("no sender id")
	}
	if contact == account {
		return nil // the business's own message (an echo)
	}
	base := HookMessage{AccountID: account, Inbound: transport.Inbound{Channel: channel, From: contact, ProviderTimestamp: hookTimePtr(at)}}
	switch {
	case ev.Message != nil:
		msg, ok, err := hookPageMessageOf(base, ev.Message)
		if err != nil || !ok {
			return err
		}
		if msg.Referral == nil {
			msg.Referral = ev.Referral.referral()
		}
		e.Messages = append(e.Messages, msg)
	case ev.Reaction != nil:
		r := ev.Reaction
		if r.MID == "" {
			return errors.New("a reaction without the mid reacted to")
		}
		msg := base
		// A reaction has no mid of its own: its id is the reacted message's and the time, the
		// same when Meta posts it again.
		msg.ProviderMessageID = r.MID + ":reaction:" + strconv.FormatInt(int64(ev.Timestamp), 10)
		msg.ReplyToProviderMessageID = r.MID
		switch {
		case r.Action == "unreact":
			msg.MessageType, msg.Content = "reaction", &transport.Content{}
		case r.Emoji != "":
			msg.MessageType, msg.Content = "reaction", &transport.Content{Emoji: r.Emoji}
		default:
			msg.Unsupported = "reaction" // a reaction named without its emoji (before v12)
		}
		e.Messages = append(e.Messages, msg)
	case ev.Postback != nil:
		p := ev.Postback
		msg := base
		msg.ProviderMessageID = p.MID
		if msg.ProviderMessageID == "" {
			msg.ProviderMessageID = "postback:" + contact + ":" + strconv.FormatInt(int64(ev.Timestamp), 10)
		}
		text := p.Title
		if text == "" {
			text = p.Payload
		}
		msg.MessageType, msg.Text = "text", text
		msg.Content = &transport.Content{Buttons: []transport.Button{{ID: p.Payload, Title: p.Title}}}
		msg.Referral = p.Referral.referral()
		if msg.Referral == nil {
			msg.Referral = ev.Referral.referral()
		}
		e.Messages = append(e.Messages, msg)
	case ev.Referral != nil:
		e.Referrals = append(e.Referrals, HookReferral{Channel: channel, AccountID: account, From: contact,
			Timestamp: at, Referral: *ev.Referral.referral()})
	case ev.Read != nil:
		st := HookStatus{Channel: channel, AccountID: account, Recipient: contact, Timestamp: at,
			StatusUpdate: transport.StatusUpdate{ProviderMessageID: ev.Read.MID, Status: transport.StatusRead}}
		if st.ProviderMessageID == "" {
			st.Watermark = ev.Read.Watermark.millis()
			if st.Watermark.IsZero() {
				return errors.New("a read without a mid or watermark")
			}
		}
		e.Statuses = append(e.Statuses, st)
	case ev.Delivery != nil:
		d := ev.Delivery
		base := HookStatus{Channel: channel, AccountID: account, Recipient: contact, Timestamp: at,
			StatusUpdate: transport.StatusUpdate{Status: transport.StatusDelivered}}
		if base.Timestamp.IsZero() {
			base.Timestamp = d.Watermark.millis()
		}
		n := 0
		for _, mid := range d.MIDs {
			if mid == "" {
				continue
			}
			st := base
			st.ProviderMessageID = mid
			e.Statuses = append(e.Statuses, st)
			n++
		}
		if n == 0 {
			base.Watermark = d.Watermark.millis()
			if base.Watermark.IsZero() {
				return errors.New("a delivery without mids or watermark")
			}
			e.Statuses = append(e.Statuses, base)
		}
	}
	return nil
}

// hookPageMessageOf reads a Messenger or Instagram message; ok is false for an echo or a
// deleted message.
func hookPageMessageOf(msg HookMessage, m *hookPageMessage) (HookMessage, bool, error) {
	if m.IsEcho || m.IsDeleted {
		return HookMessage{}, false, nil
	}
	if m.MID == "" {
		return HookMessage{}, false, errors.New("a message without a mid")
	}
	msg.ProviderMessageID = m.MID
	if m.ReplyTo != nil {
		msg.ReplyToProviderMessageID = m.ReplyTo.MID
	}
	msg.Referral = m.Referral.referral()
	msg.Text = m.Text
	if m.IsUnsupported {
		msg.Unsupported = "unsupported"
		return msg, true, nil
	}
	if len(m.Attachments) == 0 {
		if m.Text == "" && m.QuickReply == nil {
			msg.Unsupported = "unknown"
			return msg, true, nil
		}
		msg.MessageType = "text"
		if q := m.QuickReply; q != nil {
			msg.Content = &transport.Content{Buttons: []transport.Button{{ID: q.Payload, Title: m.Text}}}
		}
		return msg, true, nil
	}
	// One attachment is represented, the first; the text is its caption.
	a := m.Attachments[0]
	var p hookAttachmentPayload
	_ = json.Unmarshal(a.Payload, &p)
	switch a.Type {
	case "image", "video", "audio", "file":
		msg.MessageType = a.Type
		if a.Type == "file" {
			msg.MessageType = "document"
		}
		if a.Type == "image" && p.StickerID != "" {
			msg.MessageType = "sticker"
		}
		msg.MediaURL = p.URL
		msg.Content = &transport.Content{MediaURL: p.URL}
	case "location":
		if p.Coordinates == nil {
			msg.Unsupported = a.Type
			break
		}
		lat, lng := p.Coordinates.Lat, p.Coordinates.Long
		msg.MessageType = "location"
		msg.Content = &transport.Content{Latitude: &lat, Longitude: &lng, LocationName: p.Title}
	default:
		// fallback (a shared link), template, share, story_mention, reel, ig_reel, ig_post, …
		msg.Unsupported = a.Type
		if msg.Unsupported == "" {
			msg.Unsupported = "attachment"
		}
	}
	return msg, true, nil
}

// failureOf is the failure a WhatsApp status reports: Meta's error code translated (uses
// MapErrorCode), the code itself kept as ProviderCode, and Meta's explanation (its details, else
// its message, else its title). temporary is MapErrorCode's: a code worth sending again later
// (a rate limit, an outage), though the message failed all the same.
func failureOf(code int, title, message string) (f *transport.Failure, temporary bool) {
	f = &transport.Failure{Message: message}
	f.Code, temporary = MapErrorCode(code, 0)
	if f.Message == "" {
		f.Message = title
	}
	if f.Message == "" {
		f.Message = "Meta reported the message failed without a reason."
	}
	if code != 0 {
		f.ProviderCode = ProviderCode(code, 0)
	}
	return f, temporary
}
