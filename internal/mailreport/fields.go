package mailreport

import (
	"bytes"
	"net/mail"
	"regexp"
	"strings"
	"time"
)

// fields are the header-style fields of one block of a report part, by lower-case name.
type fields map[string][]string

// get returns the first value of the field name, or "".
func (f fields) get(name string) string {
	if v := f[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// blocks reads text as blocks of header-style fields separated by blank lines, the shape of a
// delivery-status and a feedback-report part. It is lenient as reports in the wild need: CRLF
// or LF, names in any case, folded lines joined, and a line that is no field taken as the
// continuation of the field before it (or dropped at the start of a block).
func blocks(text []byte) []fields {
	return readBlocks(text, -1)
}

// headerFields reads the header of a returned message or header block: its first block.
func headerFields(text []byte) fields {
	if bs := readBlocks(text, 1); len(bs) > 0 {
		return bs[0]
	}
	return fields{}
}

// readBlocks reads at most limit blocks (all when limit < 0).
func readBlocks(text []byte, limit int) []fields {
	var out []fields
	cur, last := fields{}, ""
	for len(text) > 0 && limit != 0 {
		var line []byte
		line, text, _ = bytes.Cut(text, []byte("\n"))
		s := strings.TrimRight(string(line), "\r")
		if strings.TrimSpace(s) == "" {
			if len(cur) > 0 {
				out, limit = append(out, cur), limit-1
				cur = fields{}
			}
			last = ""
			continue
		}
		name, value, ok := strings.Cut(s, ":")
		name = strings.TrimSpace(name)
		if s[0] == ' ' || s[0] == '\t' || !ok || name == "" || strings.ContainsAny(name, " \t") {
			if last != "" {
				vals := cur[last]
				vals[len(vals)-1] = strings.TrimSpace(vals[len(vals)-1] + " " + strings.TrimSpace(s))
			}
			continue
		}
		last = strings.ToLower(name)
		cur[last] = append(cur[last], strings.TrimSpace(value))
	}
	if len(cur) > 0 && limit != 0 {
		out = append(out, cur)
	}
	return out
}

// isRecipientBlock reports whether a delivery-status block is about a recipient.
func isRecipientBlock(b fields) bool {
	return b.get("final-recipient") != "" || b.get("original-recipient") != "" || b.get("action") != ""
}

// stripType removes the type before the first semicolon of a typed value: "rfc822;a@b" (an
// address), "dns; mx.example.com" (an MTA), "smtp; 550 …" (a diagnostic). A value whose part
// before the semicolon is no type token is kept whole.
func stripType(v string) string {
	typ, rest, ok := strings.Cut(v, ";")
	typ = strings.TrimSpace(typ)
	if !ok || typ == "" || strings.ContainsAny(typ, " \t@<>\"") {
		return strings.TrimSpace(v)
	}
	return strings.TrimSpace(rest)
}

// address is a typed address field's address: type and angle brackets removed.
func address(v string) string {
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(stripType(v), "<"), ">"))
}

// addressList is the addresses of a From or To field, comma separated, or the field as
// written when it does not parse.
func addressList(v string) string {
	list, err := mail.ParseAddressList(v)
	if err != nil {
		return strings.TrimSpace(v)
	}
	addrs := make([]string, len(list))
	for i, a := range list {
		addrs[i] = a.Address
	}
	return strings.Join(addrs, ", ")
}

// messageID is a Message-ID field's identifier without angle brackets; RFC 5965's example
// writes it without them.
func messageID(v string) string {
	if i := strings.IndexByte(v, '<'); i >= 0 {
		if j := strings.IndexByte(v[i:], '>'); j > 0 {
			return strings.TrimSpace(v[i+1 : i+j])
		}
	}
	return strings.TrimSpace(v)
}

// firstWord is v's first word, without a trailing comment or semicolon: "failed (bad)" → "failed".
func firstWord(v string) string {
	words := strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == '\t' || r == ';' || r == '(' })
	if len(words) == 0 {
		return ""
	}
	return words[0]
}

var (
	// statusRE is an enhanced status code at the start of a Status field (RFC 3463).
	statusRE = regexp.MustCompile(`^([245]\.\d{1,3}\.\d{1,3})\b`)
	// diagnosticStatusRE is one inside a diagnostic, standing alone: "550 5.1.1 user unknown",
	// "#5.1.0", not the tail of an address such as 10.4.5.6.
	diagnosticStatusRE = regexp.MustCompile(`(?:^|[\s#(])([245]\.\d{1,3}\.\d{1,3})(?:$|[\s):;,])`)
)

// statusCode is the code of a Status field, "5.0.0 (permanent failure)" → "5.0.0"; "" if none.
func statusCode(v string) string {
	if m := statusRE.FindStringSubmatch(strings.TrimSpace(v)); m != nil {
		return m[1]
	}
	return ""
}

// enhancedCode is the first enhanced status code in a diagnostic, or "".
func enhancedCode(diag string) string {
	if m := diagnosticStatusRE.FindStringSubmatch(diag); m != nil {
		return m[1]
	}
	return ""
}

// actionOf is the action a status implies when the Action field is missing.
func actionOf(status string) string {
	switch {
	case strings.HasPrefix(status, "5."):
		return "failed"
	case strings.HasPrefix(status, "4."):
		return "delayed"
	case strings.HasPrefix(status, "2."):
		return "delivered"
	}
	return ""
}

// obsZones are the zone names RFC 5322 4.3 still reads (EDT in RFC 5965's example), which
// net/mail takes for UTC.
var obsZones = map[string]int{
	"EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
}

// parseDate reads an RFC 5322 date in UTC; the zero time when empty or unreadable.
func parseDate(v string) time.Time {
	if v == "" {
		return time.Time{}
	}
	t, err := mail.ParseDate(v)
	if err != nil {
		return time.Time{}
	}
	if name, offset := t.Zone(); offset == 0 {
		if h, ok := obsZones[name]; ok {
			t = t.Add(-time.Duration(h) * time.Hour)
		}
	}
	return t.UTC()
}
