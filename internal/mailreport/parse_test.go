package mailreport

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// crlf gives a message the line ends it has on the wire; the files keep LF.
func crlf(b []byte) []byte {
	return bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
}

func TestParseReports(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file string
		want Report
	}{
		{
			// RFC 3464 appendix: a delay that became a failure; its action decides.
			file: "rfc3464-simple.eml",
			want: Report{
				Kind:         KindBounce,
				ReportingMTA: "cs.utk.edu",
				Recipients: []Recipient{{
					FinalRecipient:    "louisl@larry.slip.umd.edu",
					OriginalRecipient: "louisl@larry.slip.umd.edu",
					Action:            "failed",
					Status:            "4.0.0",
					DiagnosticCode:    "426 connection timed out",
				}},
			},
		},
		{
			// RFC 3464 appendix: two failed recipients and a delayed one.
			file: "rfc3464-multi.eml",
			want: Report{
				Kind:         KindBounce,
				ReportingMTA: "cs.utk.edu",
				Recipients: []Recipient{
					{
						FinalRecipient:    "arathib@vnet.ibm.com",
						OriginalRecipient: "arathib@vnet.ibm.com",
						Action:            "failed",
						Status:            "5.0.0",
						DiagnosticCode:    "550 'arathib@vnet.IBM.COM' is not a registered gateway user",
						RemoteMTA:         "vnet.ibm.com",
					},
					{
						FinalRecipient:    "johnh@hpnjld.njd.hp.com",
						OriginalRecipient: "johnh@hpnjld.njd.hp.com",
						Action:            "delayed",
						Status:            "4.0.0",
					},
					{
						FinalRecipient:    "wsnell@sdcc13.ucsd.edu",
						OriginalRecipient: "wsnell@sdcc13.ucsd.edu",
						Action:            "failed",
						Status:            "5.0.0",
						DiagnosticCode:    "550 user unknown",
						RemoteMTA:         "sdcc13.ucsd.edu",
					},
				},
			},
		},
		{
			// RFC 3464 appendix's delayed DSN, with the original's headers returned.
			file: "rfc3464-delayed.eml",
			want: Report{
				Kind:              KindDelay,
				ReportingMTA:      "sun2.nsfnet-relay.ac.uk",
				OriginalMessageID: "199407081321.JAA01234@cs.utk.edu",
				OriginalFrom:      "owner-info-mime@cs.utk.edu",
				OriginalTo:        "thomas@de-montfort.ac.uk",
				Recipients: []Recipient{{
					FinalRecipient: "thomas@de-montfort.ac.uk",
					Action:         "delayed",
					Status:         "4.0.0",
				}},
			},
		},
		{
			// A positive DSN (NOTIFY=SUCCESS), as Postfix writes it.
			file: "positive-dsn.eml",
			want: Report{
				Kind:               KindDelivered,
				ReportingMTA:       "mx.example.org",
				OriginalEnvelopeID: "m-7f3a",
				OriginalMessageID:  "m-7f3a@mail.example.com",
				OriginalFrom:       "ada@example.com",
				OriginalTo:         "bob@example.org",
				Arrival:            time.Date(2026, 10, 1, 10, 0, 5, 0, time.UTC),
				Recipients: []Recipient{{
					FinalRecipient:    "bob@example.org",
					OriginalRecipient: "Bob@example.org",
					Action:            "delivered",
					Status:            "2.0.0",
					DiagnosticCode:    "delivered to mailbox",
				}},
			},
		},
		{
			// Status part in base64, field names in odd case, no Status field (taken from the
			// folded diagnostic), the original's Message-ID folded and To encoded.
			file: "postfix-bounce.eml",
			want: Report{
				Kind:              KindBounce,
				ReportingMTA:      "mail.example.net",
				OriginalMessageID: "m-9c1d@mail.example.com",
				OriginalFrom:      "ada@example.com",
				OriginalTo:        "nobody@example.org, bjorn@example.org",
				Arrival:           time.Date(2026, 10, 1, 9, 59, 59, 0, time.UTC),
				Recipients: []Recipient{{
					FinalRecipient: "nobody@example.org",
					Action:         "failed",
					Status:         "5.1.1",
					DiagnosticCode: "550 5.1.1 <nobody@example.org>: Recipient address rejected: User unknown",
					RemoteMTA:      "mx.example.org",
				}},
			},
		},
		{
			// RFC 5965 appendix B.1: no Original-Rcpt-To, and the original's To is no address.
			file: "rfc5965-simple.eml",
			want: Report{
				Kind:              KindComplaint,
				FeedbackType:      "abuse",
				OriginalMessageID: "8787KJKJ3K4J3K4J3K4J3.mail@example.net",
				OriginalFrom:      "somespammer@example.net",
				OriginalTo:        "<Undisclosed Recipients>",
			},
		},
		{
			// RFC 5965 appendix B.2.
			file: "rfc5965-extended.eml",
			want: Report{
				Kind:              KindComplaint,
				FeedbackType:      "abuse",
				ReportingMTA:      "mail.example.com",
				OriginalMessageID: "8787KJKJ3K4J3K4J3K4J3.mail@example.net",
				OriginalFrom:      "somespammer@example.net",
				OriginalTo:        "<Undisclosed Recipients>",
				Arrival:           time.Date(2005, 3, 8, 18, 0, 0, 0, time.UTC), // 14:00 EDT
				Recipients:        []Recipient{{FinalRecipient: "user@example.com"}},
			},
		},
	} {
		raw := readTestdata(t, c.file)
		for _, ends := range []struct {
			name string
			raw  []byte
		}{{"LF", raw}, {"CRLF", crlf(raw)}} {
			got, err := Parse(ends.raw)
			if err != nil {
				t.Errorf("%s (%s): %v", c.file, ends.name, err)
				continue
			}
			if !reflect.DeepEqual(*got, c.want) {
				t.Errorf("%s (%s):\n got %+v\nwant %+v", c.file, ends.name, *got, c.want)
			}
		}
	}
}

func TestPermanentFailures(t *testing.T) {
	t.Parallel()
	rep, err := Parse(readTestdata(t, "rfc3464-multi.eml"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.PermanentFailures() {
		got = append(got, r.FinalRecipient)
	}
	if want := []string{"arathib@vnet.ibm.com", "wsnell@sdcc13.ucsd.edu"}; !reflect.DeepEqual(got, want) {
		t.Errorf("PermanentFailures = %q, want %q", got, want)
	}

	for _, c := range []struct {
		r    Recipient
		want bool
	}{
		{Recipient{Action: "failed", Status: "4.4.7"}, true}, // expired in the queue: given up
		{Recipient{Action: "delayed", Status: "4.4.1"}, false},
		{Recipient{Action: "delivered", Status: "2.0.0"}, false},
		{Recipient{Status: "5.7.1"}, true},
		{Recipient{}, false},
	} {
		if got := c.r.Permanent(); got != c.want {
			t.Errorf("%+v.Permanent() = %v, want %v", c.r, got, c.want)
		}
	}
}

func TestKindFromRecipients(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		actions []string
		want    Kind
	}{
		{[]string{"delayed"}, KindDelay},
		{[]string{"delayed", "delayed"}, KindDelay},
		{[]string{"delayed", "failed"}, KindBounce},
		{[]string{"delivered", "relayed", "expanded"}, KindDelivered},
		{[]string{"delivered", "delayed"}, KindDelay},
	} {
		var rcpts []Recipient
		for _, a := range c.actions {
			rcpts = append(rcpts, Recipient{FinalRecipient: "a@example.org", Action: a})
		}
		if got := kindOf(rcpts); got != c.want {
			t.Errorf("kindOf(%q) = %s, want %s", c.actions, got, c.want)
		}
	}
}

// report wraps a status part and an original in a multipart/report.
func report(reportType, statusType, status, original string) []byte {
	return []byte("From: MAILER-DAEMON@mx.example.org\nTo: bounces@mail.example.com\nSubject: report\n" +
		"MIME-Version: 1.0\nContent-Type: multipart/report; report-type=" + reportType + "; boundary=\"XX\"\n\n" +
		"--XX\nContent-Type: text/plain\n\nSomething happened.\n\n" +
		"--XX\nContent-Type: " + statusType + "\n\n" + status + "\n" +
		"--XX\nContent-Type: text/rfc822-headers\n\n" + original + "\n" +
		"--XX--\n")
}

func TestParseVariants(t *testing.T) {
	t.Parallel()
	// Folded fields, no per-message block, no Final-Recipient, quoted-printable status.
	raw := []byte("From: MAILER-DAEMON@mx.example.org\nMIME-Version: 1.0\n" +
		"Content-Type: multipart/report;\n\treport-type=delivery-status;\n\tboundary=XX\n\n" +
		"--XX\nContent-Type: message/delivery-status\nContent-Transfer-Encoding: quoted-printable\n\n" +
		"Original-Recipient: rfc822;carol@example.org\nAction: failed (mailbox full)\n" +
		"Status: 5.2.2\nDiagnostic-Code: smtp; 552 5.2.2 mailbox =\nfull\n" +
		"--XX--\n")
	rep, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := Recipient{
		FinalRecipient: "carol@example.org", OriginalRecipient: "carol@example.org",
		Action: "failed", Status: "5.2.2", DiagnosticCode: "552 5.2.2 mailbox full",
	}
	if len(rep.Recipients) != 1 || rep.Recipients[0] != want {
		t.Errorf("recipients = %+v, want [%+v]", rep.Recipients, want)
	}

	// ARF with several Original-Rcpt-To and a Feedback-Type in capitals; the original's
	// headers carry an ENVID-less Message-ID.
	arf := report("feedback-report", "message/feedback-report",
		"Feedback-Type: FRAUD\nUser-Agent: FBL/1\nVersion: 1\nOriginal-Rcpt-To: <a@example.org>\nOriginal-Rcpt-To: b@example.org\n",
		"From: Shop <shop@example.com>\nTo: someone@example.org\nMessage-ID: <x1@example.com>\n")
	rep, err = Parse(arf)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kind != KindComplaint || rep.FeedbackType != "fraud" || rep.OriginalMessageID != "x1@example.com" ||
		len(rep.Recipients) != 2 || rep.Recipients[1].FinalRecipient != "b@example.org" {
		t.Errorf("ARF report = %+v", rep)
	}

	// Without Original-Rcpt-To, the original's To; without its From, Original-Mail-From.
	arf = report("feedback-report", "message/feedback-report",
		"Feedback-Type: abuse\nOriginal-Mail-From: <bounces@mail.example.com>\n",
		"To: Dan <dan@example.org>\nMessage-ID: <x2@example.com>\n")
	rep, err = Parse(arf)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OriginalFrom != "bounces@mail.example.com" || len(rep.Recipients) != 1 || rep.Recipients[0].FinalRecipient != "dan@example.org" {
		t.Errorf("ARF fallbacks: %+v", rep)
	}

	// Read reads the same from a stream.
	rep, err = Read(bytes.NewReader(readTestdata(t, "rfc3464-multi.eml")))
	if err != nil || len(rep.Recipients) != 3 {
		t.Errorf("Read = %+v, %v", rep, err)
	}
}

func TestParseNotAReport(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string][]byte{
		"plain mail with a status-like part": readTestdata(t, "plain.eml"),
		"text only":                          []byte("From: a@example.org\nSubject: hi\n\nhello\n"),
		"read receipt (MDN)": report("disposition-notification", "message/disposition-notification",
			"Reporting-UA: mail.example.org\nFinal-Recipient: rfc822;a@example.org\nDisposition: manual-action/MDN-sent-manually; displayed\n",
			"Message-ID: <x@example.com>\n"),
	} {
		rep, err := Parse(raw)
		if !errors.Is(err, ErrNotAReport) {
			t.Errorf("%s: Parse = %+v, %v; want ErrNotAReport", name, rep, err)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	t.Parallel()
	multi := readTestdata(t, "rfc3464-multi.eml")
	cut := bytes.Index(multi, []byte("Original-Recipient: rfc822;wsnell"))
	for _, c := range []struct {
		name string
		raw  []byte
		want error
	}{
		{"truncated in the status part", multi[:cut], ErrMalformed},
		{"truncated before the closing boundary", multi[:len(multi)-40], ErrMalformed},
		{"garbage status part", report("delivery-status", "message/delivery-status",
			"\x00\x01 garbage \xff\nno fields here\n\n:::\n: value without a name\n", ""), ErrMalformed},
		{"status part without recipients", report("delivery-status", "message/delivery-status",
			"Reporting-MTA: dns; mx.example.org\n", ""), ErrMalformed},
		{"recipient without action or status", report("delivery-status", "message/delivery-status",
			"Reporting-MTA: dns; mx.example.org\n\nFinal-Recipient: rfc822;a@example.org\n", ""), ErrMalformed},
		{"feedback report without type", report("feedback-report", "message/feedback-report",
			"User-Agent: x\nVersion: 1\n", ""), ErrMalformed},
		{"bad base64", []byte("Content-Type: multipart/report; boundary=XX\n\n--XX\n" +
			"Content-Type: message/delivery-status\nContent-Transfer-Encoding: base64\n\n!!!!not base64!!!!\n--XX--\n"), ErrMalformed},
		{"no boundary", []byte("Content-Type: multipart/report; report-type=delivery-status\n\nbody\n"), ErrMalformed},
		{"no header at all", []byte("\x00\xff\xfe binary junk without a colon"), ErrMalformed},
		{"too many parts", []byte("Content-Type: multipart/report; boundary=XX\n\n" +
			strings.Repeat("--XX\nContent-Type: text/plain\n\nx\n", maxParts+1) + "--XX--\n"), ErrMalformed},
		{"too large", append([]byte("From: a@example.org\n\n"), make([]byte, MaxSize)...), ErrTooLarge},
	} {
		rep, err := Parse(c.raw)
		if !errors.Is(err, c.want) || rep != nil {
			t.Errorf("%s: Parse = %+v, %v; want %v", c.name, rep, err, c.want)
		}
	}

	// Read stops reading past the limit.
	big := bytes.NewReader(append([]byte("From: a@example.org\n\n"), make([]byte, 2*MaxSize)...))
	if _, err := Read(big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Read of a huge message: %v, want ErrTooLarge", err)
	}
	if read := int64(2*MaxSize+21) - int64(big.Len()); read > MaxSize+1 {
		t.Errorf("Read consumed %d bytes, want at most %d", read, MaxSize+1)
	}
}

func TestFieldHelpers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		fn    func(string) string
		cases map[string]string
	}{
		{"address", address, map[string]string{
			"rfc822;a@example.org":     "a@example.org",
			"RFC822; <a@example.org> ": "a@example.org",
			"unknown; nair_s":          "nair_s",
			"a@example.org":            "a@example.org",
			"":                         "",
		}},
		{"stripType", stripType, map[string]string{
			"smtp; 550 5.1.1 user unknown; try later": "550 5.1.1 user unknown; try later",
			"550 user unknown; try later":             "550 user unknown; try later",
			"dns;mx.example.org":                      "mx.example.org",
		}},
		{"enhancedCode", enhancedCode, map[string]string{
			"550 5.1.1 <a@example.org>: user unknown": "5.1.1",
			"550 #5.1.0 Address rejected":             "5.1.0",
			"421 4.7.0 (try later)":                   "4.7.0",
			"connect to 10.4.5.6 refused":             "",
			"no code here":                            "",
		}},
		{"statusCode", statusCode, map[string]string{
			"5.0.0 (permanent failure)": "5.0.0",
			" 4.4.7":                    "4.4.7",
			"5.0":                       "",
			"9.9.9":                     "",
		}},
		{"messageID", messageID, map[string]string{
			"<m@example.com>":            "m@example.com",
			" <m@example.com> (comment)": "m@example.com",
			"8787KJ.mail@example.net":    "8787KJ.mail@example.net",
			"":                           "",
		}},
		{"firstWord", firstWord, map[string]string{
			"failed (mailbox full)": "failed",
			"Delayed;":              "Delayed",
			"relayed(to gateway)":   "relayed",
			"  ":                    "",
		}},
	} {
		for in, want := range c.cases {
			if got := c.fn(in); got != want {
				t.Errorf("%s(%q) = %q, want %q", c.name, in, got, want)
			}
		}
	}
}

// FuzzParse: no input makes Parse panic, and an error comes with no report.
func FuzzParse(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".eml") {
			f.Add(readTestdata(f, e.Name()))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		rep, err := Parse(raw)
		if (err == nil) == (rep == nil) {
			t.Fatalf("Parse = %v, %v: want a report or an error", rep, err)
		}
		if err == nil && len(rep.Recipients) == 0 && rep.Kind != KindComplaint {
			t.Fatalf("a %s without recipients", rep.Kind)
		}
	})
}
