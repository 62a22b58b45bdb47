package meta

import (
	"context"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// obj is a JSON object of a request body.
type obj = map[string]any

// Send implements transport.Transport: a Cloud API message for whatsapp (answering its wamid),
// a Send API message for messenger and instagram (answering its message id). Outbound.From is
// the sending account's Graph id (see the package documentation); Outbound.AccountToken, when
// set, replaces the Provider's token.
//
// Content Meta cannot carry on the channel fails before Meta is asked: MESSAGE_TYPE_UNSUPPORTED
// for a type the channel has not (WhatsAppCarries, MessengerCarries, InstagramCarries tell a
// caller beforehand), INVALID_REQUEST for content that breaks Meta's documented limits.
func (t *Transport) Send(ctx context.Context, m transport.Outbound) (transport.Result, error) {
	switch {
	case m.Channel != ChannelWhatsApp && m.Channel != ChannelMessenger && m.Channel != ChannelInstagram:
		return transport.Result{}, &transport.Failure{Code: CodeChannelUnsupported,
			Message: fmt.Sprintf("The Meta transport does not carry the %q channel.", m.Channel)}
	case m.From == "":
		return transport.Result{}, invalid("The sender has no %s account id (Outbound.From: the phone number id or the Page id).", m.Channel)
	case m.Channel == ChannelWhatsApp:
		return t.sendWhatsApp(ctx, m)
	}
	return t.sendPage(ctx, m)
}

func (t *Transport) sendWhatsApp(ctx context.Context, m transport.Outbound) (transport.Result, error) {
	body, err := whatsappMessage(m)
	if err != nil {
		return transport.Result{}, err
	}
	var out struct {
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
	}
	const op = "send whatsapp message"
	if err := t.call(ctx, request{op: op, method: http.MethodPost, path: []string{m.From, "messages"},
		body: body, token: t.token(m.AccountToken), secrets: secretsOf(m)}, &out); err != nil {
		return transport.Result{}, err
	}
	if len(out.Messages) == 0 || out.Messages[0].ID == "" {
		return transport.Result{}, acceptedUnreadable(op)
	}
	return transport.Result{ProviderMessageID: out.Messages[0].ID}, nil
}

// sendPage sends through the Send API. A reaction is a sender action, which Meta answers
// without a message id: its Result has none.
func (t *Transport) sendPage(ctx context.Context, m transport.Outbound) (transport.Result, error) {
	body, err := pageMessage(m, time.Now())
	if err != nil {
		return transport.Result{}, err
	}
	var out struct {
		RecipientID string `json:"recipient_id"`
		MessageID   string `json:"message_id"`
	}
	op := "send " + m.Channel + " message"
	if err := t.call(ctx, request{op: op, method: http.MethodPost, path: []string{m.From, "messages"},
		body: body, token: t.token(m.AccountToken), secrets: secretsOf(m)}, &out); err != nil {
		return transport.Result{}, err
	}
	if out.MessageID == "" && (body["sender_action"] == nil || out.RecipientID == "") {
		return transport.Result{}, acceptedUnreadable(op)
	}
	return transport.Result{ProviderMessageID: out.MessageID}, nil
}

// secretsOf is what an error about m must not repeat: its text and its template's parameters
// (a one-time code, a name).
func secretsOf(m transport.Outbound) []string {
	s := []string{m.Text}
	if tpl := m.Template; tpl != nil {
		s = append(s, tpl.HeaderParams...)
		s = append(s, tpl.BodyParams...)
		for _, b := range tpl.Buttons {
			s = append(s, b.Value)
		}
	}
	return s
}

// messageType is m's type, text when unset.
func messageType(m transport.Outbound) string {
	if m.MessageType == "" {
		return "text"
	}
	return m.MessageType
}

// content is m's content, empty when it has none.
func content(m transport.Outbound) transport.Content {
	if m.Content == nil {
		return transport.Content{}
	}
	return *m.Content
}

// mediaRef names the media of a typ message by its uploaded id when it has one, else by its URL
// (Meta takes one of the two), under the keys the API takes for them.
func mediaRef(typ string, c transport.Content, idKey, urlKey string) (obj, error) {
	switch {
	case c.MediaID != "":
		return obj{idKey: c.MediaID}, nil
	case c.MediaURL != "":
		return obj{urlKey: c.MediaURL}, nil
	}
	return nil, invalid("A %s message needs content.mediaUrl or content.mediaId.", typ)
}

func invalid(format string, args ...any) *transport.Failure {
	return &transport.Failure{Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

func unsupported(channel, messageType string) *transport.Failure {
	return &transport.Failure{Code: CodeMessageTypeUnsupported,
		Message: fmt.Sprintf("The %s channel cannot carry a %q message.", channel, messageType)}
}

// limit is one of Meta's documented length limits: what is limited, and its most characters.
type limit struct {
	what  string
	value string
	max   int
}

// checkLimits fails with INVALID_REQUEST at the first value longer than its limit.
func checkLimits(limits ...limit) error {
	for _, l := range limits {
		if n := utf8.RuneCountInString(l.value); n > l.max {
			return invalid("%s has %d characters; Meta allows %d.", l.what, n, l.max)
		}
	}
	return nil
}
