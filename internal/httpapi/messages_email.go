package httpapi

import (
	"encoding/json"

	"github.com/switchboard-io/switchboard/internal/message"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/transport"
)

// emailJSON is what an email message carries besides text (Switchboard's own field: the
// spec's Message has no place for them): its subject, HTML body and Reply-To, the header fields
// Switchboard adds (a broadcast's List-Unsubscribe: what a test key's mail would have carried),
// and for mail received, what the listener's checks found.
type emailJSON struct {
	Subject        *string              `json:"subject"`
	HTMLBody       string               `json:"htmlBody,omitempty"`
	ReplyTo        string               `json:"replyTo,omitempty"`
	Headers        map[string]string    `json:"headers,omitempty"`
	Authentication *transport.EmailAuth `json:"authentication,omitempty"`
}

// emailView is the email part of m; nil for other channels.
func emailView(m db.Message) *emailJSON {
	if m.Channel != "email" {
		return nil
	}
	out := &emailJSON{Subject: m.Subject}
	if len(m.Options) > 0 {
		var o message.Options
		if json.Unmarshal(m.Options, &o) == nil {
			out.HTMLBody, out.ReplyTo, out.Headers, out.Authentication = o.HTMLBody, o.ReplyTo, o.Headers, o.EmailAuth
		}
	}
	return out
}
