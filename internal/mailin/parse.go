package mailin

import (
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"strings"

	"github.com/jhillyerd/enmime/v2"

	"github.com/switchboard-io/switchboard/internal/mailreport"
)

// maxWarnings bounds the parse warnings kept on a Mail, and those kept per MIME part.
const maxWarnings = 20

// parse reads the header fields and parts of raw. Only a message that does not parse at all
// is an error; what the parser read past becomes a warning.
func (s *Server) parse(raw *RawMail) (*Mail, error) {
	env, err := s.parser.ReadEnvelope(raw.Reader())
	if err != nil {
		return nil, fmt.Errorf("parse message: %w", err)
	}
	m := &Mail{
		contentType: mediaType(env.GetHeader("Content-Type")),
		Subject:     env.GetHeader("Subject"),
		MessageID:   firstOf(msgIDs(env.GetHeader("Message-Id"))),
		InReplyTo:   msgIDs(env.GetHeader("In-Reply-To")),
		References:  msgIDs(env.GetHeader("References")),
		Text:        env.Text,
		HTML:        env.HTML,
	}
	for _, e := range env.Errors {
		m.warn(e.Error())
	}
	if from := m.addresses(env, "From"); len(from) > 0 {
		m.From = from[0]
	}
	m.To = m.addresses(env, "To")
	m.Cc = m.addresses(env, "Cc")
	if date, err := env.Date(); err == nil {
		m.Date = date.UTC()
	} else if !errors.Is(err, mail.ErrHeaderNotPresent) {
		m.warn("Date: unreadable")
	}
	for _, p := range env.Attachments {
		m.Attachments = append(m.Attachments, attachmentOf(p))
	}
	for _, p := range env.Inlines {
		// Mail programs mark their text bodies inline too; those are Text and HTML already.
		if p.FileName == "" && p.ContentID == "" && (p.ContentType == "text/plain" || p.ContentType == "text/html") {
			continue
		}
		m.Inlines = append(m.Inlines, attachmentOf(p))
	}
	return m, nil
}

// addresses reads the address list of the header field key; a field that does not parse is a
// warning and no addresses.
func (m *Mail) addresses(env *enmime.Envelope, key string) []mail.Address {
	list, err := env.AddressList(key)
	if errors.Is(err, mail.ErrHeaderNotPresent) {
		return nil
	}
	if err != nil {
		m.warn(key + ": unreadable address list")
		return nil
	}
	out := make([]mail.Address, 0, len(list))
	for _, a := range list {
		out = append(out, *a)
	}
	return out
}

// warn keeps a parse warning, up to maxWarnings of them.
func (m *Mail) warn(w string) {
	if len(m.Warnings) < maxWarnings {
		m.Warnings = append(m.Warnings, w)
	}
}

// attachmentOf is the Attachment of a MIME part.
func attachmentOf(p *enmime.Part) Attachment {
	return Attachment{
		Filename:    p.FileName,
		ContentType: p.ContentType,
		ContentID:   strings.Trim(strings.TrimSpace(p.ContentID), "<>"),
		Content:     p.Content,
	}
}

// msgIDs returns the message ids in a Message-ID, In-Reply-To or References field, without
// their angle brackets. A field without brackets, as some programs write, is read as ids
// separated by white space.
func msgIDs(field string) []string {
	var ids []string
	rest := field
	for {
		open := strings.IndexByte(rest, '<')
		if open < 0 {
			break
		}
		end := strings.IndexByte(rest[open:], '>')
		if end < 0 {
			break
		}
		if id := strings.TrimSpace(rest[open+1 : open+end]); id != "" {
			ids = append(ids, id)
		}
		rest = rest[open+end+1:]
	}
	if ids == nil && !strings.ContainsAny(field, "<>") {
		ids = strings.Fields(field)
	}
	return ids
}

// firstOf is the first of ids, or "".
func firstOf(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// report reads the delivery report or complaint raw is; nil for ordinary mail. Only a
// message whose own header says multipart/report is read as one (what mailreport takes for a
// report), so that ordinary mail is not copied for it. A report that does not read, or a
// message too large to read to a bounce address, is a warning: the message is delivered all
// the same.
func report(env Envelope, raw *RawMail, m *Mail) *mailreport.Report {
	if m.contentType != "multipart/report" {
		return nil
	}
	var rep *mailreport.Report
	err := fmt.Errorf("read report: %w (over %d bytes)", mailreport.ErrTooLarge, mailreport.MaxSize)
	if raw.Len() <= mailreport.MaxSize {
		rep, err = mailreport.Read(raw.Reader())
	}
	switch {
	case err == nil:
		return rep
	case errors.Is(err, mailreport.ErrNotAReport):
	case errors.Is(err, mailreport.ErrTooLarge) && !toBounceAddress(env):
		// Ordinary large mail: no report was expected.
	default:
		m.warn(err.Error())
	}
	return nil
}

// mediaType is the media type of a Content-Type field in lower case, as mailreport reads it:
// text/plain when it is empty, "" when it does not parse.
func mediaType(field string) string {
	if strings.TrimSpace(field) == "" {
		return "text/plain"
	}
	mt, _, _ := mime.ParseMediaType(field)
	return mt
}

// toBounceAddress reports whether one of the recipients is a bounce address.
func toBounceAddress(env Envelope) bool {
	for _, r := range env.Recipients {
		if r.Bounce {
			return true
		}
	}
	return false
}
