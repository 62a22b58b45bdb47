package smtp

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/mail"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	gomail "github.com/wneessen/go-mail"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// outgoing is a mail ready to submit.
type outgoing struct {
	from, to  string // envelope addresses
	messageID string // without angle brackets
	data      []byte // the rendered (and signed) mail, CRLF line ends
}

// reservedHeaders are the fields the transport writes itself: Outbound.Headers may not set them.
var reservedHeaders = map[string]bool{
	"from": true, "sender": true, "to": true, "cc": true, "bcc": true, "reply-to": true,
	"subject": true, "date": true, "message-id": true, "mime-version": true,
	"content-type": true, "content-transfer-encoding": true, "content-disposition": true,
	"content-id": true, "dkim-signature": true, "return-path": true,
}

// dkimHeaders are the fields a DKIM signature covers, besides the extra headers a message has.
// A field the mail lacks (Reply-To) is still listed: the signature then breaks if one is added.
var dkimHeaders = []string{
	"From", "To", "Subject", "Date", "Message-ID", "Reply-To", "MIME-Version", "Content-Type",
	"List-Unsubscribe", "List-Unsubscribe-Post",
}

// compose builds the mail of m. The body is Text as text/plain; with HTMLBody, Text and the
// HTML as multipart/alternative. HTML without Text goes alone as text/html: a text rendering
// made here would be a guess at what the sender meant, and the API has a field for their own.
func (t *Transport) compose(ctx context.Context, m transport.Outbound) (*outgoing, error) {
	from, err := mail.ParseAddress(m.From)
	if err != nil {
		return nil, &transport.Failure{Code: CodeInvalidSender, Message: "The sender's address is not a valid email address."}
	}
	to, err := mail.ParseAddress(m.To)
	if err != nil {
		return nil, &transport.Failure{Code: CodeInvalidRecipient, Message: "The recipient's address is not a valid email address."}
	}
	id, err := t.messageID(from.Address)
	if err != nil {
		return nil, err
	}

	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	msg.FromMailAddress(&mail.Address{Name: m.FromName, Address: from.Address})
	msg.ToMailAddress(to)
	if m.ReplyTo != "" {
		replyTo, err := mail.ParseAddress(m.ReplyTo)
		if err != nil {
			return nil, &transport.Failure{Code: CodeInvalidReplyTo, Message: "The reply-to address is not a valid email address."}
		}
		msg.ReplyToMailAddress(replyTo)
	}
	msg.Subject(m.Subject)
	msg.SetDateWithValue(time.Now())
	msg.SetMessageIDWithValue(id)
	if err := setHeaders(msg, m.Headers); err != nil {
		return nil, err
	}
	switch {
	case m.HTMLBody == "":
		msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	case m.Text == "":
		msg.SetBodyString(gomail.TypeTextHTML, m.HTMLBody)
	default:
		msg.SetBodyString(gomail.TypeTextPlain, m.Text)
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTMLBody)
	}
	if err := t.attach(ctx, msg, m.Attachments); err != nil {
		return nil, err
	}

	var buf bytes.Buffer
	if _, err := msg.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("smtp: render mail: %w", err)
	}
	data := buf.Bytes()
	for k := m.DKIM; k != nil; k = k.Also { // one DKIM-Signature a key of the domain
		if data, err = sign(data, k, m.Headers); err != nil {
			return nil, err
		}
	}
	envelope := from.Address
	if m.ReturnPath != "" {
		rp, err := mail.ParseAddress(m.ReturnPath)
		if err != nil || rp.Name != "" {
			return nil, &transport.Failure{Code: CodeInvalidSender, Message: "The return path is not an email address."}
		}
		envelope = rp.Address
	}
	return &outgoing{from: envelope, to: to.Address, messageID: id, data: data}, nil
}

// messageID is a new Message-ID's value, unique by 128 random bits, in the From domain
// (RFC 5322 3.6.4): <hex@domain> once bracketed. A domain that is not ASCII (an IDN the sender
// wrote in Unicode) is replaced by the HELO name.
func (t *Transport) messageID(from string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("smtp: make message id: %w", err)
	}
	domain := from[strings.LastIndexByte(from, '@')+1:]
	for _, r := range domain {
		if r <= ' ' || r > '~' || r == '>' || r == '<' {
			domain = t.cfg.HeloName
			break
		}
	}
	return hex.EncodeToString(b[:]) + "@" + domain, nil
}

// setHeaders adds the extra header fields, in name order. A name must be printable ASCII
// without a colon and not a field the transport writes; a value may not break the line.
func setHeaders(msg *gomail.Msg, headers map[string]string) error {
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		value := headers[name]
		if !fieldName(name) || reservedHeaders[strings.ToLower(name)] || strings.ContainsAny(value, "\r\n\x00") {
			return &transport.Failure{Code: CodeInvalidHeader,
				Message: fmt.Sprintf("The header %q cannot be added to the mail (a name the transport writes itself, or not a valid field).", printable(name))}
		}
		msg.SetGenHeader(gomail.Header(name), value) // a non-ASCII value is RFC 2047-encoded
	}
	return nil
}

// fieldName: RFC 5322 ftext, 1 to 76 characters.
func fieldName(name string) bool {
	if name == "" || len(name) > 76 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 33 || c > 126 || c == ':' {
			return false
		}
	}
	return true
}

// printable is s with anything but printable ASCII replaced, cut to 80 bytes, for a message.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, s)
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// attach adds the attachments in order, fetching those given by URL, within
// Config.MaxAttachmentBytes for all of them together. One with a ContentID goes inline
// (multipart/related, Content-ID: <id>), the others as attachments.
func (t *Transport) attach(ctx context.Context, msg *gomail.Msg, atts []transport.Attachment) error {
	budget := t.cfg.MaxAttachmentBytes
	for i, a := range atts {
		name := a.Filename
		if name == "" {
			name = fmt.Sprintf("attachment-%d", i+1)
		}
		content := a.Content
		if content == nil {
			if a.URL == "" {
				return &transport.Failure{Code: CodeAttachmentUnavailable,
					Message: fmt.Sprintf("Attachment %d (%q) has neither content nor a URL.", i+1, printable(name))}
			}
			var err error
			if content, err = t.fetch(ctx, i, name, a.URL, budget); err != nil {
				return err
			}
		}
		if int64(len(content)) > budget {
			return t.tooLarge()
		}
		budget -= int64(len(content))

		opts := []gomail.FileOption{gomail.WithFileContentType(gomail.ContentType(contentType(a, name, content)))}
		if a.ContentID == "" {
			msg.AttachReadSeeker(name, bytes.NewReader(content), opts...)
			continue
		}
		cid := strings.TrimSuffix(strings.TrimPrefix(a.ContentID, "<"), ">")
		if cid == "" || strings.ContainsAny(cid, "<> \t\r\n\x00") {
			return &transport.Failure{Code: CodeInvalidHeader,
				Message: fmt.Sprintf("Attachment %d (%q) has a content id that cannot be a Content-ID.", i+1, printable(name))}
		}
		opts = append(opts, gomail.WithFileContentID("<"+cid+">"))
		msg.EmbedReadSeeker(name, bytes.NewReader(content), opts...)
	}
	return nil
}

func (t *Transport) tooLarge() error {
	return &transport.Failure{Code: CodeAttachmentTooLarge,
		Message: fmt.Sprintf("The attachments exceed %d bytes together.", t.cfg.MaxAttachmentBytes)}
}

// fetch reads an attachment given by URL, at most budget bytes. A 4xx answer (but 408 and 429)
// fails the message; the network, a 5xx, 408 and 429 are tried again. Errors name the
// attachment by its place and name, not by its URL, which may carry a token.
func (t *Transport) fetch(ctx context.Context, i int, name, raw string, budget int64) ([]byte, error) {
	which := fmt.Sprintf("attachment %d (%q)", i+1, printable(name))
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &transport.Failure{Code: CodeAttachmentUnavailable,
			Message: "The URL of " + which + " is not an absolute http(s) URL."}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &transport.Failure{Code: CodeAttachmentUnavailable,
			Message: "The URL of " + which + " cannot be requested."}
	}
	resp, err := t.cfg.HTTP.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("smtp: fetch %s: %w", which, err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch code := resp.StatusCode; {
	case code >= 500 || code == http.StatusRequestTimeout || code == http.StatusTooManyRequests:
		return nil, fmt.Errorf("smtp: fetch %s: HTTP %d", which, code)
	case code < 200 || code > 299:
		return nil, &transport.Failure{Code: CodeAttachmentUnavailable,
			Message: fmt.Sprintf("The URL of %s answered HTTP %d.", which, code)}
	}
	if resp.ContentLength > budget {
		return nil, t.tooLarge()
	}
	content, err := io.ReadAll(io.LimitReader(resp.Body, budget+1))
	if err != nil {
		return nil, fmt.Errorf("smtp: fetch %s: %w", which, err)
	}
	if int64(len(content)) > budget {
		return nil, t.tooLarge()
	}
	return content, nil
}

// contentType is the attachment's ContentType when it is a valid media type, else the type its
// file name's extension has, else what its first bytes look like.
func contentType(a transport.Attachment, name string, content []byte) string {
	if a.ContentType != "" {
		if mt, params, err := mime.ParseMediaType(a.ContentType); err == nil {
			delete(params, "name") // go-mail adds name= from the file name
			if ct := mime.FormatMediaType(mt, params); ct != "" {
				return ct
			}
		}
	}
	if ct := mime.TypeByExtension(filepath.Ext(name)); ct != "" {
		return ct
	}
	return http.DetectContentType(content)
}

// sign prefixes the mail with a DKIM-Signature (RFC 6376) of k, relaxed/relaxed, SHA-256,
// covering dkimHeaders and the extra headers.
func sign(data []byte, k *transport.DKIMKey, extra map[string]string) ([]byte, error) {
	fail := func(why string) error {
		return &transport.Failure{Code: CodeDKIMFailed,
			Message: fmt.Sprintf("The DKIM key of %q cannot sign the mail: %s.", printable(k.Domain), why)}
	}
	if k.Domain == "" || k.Selector == "" || k.Signer == nil {
		return nil, fail("the domain, the selector or the key is missing")
	}
	switch k.Signer.Public().(type) {
	case *rsa.PublicKey, ed25519.PublicKey:
	default:
		return nil, fail("it is neither an RSA nor an Ed25519 key")
	}
	keys := append([]string(nil), dkimHeaders...)
	seen := map[string]bool{}
	for _, h := range keys {
		seen[strings.ToLower(h)] = true
	}
	names := make([]string, 0, len(extra))
	for name := range extra {
		if !seen[strings.ToLower(name)] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	keys = append(keys, names...)

	var out bytes.Buffer
	out.Grow(len(data) + 1024)
	err := dkim.Sign(&out, bytes.NewReader(data), &dkim.SignOptions{
		Domain:                 k.Domain,
		Selector:               k.Selector,
		Signer:                 k.Signer,
		HeaderCanonicalization: dkim.CanonicalizationRelaxed,
		BodyCanonicalization:   dkim.CanonicalizationRelaxed,
		HeaderKeys:             keys,
	})
	if err != nil {
		return nil, fail(err.Error())
	}
	return out.Bytes(), nil
}
