package twilio

import (
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/twilio/twilio-go/client"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// SignatureHeader is the header Twilio signs its requests with.
const SignatureHeader = "X-Twilio-Signature"

// EmptyTwiML answers an inbound message webhook: Twilio sends no reply.
const EmptyTwiML = `<?xml version="1.0" encoding="UTF-8"?><Response></Response>`

// VerifySignature reports whether signature (the X-Twilio-Signature header) is Twilio's for a
// request to fullURL (the URL Twilio was given, scheme, host, path and query as configured)
// with the POST parameters params (r.PostForm: the body only, not the query).
//
// twilio-go's RequestValidator signs the first value of each parameter; the Parse functions
// read the first value too, so a request cannot carry a signed value and act on another.
func VerifySignature(authToken, fullURL string, params url.Values, signature string) bool {
	if authToken == "" || signature == "" || fullURL == "" {
		return false
	}
	first := make(map[string]string, len(params))
	for k, v := range params {
		if len(v) > 0 {
			first[k] = v[0]
		}
	}
	rv := client.NewRequestValidator(authToken)
	return rv.Validate(fullURL, first, signature)
}

// ParseMessageStatus reads a message status callback (MessageSid, MessageStatus, ErrorCode).
// Statuses before Twilio hands the message on (accepted, queued, sending, scheduled) change
// nothing; undelivered and failed fail the message with ErrorCode's translation.
func ParseMessageStatus(form url.Values) transport.StatusUpdate {
	u := transport.StatusUpdate{ProviderMessageID: form.Get("MessageSid")}
	if u.ProviderMessageID == "" {
		u.ProviderMessageID = form.Get("SmsSid")
	}
	status := form.Get("MessageStatus")
	if status == "" {
		status = form.Get("SmsStatus")
	}
	switch status {
	case "sent":
		u.Status = transport.StatusSent
	case "delivered":
		u.Status = transport.StatusDelivered
	case "read":
		u.Status = transport.StatusRead
	case "undelivered", "failed":
		u.Status = transport.StatusFailed
		u.Failure = deliveryFailure(form.Get("ErrorCode"))
	case "canceled":
		u.Status = transport.StatusFailed
		u.Failure = &transport.Failure{Code: CodeMessageCanceled, Message: "The message was canceled before Twilio sent it."}
	}
	return u
}

// deliveryFailure is the failure of a delivery report's ErrorCode.
func deliveryFailure(errorCode string) *transport.Failure {
	n, err := strconv.Atoi(strings.TrimSpace(errorCode))
	if err != nil || n == 0 {
		return &transport.Failure{Code: CodeDeliveryFailed, Message: "Twilio reported the message undelivered without a reason."}
	}
	return failure(n, false)
}

// ParseCallStatus reads a voice message's call status callback (CallSid, CallStatus). A call
// answered is sent; one completed after that is delivered; busy, no-answer, canceled and
// failed fail the message.
func ParseCallStatus(form url.Values) transport.StatusUpdate {
	u := transport.StatusUpdate{ProviderMessageID: form.Get("CallSid")}
	fail := func(code, message string) {
		u.Status = transport.StatusFailed
		u.Failure = &transport.Failure{Code: code, Message: message, ProviderCode: form.Get("ErrorCode")}
	}
	switch form.Get("CallStatus") {
	case "in-progress":
		u.Status = transport.StatusSent
	case "completed":
		u.Status = transport.StatusDelivered
	case "busy":
		fail(CodeVoiceBusy, "The recipient's line was busy.")
	case "no-answer":
		fail(CodeVoiceNoAnswer, "The recipient did not answer.")
	case "canceled", "failed":
		fail(CodeVoiceFailed, "The call could not be connected.")
	}
	return u
}

// ParseInbound reads an SMS or MMS arriving on the messaging webhook. An MMS becomes a message
// of the type of its first media (image, video, audio, else document); Twilio's further media
// (MediaUrl1…) are not represented.
func ParseInbound(form url.Values) (transport.Inbound, error) {
	in := transport.Inbound{
		Channel:           ChannelSMS,
		From:              form.Get("From"),
		To:                form.Get("To"),
		Text:              form.Get("Body"),
		MessageType:       "text",
		ProviderMessageID: form.Get("MessageSid"),
	}
	if in.ProviderMessageID == "" {
		in.ProviderMessageID = form.Get("SmsSid")
	}
	switch {
	case in.From == "" || in.To == "":
		return transport.Inbound{}, errors.New("twilio: inbound message without From or To")
	case in.ProviderMessageID == "":
		return transport.Inbound{}, errors.New("twilio: inbound message without MessageSid")
	case strings.Contains(in.From, ":"):
		// whatsapp:+1…, messenger:…: another channel posted to the messaging webhook.
		return transport.Inbound{}, errors.New("twilio: inbound message is not SMS (channel-prefixed address)")
	}
	if n, _ := strconv.Atoi(form.Get("NumMedia")); n > 0 {
		mime := form.Get("MediaContentType0")
		in.MessageType = mediaMessageType(mime)
		in.Content = &transport.Content{MediaURL: form.Get("MediaUrl0"), MimeType: mime}
	}
	return in, nil
}

func mediaMessageType(mime string) string {
	switch {
	case strings.HasPrefix(mime, "image/"):
		return "image"
	case strings.HasPrefix(mime, "video/"):
		return "video"
	case strings.HasPrefix(mime, "audio/"):
		return "audio"
	}
	return "document"
}

// Twilio's default opt-out and opt-in keywords (help.twilio.com, "Twilio support for opt-out
// keywords"; REVOKE and OPTOUT were added to the opt-out list in 2025).
var (
	optOutKeywords = map[string]bool{"STOP": true, "STOPALL": true, "UNSUBSCRIBE": true, "CANCEL": true,
		"END": true, "QUIT": true, "REVOKE": true, "OPTOUT": true}
	optInKeywords = map[string]bool{"START": true, "YES": true, "UNSTOP": true}
)

// OptOutKeyword reports whether an inbound body is one of Twilio's default opt-out or opt-in
// keywords. As Twilio, only the whole message counts (trimmed, any case): "STOP" opts out,
// "please stop" does not.
func OptOutKeyword(body string) (optOut, optIn bool) {
	w := strings.ToUpper(strings.TrimSpace(body))
	return optOutKeywords[w], optInKeywords[w]
}

// OptOut reports whether an inbound message opts out or in: Twilio's OptOutType (STOP, START)
// when a Messaging Service with Advanced Opt-Out sent it (its keywords may be custom), the
// default keywords otherwise.
func OptOut(form url.Values) (optOut, optIn bool) {
	switch strings.ToUpper(form.Get("OptOutType")) {
	case "STOP":
		return true, false
	case "START":
		return false, true
	case "HELP":
		return false, false
	}
	return OptOutKeyword(form.Get("Body"))
}
