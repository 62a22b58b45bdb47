package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wantCode fails unless err is an *Error with the given code.
func wantCode(t *testing.T, err error, code string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *Error with code %q", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("error code = %q (%s), want %q", e.Code, e.Message, code)
	}
	return e
}

func utf16LE(s string) []byte {
	out := []byte{0xFF, 0xFE}
	for _, unit := range utf16.Encode([]rune(s)) {
		out = append(out, byte(unit), byte(unit>>8))
	}
	return out
}

func TestKindOf(t *testing.T) {
	pdfData := readFixture(t, "prose.pdf")
	htmlData := readFixture(t, "sample.html")
	markdownData := readFixture(t, "sample.md")
	pngData := readFixture(t, "scan.png")

	accepted := []struct {
		name, contentType, filename string
		data                        []byte
		want                        Kind
	}{
		{"pdf by type", "application/pdf", "report.pdf", pdfData, PDF},
		{"pdf by name when type is generic", "application/octet-stream", "REPORT.PDF", pdfData, PDF},
		{"pdf sniffed with no type or name", "", "", pdfData, PDF},
		{"plain text with charset parameter", "text/plain; charset=utf-8", "", []byte("hello"), PlainText},
		{"plain text by name", "", "notes.txt", []byte("hello"), PlainText},
		{"text with UTF-8 byte order mark", "text/plain", "", append([]byte{0xEF, 0xBB, 0xBF}, "héllo"...), PlainText},
		{"text in UTF-16 with byte order mark", "text/plain", "", utf16LE("héllo wörld"), PlainText},
		{"markdown by type", "text/markdown", "", markdownData, Markdown},
		{"markdown sent as text/plain", "text/plain", "README.md", markdownData, Markdown},
		{"markdown by name", "", "guide.markdown", markdownData, Markdown},
		{"html by type", "text/html; charset=utf-8", "", htmlData, HTML},
		{"xhtml by type", "application/xhtml+xml", "", htmlData, HTML},
		{"html by name", "", "page.htm", htmlData, HTML},
		{"html sniffed", "", "", []byte("<!DOCTYPE html><p>hello</p>"), HTML},
		{"text sniffed", "", "upload", []byte("just some words"), PlainText},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			got, err := KindOf(tc.contentType, tc.filename, tc.data)
			if err != nil {
				t.Fatalf("KindOf: %v", err)
			}
			if got != tc.want {
				t.Fatalf("KindOf = %q, want %q", got, tc.want)
			}
		})
	}

	rejected := []struct {
		name, contentType, filename string
		data                        []byte
		code                        string
		messageHas                  string
	}{
		{"html declared as pdf", "application/pdf", "report.pdf", htmlData, CodeContentMismatch, "HTML page"},
		{"garbage declared as pdf", "application/pdf", "", []byte("this is not a pdf at all"), CodeContentMismatch, "%PDF-"},
		{"html named .pdf", "", "report.pdf", htmlData, CodeContentMismatch, "report.pdf"},
		{"pdf declared as text", "text/plain", "notes.txt", pdfData, CodeContentMismatch, "is a PDF"},
		{"pdf declared as html", "text/html", "", pdfData, CodeContentMismatch, "is a PDF"},
		{"text with NUL bytes", "text/plain", "", []byte("abc\x00def"), CodeContentMismatch, "NUL"},
		{"text not UTF-8", "text/plain", "", []byte("caf\xe9 latin-1"), CodeContentMismatch, "UTF-8"},
		{"markdown not UTF-8", "text/markdown", "", []byte("# caf\xe9"), CodeContentMismatch, "UTF-8"},
		{"binary declared as html", "text/html", "", pngData, CodeContentMismatch, "NUL"},
		{"image type", "image/png", "scan.png", pngData, CodeUnsupportedType, "application/pdf"},
		{"word document type", "application/msword", "letter.doc", []byte("x"), CodeUnsupportedType, "text/plain"},
		{"unknown extension", "", "letter.docx", []byte("x"), CodeUnsupportedType, ".docx"},
		{"binary with no type or name", "", "", pngData, CodeUnsupportedType, "cannot be told"},
		{"over the size limit", "text/plain", "", bytes.Repeat([]byte("a"), MaxBytes+1), CodeTooLarge, "20 MiB"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			kind, err := KindOf(tc.contentType, tc.filename, tc.data)
			if kind != "" {
				t.Errorf("kind = %q, want none", kind)
			}
			e := wantCode(t, err, tc.code)
			if !strings.Contains(e.Message, tc.messageHas) {
				t.Errorf("message %q does not mention %q", e.Message, tc.messageHas)
			}
		})
	}
}

func TestTextPlain(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{
			"newlines, trailing spaces, blank lines and control characters",
			[]byte("\r\n  First line  \r\nsecond line\tend\r\n\r\n\r\n\r\nNext\x07 paragraph\fAfter page break\n\n"),
			"First line\nsecond line\tend\n\nNext paragraph\n\nAfter page break",
		},
		{"UTF-8 byte order mark", append([]byte{0xEF, 0xBB, 0xBF}, "Ñandú\n"...), "Ñandú"},
		{"UTF-16 with byte order mark", utf16LE("Καλημέρα\r\n\r\nκόσμε"), "Καλημέρα\n\nκόσμε"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Text(context.Background(), PlainText, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Text =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestTextMarkdown(t *testing.T) {
	got, err := Text(context.Background(), Markdown, readFixture(t, "sample.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"Returns policy",
		"Customers may return any item within thirty days of delivery. Items must be unused.",
		"What you need",
		"The original receipt, see our receipts page.",
		"The item in its original packaging.",
		"Nested step one.",
		"Quoted advice: keep the box.",
		"func refund() int { return 5 }",
		"Branch | Opens",
		"North | 08:00",
		"Use the refund_status field and snake_case_names stay intact.",
	}, "\n\n")
	if got != want {
		t.Fatalf("Text =\n%s\n\nwant\n%s", got, want)
	}
}

func TestTextHTML(t *testing.T) {
	got, err := Text(context.Background(), HTML, readFixture(t, "sample.html"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"Opening hours",
		"The shop opens at nine and closes at six. It is closed on public holidays.",
		"Unbolded words stay whole, and café & crème keep their accents.",
		"Bring your receipt.",
		"Returns take five days.",
		"Day | Opens",
		"Saturday | 10:00",
		"line one\n    indented line two",
		"First line\nsecond line",
	}, "\n\n")
	if got != want {
		t.Fatalf("Text =\n%s\n\nwant\n%s", got, want)
	}
}

func TestTextHTMLLegacyCharset(t *testing.T) {
	page := []byte("<html><head><meta charset=\"windows-1252\"></head><body><p>Se\xf1or Mu\xf1oz</p></body></html>")
	got, err := Text(context.Background(), HTML, page)
	if err != nil {
		t.Fatal(err)
	}
	if got != "Señor Muñoz" {
		t.Fatalf("Text = %q, want %q", got, "Señor Muñoz")
	}
}

// pdfParagraphs extracts a fixture and splits it where the chunker will.
func pdfParagraphs(t *testing.T, name string) []string {
	t.Helper()
	text, err := Text(context.Background(), PDF, readFixture(t, name))
	if err != nil {
		t.Fatalf("Text(%s): %v", name, err)
	}
	return strings.Split(text, "\n\n")
}

func wantParagraphs(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d paragraphs, want %d:\n%s", len(got), len(want), strings.Join(got, "\n\n"))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("paragraph %d =\n%q\nwant\n%q", i, got[i], want[i])
		}
	}
}

func TestTextPDFProse(t *testing.T) {
	// Two pages; page 1 spaces its paragraphs, page 2 marks them by first-line
	// indent and by short last lines only.
	wantParagraphs(t, pdfParagraphs(t, "prose.pdf"), []string{
		"The harbour office opens at seven in the morning. Ships waiting outside the breakwater must call the pilot station on channel twelve before they enter the channel.",
		"Justified paragraphs stretch the space between words so that both margins line up, which is exactly where naive extractors tend to glue words together or drop the gaps entirely. This sentence is long on purpose, so that the paragraph wraps over several lines and the stretched spaces appear in the middle of the text rather than only at its end.",
		"Cargo manifests are checked against the customs declaration. Any container whose seal number differs from the manifest is held in the inspection yard until an officer signs the release form.",
		"Fuel may be taken on only at berth four, and only while the fire watch is present.",
		"The second page begins with the rules for small craft. Rowing boats and dinghies keep to the eastern side of the basin and give way to every vessel under power.",
		"Paragraphs on this page have no space between them. This one and the next start with an indented first line, the way books set their text, so the indent is what marks where a paragraph begins.",
		"At night every vessel shows its navigation lights, even when moored alongside another ship, and the watch keeper checks them at every change of shift.",
		"These last paragraphs have neither space nor indent. Only the short last line of this paragraph shows that it ends here.",
		"The harbour master may close the port in a storm warning; the closing is announced on channel sixteen every thirty minutes until the warning is lifted.",
	})
}

func TestTextPDFColumnsAndTable(t *testing.T) {
	// The left column is read to its end before the right one; table rows
	// keep their cells in order.
	wantParagraphs(t, pdfParagraphs(t, "columns.pdf"), []string{
		"Opening hours and prices for the three branches are listed below.",
		"Left column first paragraph: the northern branch is next to the railway station and has a car park with forty spaces.",
		"Left column second paragraph: bicycles can be left in the covered rack by the entrance.",
		"Right column first paragraph: the southern branch is inside the market hall and has no parking of its own.",
		"Right column second paragraph: deliveries arrive there every Tuesday before nine.",
		"Branch Opens Monthly fee",
		"North 08:00 45 EUR",
		"South 09:30 39 EUR",
		"Prices include tax.",
	})
}

func TestTextPDFNonASCII(t *testing.T) {
	wantParagraphs(t, pdfParagraphs(t, "intl.pdf"), []string{
		"La señora Núñez pidió información sobre el envío a Cádiz: ¿cuándo llegará el camión? También preguntó por la garantía del acordeón y del pingüino de peluche.",
		"Η αποστολή έφτασε στην Αθήνα την Τρίτη.",
		"我们的办公室在东京。",
		"Straße, façade, naïve, Ærø, Łódź.",
	})
}

func TestTextPDFHeadingsAndLists(t *testing.T) {
	wantParagraphs(t, pdfParagraphs(t, "lists.pdf"), []string{
		"Returns policy",
		"Customers may return any item within thirty days of delivery.",
		"What you need",
		"• The original receipt or order number.",
		"• The item in its original packaging.",
		"• A short note saying why it is being returned.",
		"Refunds",
		"Refunds are paid to the original card within five working days.",
	})
}

// buildPDF writes a one-page PDF around content, with a standard Helvetica
// font (no widths, as the standard 14 fonts allow) and a form XObject that
// draws a footer.
func buildPDF(header, content string, contentFilter string) []byte {
	return writePDF(header, content, contentFilter, "BT /F1 10 Tf 72 40 Td (Footer drawn by a form) Tj ET", "/Font << /F1 4 0 R >>")
}

// writePDF lays out the objects of a one-page PDF (1 catalog, 2 pages,
// 3 page, 4 font, 5 page content, 6 form /Fm1) and computes the
// cross-reference table so the library can read it.
func writePDF(header, content, contentFilter, form, formResources string) []byte {
	objects := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> /XObject << /Fm1 6 0 R >> >> /Contents 5 0 R >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		fmt.Sprintf("<< /Length %d %s>>\nstream\n%s\nendstream", len(content)+1, contentFilter, content),
		fmt.Sprintf("<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << %s >> /Length %d >>\nstream\n%s\nendstream", formResources, len(form)+1, form),
	}
	var b bytes.Buffer
	b.WriteString(header + "\n")
	offsets := make([]int, len(objects))
	for i, object := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, object)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, offset := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", offset)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}

func TestTextPDFPositionedText(t *testing.T) {
	content := strings.Join([]string{
		// A heading set close above its text: only its size sets it apart.
		"BT /F1 16 Tf 72 716 Td (A larger heading) Tj ET",
		// Words separated only by TJ offsets, as TeX writes them; a small
		// kerning offset inside "Café" must not split it.
		"BT /F1 12 Tf 72 700 Td [(Kerned) -350 (words) -350 (need) -350 (spaces)] TJ ET",
		`BT /F1 12 Tf 72 640 Td [(Ca) 20 (f\351 is fine)] TJ ET`,
		// Three lines of one paragraph moved by T*; the hyphen at a line end stays.
		"BT /F1 12 Tf 14 TL 72 580 Td (A paragraph set line by line with a well-) Tj T* (known hyphenated word and a third) Tj T* (line.) Tj ET",
		// Paragraphs without spacing whose last lines are full: only the indent marks the second.
		"BT /F1 12 Tf 14 TL 72 500 Td (Indented paragraphs: this one fills its lines) Tj T* (and it ends on a line as full as the first.) Tj 18 -14 Td (The next one is marked by its indent only.) Tj ET",
		// Text turned a quarter turn, as in a margin note.
		"q 0 1 -1 0 560 300 cm BT /F1 12 Tf 0 0 Td (Rotated margin note) Tj ET Q",
		"/Fm1 Do",
	}, "\n")
	for _, header := range []string{"%PDF-1.4", "%PDF-2.0"} {
		t.Run(header, func(t *testing.T) {
			text, err := Text(context.Background(), PDF, buildPDF(header, content, ""))
			if err != nil {
				t.Fatal(err)
			}
			wantParagraphs(t, strings.Split(text, "\n\n"), []string{
				"A larger heading",
				"Kerned words need spaces",
				"Café is fine",
				"A paragraph set line by line with a well-known hyphenated word and a third line.",
				"Indented paragraphs: this one fills its lines and it ends on a line as full as the first.",
				"The next one is marked by its indent only.",
				"Rotated margin note",
				"Footer drawn by a form",
			})
		})
	}
}

func TestTextPDFFormDrawingItself(t *testing.T) {
	// Each run of the form draws it 50 more times: without a bound on form
	// runs this would not finish.
	data := writePDF("%PDF-1.4", "BT /F1 12 Tf 72 700 Td (Page text survives) Tj ET /Fm1 Do", "",
		strings.Repeat("/Fm1 Do ", 50), "/XObject << /Fm1 6 0 R >>")
	start := time.Now()
	text, err := Text(context.Background(), PDF, data)
	if err != nil {
		t.Fatal(err)
	}
	if text != "Page text survives" {
		t.Fatalf("Text = %q", text)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("took %v", elapsed)
	}
}

func TestTextPDFNoText(t *testing.T) {
	_, err := Text(context.Background(), PDF, readFixture(t, "scan.pdf"))
	wantCode(t, err, CodeNoText)
}

func TestTextPDFUnreadable(t *testing.T) {
	prose := readFixture(t, "prose.pdf")
	cases := []struct {
		name       string
		data       []byte
		messageHas string
	}{
		{"truncated", prose[:len(prose)/2], "cut off"},
		{"garbage after a PDF header", append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("\x8f garbage \x00"), 500)...), "cut off"},
		{"garbage with an end marker", []byte("%PDF-1.4\n" + strings.Repeat("nothing here\n", 20) + "startxref\n999999\n%%EOF\n"), "damaged"},
		{"corrupt compressed page content", buildPDF("%PDF-1.4", "this is not zlib data", "/Filter /FlateDecode "), "page 1"},
		{"protected by a password", encrypted("/V 2 /R 3 /Length 128"), "password"},
		{"AES-256 encryption", encrypted("/V 5 /R 6 /Length 256"), "AES-256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text, err := Text(context.Background(), PDF, tc.data)
			if text != "" {
				t.Errorf("text = %q, want none", text)
			}
			e := wantCode(t, err, CodeUnreadable)
			if !strings.Contains(e.Message, tc.messageHas) {
				t.Errorf("message %q does not mention %q", e.Message, tc.messageHas)
			}
		})
	}
}

// encrypted adds an /Encrypt dictionary to a small PDF's trailer; its
// password entries match no password, as the library will find.
func encrypted(version string) []byte {
	zeros := "<" + strings.Repeat("00", 32) + ">"
	trailer := fmt.Sprintf("/Root 1 0 R /Encrypt << /Filter /Standard %s /O %s /U %s /P -4 >> /ID [<0102> <0102>] >>", version, zeros, zeros)
	return bytes.Replace(buildPDF("%PDF-1.4", "BT /F1 12 Tf 72 700 Td (Secret) Tj ET", ""), []byte("/Root 1 0 R >>"), []byte(trailer), 1)
}

func TestTextNoText(t *testing.T) {
	cases := []struct {
		kind Kind
		data string
	}{
		{PlainText, " \r\n\t\n"},
		{Markdown, "---\n\n<!-- only a comment -->\n"},
		{HTML, "<html><head><title>t</title></head><body><script>x()</script></body></html>"},
	}
	for _, tc := range cases {
		t.Run(string(tc.kind), func(t *testing.T) {
			_, err := Text(context.Background(), tc.kind, []byte(tc.data))
			wantCode(t, err, CodeNoText)
		})
	}
}

func TestTextTooLarge(t *testing.T) {
	t.Run("file over MaxBytes", func(t *testing.T) {
		_, err := Text(context.Background(), PDF, make([]byte, MaxBytes+1))
		wantCode(t, err, CodeTooLarge)
	})
	t.Run("text over MaxTextChars", func(t *testing.T) {
		_, err := Text(context.Background(), PlainText, []byte(strings.Repeat("é", MaxTextChars+1)))
		wantCode(t, err, CodeTooLarge)
	})
	t.Run("text of exactly MaxTextChars", func(t *testing.T) {
		text, err := Text(context.Background(), PlainText, []byte(strings.Repeat("é", MaxTextChars)))
		if err != nil {
			t.Fatal(err)
		}
		if got := len([]rune(text)); got != MaxTextChars {
			t.Fatalf("kept %d characters, want %d", got, MaxTextChars)
		}
	})
}

func TestTextUnknownKind(t *testing.T) {
	_, err := Text(context.Background(), Kind("docx"), []byte("x"))
	wantCode(t, err, CodeUnsupportedType)
}

func TestTextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Text(ctx, PDF, readFixture(t, "prose.pdf"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestErrorString(t *testing.T) {
	err := error(&Error{Code: CodeNoText, Message: "the document contains no text"})
	if got := err.Error(); got != "no_text: the document contains no text" {
		t.Fatalf("Error() = %q", got)
	}
}
