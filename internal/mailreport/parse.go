package mailreport

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"strings"
)

// maxParts bounds the parts of a report read: a DSN has three, an ARF three.
const maxParts = 100

// Parse reads a report from a whole message as received. Ordinary mail is ErrNotAReport; a
// message larger than MaxSize is ErrTooLarge; a report that cannot be read is ErrMalformed.
// Only a top-level multipart/report counts: a report forwarded as an attachment is ordinary
// mail. The delivery-status or feedback-report part must parse; the returned original is read
// for what it gives, and may be missing.
func Parse(raw []byte) (*Report, error) {
	if len(raw) > MaxSize {
		return nil, fmt.Errorf("parse report: %w (over %d bytes)", ErrTooLarge, MaxSize)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		// Not wrapped: net/textproto quotes the offending line, and errors get logged.
		return nil, fmt.Errorf("parse report: %w: the header does not parse", ErrMalformed)
	}
	mt, params := mediaType(msg.Header.Get("Content-Type"))
	if mt != "multipart/report" {
		return nil, fmt.Errorf("parse report: %w (content type %q)", ErrNotAReport, mt)
	}
	rep, err := readReport(msg.Body, params["boundary"])
	if err != nil {
		return nil, fmt.Errorf("parse report: %w", err)
	}
	return rep, nil
}

// Read reads a message from r, at most MaxSize bytes of it, and parses it as Parse does.
func Read(r io.Reader) (*Report, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	return Parse(raw)
}

// readReport reads the parts of a multipart/report body and builds the report from its
// status part: message/delivery-status makes a DSN, message/feedback-report a complaint.
func readReport(body io.Reader, boundary string) (*Report, error) {
	if boundary == "" {
		return nil, fmt.Errorf("%w: multipart/report without a boundary", ErrMalformed)
	}
	var status, feedback, original []byte
	mr := multipart.NewReader(body, boundary)
	for n := 0; ; n++ {
		if n == maxParts {
			return nil, fmt.Errorf("%w: more than %d parts", ErrMalformed, maxParts)
		}
		p, err := mr.NextRawPart()
		if err == io.EOF { // the closing boundary; a wrapped EOF is a truncated message
			break
		}
		if err != nil {
			return nil, partError(err)
		}
		var dst *[]byte
		switch ct, _ := mediaType(p.Header.Get("Content-Type")); ct {
		case "message/delivery-status", "message/global-delivery-status":
			dst = &status
		case "message/feedback-report":
			dst = &feedback
		case "message/rfc822", "text/rfc822-headers", "message/rfc822-headers", "message/global", "message/global-headers":
			dst = &original
		}
		if dst == nil || *dst != nil { // other parts, and a second of a kind, are skipped
			continue
		}
		b, err := io.ReadAll(decode(p))
		if err != nil {
			return nil, partError(err)
		}
		*dst = b
	}

	orig := headerFields(original)
	switch {
	case status != nil:
		return dsnReport(status, orig)
	case feedback != nil:
		return feedbackReport(feedback, orig)
	}
	// A multipart/report of another type: a read receipt (disposition-notification), a TLS report.
	return nil, ErrNotAReport
}

// dsnReport builds a DSN's report from its delivery-status part: a block of per-message
// fields, then one block per recipient (RFC 3464 2.1).
func dsnReport(status []byte, orig fields) (*Report, error) {
	bs := blocks(status)
	perMessage := fields{}
	// Some servers leave out the per-message block; its Reporting-MTA is required, not vital.
	if len(bs) > 0 && !isRecipientBlock(bs[0]) {
		perMessage, bs = bs[0], bs[1:]
	}
	rep := &Report{
		ReportingMTA:       stripType(perMessage.get("reporting-mta")),
		OriginalEnvelopeID: perMessage.get("original-envelope-id"),
		Arrival:            parseDate(perMessage.get("arrival-date")),
	}
	rep.setOriginal(orig)
	for _, b := range bs {
		r := Recipient{
			FinalRecipient:    address(b.get("final-recipient")),
			OriginalRecipient: address(b.get("original-recipient")),
			Action:            strings.ToLower(firstWord(b.get("action"))),
			Status:            statusCode(b.get("status")),
			DiagnosticCode:    stripType(b.get("diagnostic-code")),
			RemoteMTA:         stripType(b.get("remote-mta")),
		}
		if r.FinalRecipient == "" {
			r.FinalRecipient = r.OriginalRecipient
		}
		if r.Status == "" {
			r.Status = enhancedCode(r.DiagnosticCode)
		}
		if r.Action == "" {
			r.Action = actionOf(r.Status)
		}
		if r.FinalRecipient == "" || r.Action == "" {
			continue // not a recipient block: nothing to act on
		}
		rep.Recipients = append(rep.Recipients, r)
	}
	if len(rep.Recipients) == 0 {
		return nil, fmt.Errorf("%w: no recipient with an action in the delivery-status part", ErrMalformed)
	}
	rep.Kind = kindOf(rep.Recipients)
	return rep, nil
}

// feedbackReport builds a complaint from an ARF's feedback-report part (RFC 5965 3.1).
func feedbackReport(feedback []byte, orig fields) (*Report, error) {
	f := fields{}
	for _, b := range blocks(feedback) {
		for k, v := range b {
			f[k] = append(f[k], v...)
		}
	}
	typ := strings.ToLower(firstWord(f.get("feedback-type")))
	if typ == "" {
		return nil, fmt.Errorf("%w: feedback report without a Feedback-Type", ErrMalformed)
	}
	arrival := f.get("arrival-date")
	if arrival == "" {
		arrival = f.get("received-date") // the name of drafts before RFC 5965
	}
	rep := &Report{
		Kind:               KindComplaint,
		FeedbackType:       typ,
		ReportingMTA:       stripType(f.get("reporting-mta")),
		OriginalEnvelopeID: f.get("original-envelope-id"),
		Arrival:            parseDate(arrival),
	}
	rep.setOriginal(orig)
	if rep.OriginalFrom == "" {
		rep.OriginalFrom = address(f.get("original-mail-from"))
	}
	for _, v := range f["original-rcpt-to"] {
		if a := address(v); a != "" {
			rep.Recipients = append(rep.Recipients, Recipient{FinalRecipient: a})
		}
	}
	if len(rep.Recipients) == 0 {
		// Only addresses that parse: providers that redact the recipient write "<Undisclosed Recipients>".
		if list, err := mail.ParseAddressList(orig.get("to")); err == nil {
			for _, a := range list {
				rep.Recipients = append(rep.Recipients, Recipient{FinalRecipient: a.Address})
			}
		}
	}
	return rep, nil
}

// setOriginal takes the original message's identity from its header fields.
func (r *Report) setOriginal(h fields) {
	r.OriginalMessageID = messageID(h.get("message-id"))
	r.OriginalFrom = addressList(h.get("from"))
	r.OriginalTo = addressList(h.get("to"))
}

// mediaType is a Content-Type's media type in lower case, and its parameters; text/plain when
// missing (RFC 2045 5.2).
func mediaType(v string) (string, map[string]string) {
	if strings.TrimSpace(v) == "" {
		return "text/plain", nil
	}
	mt, params, err := mime.ParseMediaType(v)
	if err != nil && mt == "" {
		return "", nil
	}
	return mt, params
}

// partError says why a part could not be read without quoting the message, as the errors of
// mime/multipart and net/textproto do.
func partError(err error) error {
	var b64 base64.CorruptInputError
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the message ends inside a part", ErrMalformed)
	case errors.As(err, &b64):
		return fmt.Errorf("%w: a part's base64 is corrupt", ErrMalformed)
	}
	return fmt.Errorf("%w: a part does not parse", ErrMalformed)
}

// decode undoes a part's Content-Transfer-Encoding: some servers send the status part in
// base64 or quoted-printable although RFC 3464 asks for 7bit.
func decode(p *multipart.Part) io.Reader {
	switch strings.ToLower(strings.TrimSpace(p.Header.Get("Content-Transfer-Encoding"))) {
	case "base64":
		return base64.NewDecoder(base64.StdEncoding, p)
	case "quoted-printable":
		return quotedprintable.NewReader(p)
	}
	return p
}
