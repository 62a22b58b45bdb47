package metatest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// What the webhook builders write where Meta would write the business's or the contact's
// details: the WhatsApp Business Account of a messages change, and the contact's profile name.
const (
	HookWABAID      = "102290129340398"
	HookContactName = "Sheena Nelson"
)

// HookSignatureHeader is the header WebhookPost signs a body in, as Meta does.
const HookSignatureHeader = "X-Hub-Signature-256"

// ErrWebhookNotLoopback: WebhookPost posts only to loopback addresses, never to the network.
var ErrWebhookNotLoopback = errors.New("metatest: refusing to post a webhook to a non-loopback address")

// Payload is a webhook body as Meta posts it, {"object": …, "entry": [...]}, ready for JSON.
type Payload map[string]any

// Bytes is the payload's JSON, the body WebhookPost sends and signs.
func (p Payload) Bytes() []byte {
	b, err := json.Marshal(p)
	if err != nil {
		panic("metatest: encode webhook payload: " + err.Error()) // only JSON values are put in a Payload
	}
	return b
}

// HookBatch is one post holding the entries of payloads, as Meta batches changes of one object
// (whatsapp_business_account, page or instagram: the first payload's).
func HookBatch(payloads ...Payload) Payload {
	if len(payloads) == 0 {
		return Payload{"object": "whatsapp_business_account", "entry": []any{}}
	}
	var entries []any
	for _, p := range payloads {
		if e, ok := p["entry"].([]any); ok {
			entries = append(entries, e...)
		}
	}
	return Payload{"object": payloads[0]["object"], "entry": entries}
}

// HookOption changes the message a WhatsApp message builder writes (its JSON object).
type HookOption func(message map[string]any)

// HookContext makes the message a reply quoting wamid (a message the business sent).
func HookContext(wamid string) HookOption {
	return func(m map[string]any) { m["context"] = map[string]any{"from": "15550783881", "id": wamid} }
}

// HookReferral makes the message the first of a thread opened from the ad or post r.
func HookReferral(r transport.Referral) HookOption {
	return func(m map[string]any) {
		ref := map[string]any{}
		for k, v := range map[string]string{"source_url": r.SourceURL, "source_id": r.SourceID, "source_type": r.SourceType,
			"headline": r.Headline, "body": r.Body, "media_type": r.MediaType, "image_url": r.ImageURL, "video_url": r.VideoURL,
			"thumbnail_url": r.ThumbnailURL, "ctwa_clid": r.CtwaClid} {
			if v != "" {
				ref[k] = v
			}
		}
		m["referral"] = ref
	}
}

// HookFilename names the file of a document message.
func HookFilename(name string) HookOption {
	return func(m map[string]any) {
		if media, ok := m[fmt.Sprint(m["type"])].(map[string]any); ok {
			media["filename"] = name
		}
	}
}

// hookDigits is a number as Meta writes it: its digits, without "+" or formatting.
func hookDigits(number string) string {
	var b strings.Builder
	for _, c := range number {
		if c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// hookIsBSUID says whether a contact address is a business-scoped user id (US.1349…) rather
// than a phone number.
func hookIsBSUID(from string) bool { return strings.Contains(from, ".") }

// HookWhatsAppMessage is a messages change with one message of messageType from the contact
// from (an E.164 number, or a business-scoped user id such as US.13491208655302741918) to the
// business's number phoneNumberID (display is its number): fields is the message's object of
// that type ({"body": …} for text). The other builders use it; it builds any other type
// (location, contacts, order, …).
func HookWhatsAppMessage(phoneNumberID, display, from, wamid, messageType string, fields map[string]any, opts ...HookOption) Payload {
	contact := map[string]any{"profile": map[string]any{"name": HookContactName}}
	m := map[string]any{"id": wamid, "timestamp": strconv.FormatInt(time.Now().Unix(), 10), "type": messageType}
	if hookIsBSUID(from) {
		contact["user_id"], m["from_user_id"] = from, from
	} else {
		contact["wa_id"], m["from"] = hookDigits(from), hookDigits(from)
	}
	if fields != nil {
		m[messageType] = fields
	}
	for _, o := range opts {
		o(m)
	}
	return hookWhatsAppChange(HookWABAID, "messages", map[string]any{
		"messaging_product": "whatsapp",
		"metadata":          map[string]any{"display_phone_number": hookDigits(display), "phone_number_id": phoneNumberID},
		"contacts":          []any{contact},
		"messages":          []any{m},
	})
}

func hookWhatsAppChange(wabaID, field string, value map[string]any) Payload {
	return Payload{"object": "whatsapp_business_account", "entry": []any{map[string]any{
		"id": wabaID, "time": time.Now().Unix(),
		"changes": []any{map[string]any{"field": field, "value": value}},
	}}}
}

// HookTextMessage is a text message from the contact from to the business's number.
func HookTextMessage(phoneNumberID, display, from, wamid, text string, opts ...HookOption) Payload {
	return HookWhatsAppMessage(phoneNumberID, display, from, wamid, "text", map[string]any{"body": text}, opts...)
}

// HookMediaMessage is a media message (kind image, video, audio, document or sticker) from the
// contact: mediaID is the id to fetch through the Graph API, mime its type, caption its caption
// (image, video and document only). Its sha256 is HookMediaSHA256(mediaID).
func HookMediaMessage(phoneNumberID, display, from, wamid, kind, mediaID, mime, caption string, opts ...HookOption) Payload {
	media := map[string]any{"id": mediaID, "mime_type": mime, "sha256": HookMediaSHA256(mediaID)}
	if caption != "" {
		media["caption"] = caption
	}
	if kind == "audio" {
		media["voice"] = false
	}
	if kind == "sticker" {
		media["animated"] = false
	}
	return HookWhatsAppMessage(phoneNumberID, display, from, wamid, kind, media, opts...)
}

// HookMediaSHA256 is the sha256 HookMediaMessage writes for mediaID (base64, as Meta's).
func HookMediaSHA256(mediaID string) string {
	sum := sha256.Sum256([]byte(mediaID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// HookInteractiveReply is the contact pressing a reply button (kind button_reply) or choosing a
// list row (kind list_reply) with id and title, under the business's message repliedTo.
func HookInteractiveReply(phoneNumberID, display, from, wamid, repliedTo, kind, id, title string) Payload {
	return HookWhatsAppMessage(phoneNumberID, display, from, wamid, "interactive",
		map[string]any{"type": kind, kind: map[string]any{"id": id, "title": title}}, HookContext(repliedTo))
}

// HookReaction is the contact reacting with emoji to the message reactedTo; an empty emoji
// takes the reaction back (Meta then sends the reaction without its emoji).
func HookReaction(phoneNumberID, display, from, wamid, reactedTo, emoji string) Payload {
	r := map[string]any{"message_id": reactedTo}
	if emoji != "" {
		r["emoji"] = emoji
	}
	return HookWhatsAppMessage(phoneNumberID, display, from, wamid, "reaction", r)
}

// hookErrorTitles are the titles Meta gives the error codes a status most often fails with.
var hookErrorTitles = map[int]string{
	131026: "Message undeliverable",
	131047: "Re-engagement message",
	131049: "This message was not delivered to maintain healthy ecosystem engagement.",
	131050: "Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business.",
	131051: "Unsupported message type",
	131053: "Media upload error",
	130429: "Rate limit hit",
	131048: "Spam rate limit hit",
	131000: "Something went wrong",
}

// HookStatus is a status of the message wamid the business's number sent to recipient (an
// E.164 number or a business-scoped user id): sent, delivered or read with the conversation's
// pricing (utility), or failed with the error errCode (its details "<title> (<code>)").
func HookStatus(phoneNumberID, display, wamid, recipient, status string, errCode int) Payload {
	s := map[string]any{"id": wamid, "status": status, "timestamp": strconv.FormatInt(time.Now().Unix(), 10)}
	if hookIsBSUID(recipient) {
		s["recipient_user_id"] = recipient
	} else {
		s["recipient_id"] = hookDigits(recipient)
	}
	if status == "failed" {
		title, ok := hookErrorTitles[errCode]
		if !ok {
			title = "Error " + strconv.Itoa(errCode)
		}
		s["errors"] = []any{map[string]any{"code": errCode, "title": title, "message": title,
			"error_data": map[string]any{"details": title + " (" + strconv.Itoa(errCode) + ")"},
			"href":       "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/"}}
	} else {
		s["pricing"] = map[string]any{"billable": true, "pricing_model": "PMP", "category": "utility", "type": "regular"}
	}
	return hookWhatsAppChange(HookWABAID, "messages", map[string]any{
		"messaging_product": "whatsapp",
		"metadata":          map[string]any{"display_phone_number": hookDigits(display), "phone_number_id": phoneNumberID},
		"statuses":          []any{s},
	})
}

// hookTemplateID is a template id as Meta writes it in template webhooks: a number when it is
// digits.
func hookTemplateID(id string) any {
	if hookDigits(id) == id && id != "" {
		return json.Number(id)
	}
	return id
}

// HookTemplateStatus is a message_template_status_update: the template's new status event
// (APPROVED, REJECTED, PAUSED, …) and reason ("" is Meta's NONE).
func HookTemplateStatus(wabaID, templateID, name, language, event, reason string) Payload {
	if reason == "" {
		reason = "NONE"
	}
	return hookWhatsAppChange(wabaID, "message_template_status_update", map[string]any{
		"event": event, "message_template_id": hookTemplateID(templateID), "message_template_name": name,
		"message_template_language": language, "reason": reason,
	})
}

// HookTemplateCategory is a template_category_update: Meta moved the template from the category
// previous to next.
func HookTemplateCategory(wabaID, templateID, name, language, previous, next string) Payload {
	return hookWhatsAppChange(wabaID, "template_category_update", map[string]any{
		"message_template_id": hookTemplateID(templateID), "message_template_name": name,
		"message_template_language": language, "previous_category": previous, "new_category": next,
	})
}

// hookMessaging is a post of object (page or instagram) with one messaging event of the
// contact to the account, stamped at ms (milliseconds).
func hookMessaging(object, accountID, contactID string, ms int64, event map[string]any) Payload {
	event["sender"] = map[string]any{"id": contactID}
	event["recipient"] = map[string]any{"id": accountID}
	return Payload{"object": object, "entry": []any{map[string]any{
		"id": accountID, "time": ms, "messaging": []any{event},
	}}}
}

// HookMessengerText is a Messenger text from the person psid to the page.
func HookMessengerText(pageID, psid, mid, text string) Payload {
	now := time.Now().UnixMilli()
	return hookMessaging("page", pageID, psid, now, map[string]any{"timestamp": now,
		"message": map[string]any{"mid": mid, "text": text}})
}

// HookInstagramText is an Instagram direct message from the user igsid to the professional
// account igID.
func HookInstagramText(igID, igsid, mid, text string) Payload {
	now := time.Now().UnixMilli()
	return hookMessaging("instagram", igID, igsid, now, map[string]any{"timestamp": now,
		"message": map[string]any{"mid": mid, "text": text}})
}

// HookMessengerAttachment is a Messenger attachment (image, video, audio, file) at url from the
// person psid to the page.
func HookMessengerAttachment(pageID, psid, mid, kind, url string) Payload {
	now := time.Now().UnixMilli()
	return hookMessaging("page", pageID, psid, now, map[string]any{"timestamp": now,
		"message": map[string]any{"mid": mid, "attachments": []any{map[string]any{"type": kind, "payload": map[string]any{"url": url}}}}})
}

// HookMessengerRead is the person psid reading every message the page sent them up to
// watermark (Unix milliseconds).
func HookMessengerRead(pageID, psid string, watermark int64) Payload {
	now := time.Now().UnixMilli()
	return hookMessaging("page", pageID, psid, now, map[string]any{"timestamp": now,
		"read": map[string]any{"watermark": watermark}})
}

// HookMessengerDelivery is the page's messages mids delivered to the person psid, and every
// one up to watermark (Unix milliseconds); Meta leaves mids out for old clients.
func HookMessengerDelivery(pageID, psid string, watermark int64, mids ...string) Payload {
	d := map[string]any{"watermark": watermark}
	if len(mids) > 0 {
		d["mids"] = mids
	}
	return hookMessaging("page", pageID, psid, time.Now().UnixMilli(), map[string]any{"delivery": d})
}

// SignHook is the X-Hub-Signature-256 value Meta sends with body: "sha256=" and the hex
// HMAC-SHA256 of the body under the app secret.
func SignHook(appSecret, body []byte) string {
	mac := hmac.New(sha256.New, appSecret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// WebhookPost posts p to rawURL as Meta does: JSON, signed with appSecret in
// HookSignatureHeader. It returns the webhook's HTTP status. It posts only to loopback (the URL's
// host must be localhost or a loopback address, and the connection is refused to anything
// else): another URL is ErrWebhookNotLoopback.
func WebhookPost(ctx context.Context, rawURL string, appSecret []byte, p Payload) (int, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return 0, fmt.Errorf("metatest: webhook URL %q is not an http(s) URL", rawURL)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 0, ErrWebhookNotLoopback
	}
	body := p.Bytes()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("metatest: post webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HookSignatureHeader, SignHook(appSecret, body))
	resp, err := hookLoopbackClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("metatest: post webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, nil
}

// hookLoopbackClient connects only to loopback addresses, whatever a name resolves to, uses no
// proxy and follows no redirects.
var hookLoopbackClient = &http.Client{
	Timeout: 10 * time.Second,
	Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 5 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				return ErrWebhookNotLoopback
			}
			return nil
		}}).DialContext},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// ---- Coexistence: the WhatsApp Business app's contacts, history and echoes ----
//
// The three webhook fields of a number onboarded from the WhatsApp Business app, as Meta's
// webhook references write them (smb_app_state_sync, history, smb_message_echoes); the
// declined history and the history's media follow-up as integrations report them (coexistence.go
// says which is which). Server.SyncPayloads builds them from what SetCoexistence declared.

// hookMetadata is a change's metadata: the business's number and its id.
func hookMetadata(phoneNumberID, display string) map[string]any {
	return map[string]any{"display_phone_number": hookDigits(display), "phone_number_id": phoneNumberID}
}

// HookContactSync is an smb_app_state_sync change of the business's number phoneNumberID
// (display is its number): contacts of its WhatsApp Business app address book, added (or
// edited), or removed (SyncContact.Removed, without their names), stamped now.
func HookContactSync(phoneNumberID, display string, contacts ...SyncContact) Payload {
	return hookContactSync(HookWABAID, phoneNumberID, display, time.Now(), contacts)
}

func hookContactSync(wabaID, phoneNumberID, display string, at time.Time, contacts []SyncContact) Payload {
	items := []any{}
	for _, c := range contacts {
		contact := map[string]any{"phone_number": hookDigits(c.PhoneNumber)}
		action := "add"
		if c.Removed {
			action = "remove"
		} else {
			contact["full_name"], contact["first_name"] = c.FullName, c.FirstName
		}
		items = append(items, map[string]any{"type": "contact", "contact": contact, "action": action,
			"metadata": map[string]any{"timestamp": strconv.FormatInt(at.Unix(), 10)}})
	}
	return hookWhatsAppChange(wabaID, "smb_app_state_sync", map[string]any{
		"messaging_product": "whatsapp", "metadata": hookMetadata(phoneNumberID, display), "state_sync": items})
}

// HookHistory is a history change: one chunk of the business's chat history, of the phase (0:
// the onboarding day, 1: up to 90 days before, 2: up to 180), its chunkOrder and the sync's
// progress (100 when complete), holding threads. A media message is a media_placeholder, as
// Meta writes it (HookHistoryMedia names its media); a message without At is stamped now.
func HookHistory(phoneNumberID, display string, phase, chunkOrder, progress int, threads ...HistoryThreadSpec) Payload {
	return hookHistory(HookWABAID, phoneNumberID, display, phase, chunkOrder, progress, threads)
}

func hookHistory(wabaID, phoneNumberID, display string, phase, chunkOrder, progress int, threads []HistoryThreadSpec) Payload {
	list := []any{}
	for _, th := range threads {
		msgs := []any{}
		for _, m := range th.Messages {
			o := hookCoexMessage(display, th.WaID, m)
			if hookIsMedia(m.kind()) {
				delete(o, m.kind())
				o["type"] = "media_placeholder"
			}
			status := m.Status
			if status == "" {
				status = "READ"
			}
			o["history_context"] = map[string]any{"status": status}
			msgs = append(msgs, o)
		}
		id := th.WaID
		if !hookIsBSUID(id) {
			id = hookDigits(id)
		}
		list = append(list, map[string]any{"id": id, "messages": msgs})
	}
	return hookWhatsAppChange(wabaID, "history", map[string]any{
		"messaging_product": "whatsapp", "metadata": hookMetadata(phoneNumberID, display),
		"history": []any{map[string]any{
			"metadata": map[string]any{"phase": phase, "chunk_order": chunkOrder, "progress": progress},
			"threads":  list,
		}}})
}

// HookHistoryMedia is the history change naming the media of a media message a chunk gave as
// media_placeholder: m with its Fields ({"id": …, "mime_type": …}), under messages when the
// contact waID sent it, under message_echoes when the business did.
func HookHistoryMedia(phoneNumberID, display, waID string, m HistoryMessageSpec) Payload {
	return hookHistoryMedia(HookWABAID, phoneNumberID, display, waID, m)
}

func hookHistoryMedia(wabaID, phoneNumberID, display, waID string, m HistoryMessageSpec) Payload {
	key := "messages"
	if m.FromBusiness {
		key = "message_echoes"
	}
	return hookWhatsAppChange(wabaID, "history", map[string]any{
		"messaging_product": "whatsapp", "metadata": hookMetadata(phoneNumberID, display),
		key: []any{hookCoexMessage(display, waID, m)}})
}

// HookHistoryDeclined is the history change of a business that declined to share its chat
// history: error 2593109.
func HookHistoryDeclined(phoneNumberID, display string) Payload {
	return hookHistoryDeclined(HookWABAID, phoneNumberID, display)
}

func hookHistoryDeclined(wabaID, phoneNumberID, display string) Payload {
	const title = "History sync is turned off by the business from the WhatsApp Business App"
	return hookWhatsAppChange(wabaID, "history", map[string]any{
		"messaging_product": "whatsapp", "metadata": hookMetadata(phoneNumberID, display),
		"history": []any{map[string]any{"errors": []any{map[string]any{
			"code": HistoryDeclinedCode, "title": title, "message": title,
			"error_data": map[string]any{"details": "History sharing is turned off by the business"},
		}}}}})
}

// HookEcho is an smb_message_echoes change: a text the business sent from the WhatsApp
// Business app to the contact to (an E.164 number, or a business-scoped user id).
func HookEcho(phoneNumberID, display, to, wamid, text string) Payload {
	return HookEchoMessage(phoneNumberID, display, to, wamid, "text", map[string]any{"body": text})
}

// HookEchoMessage is an smb_message_echoes change with a message of messageType whose object is
// fields, sent from the app to the contact to, stamped now.
func HookEchoMessage(phoneNumberID, display, to, wamid, messageType string, fields map[string]any) Payload {
	m := HistoryMessageSpec{FromBusiness: true, ID: wamid, Type: messageType, Fields: fields, At: time.Now()}
	return hookWhatsAppChange(HookWABAID, "smb_message_echoes", map[string]any{
		"messaging_product": "whatsapp", "metadata": hookMetadata(phoneNumberID, display),
		"message_echoes": []any{hookCoexMessage(display, to, m)}})
}

// hookCoexMessage is the message object of m in the chat with the contact waID: from the
// business's number to the contact when the business sent it, from the contact otherwise.
func hookCoexMessage(display, waID string, m HistoryMessageSpec) map[string]any {
	at := m.At
	if at.IsZero() {
		at = time.Now()
	}
	typ := m.kind()
	o := map[string]any{"id": m.ID, "timestamp": strconv.FormatInt(at.Unix(), 10), "type": typ}
	contactKey := "from"
	if m.FromBusiness {
		o["from"], contactKey = hookDigits(display), "to"
	}
	if hookIsBSUID(waID) {
		o[contactKey+"_user_id"] = waID
		if contactKey == "to" {
			o["to"] = ""
		}
	} else {
		o[contactKey] = hookDigits(waID)
	}
	switch {
	case m.Fields != nil:
		o[typ] = m.Fields
	case typ == "text":
		o["text"] = map[string]any{"body": m.Text}
	default:
		o[typ] = map[string]any{}
	}
	return o
}

func hookIsMedia(messageType string) bool {
	switch messageType {
	case "image", "video", "audio", "document", "sticker":
		return true
	}
	return false
}
