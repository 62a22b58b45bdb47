// Package extract turns an uploaded document into plain text for an AI
// agent's knowledge base.
//
// The text keeps the document's paragraph structure: paragraphs, headings,
// list items and table rows are separated by blank lines, because the chunker
// that runs next splits on blank lines and sentence ends.
package extract

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"
)

// Kind is what a document is.
type Kind string

// The kinds of document this package reads. PlainText is "text"; it cannot
// be called Text because that name is the extraction function.
const (
	PlainText Kind = "text"
	Markdown  Kind = "markdown"
	HTML      Kind = "html"
	PDF       Kind = "pdf"
)

const (
	// MaxBytes is the largest document accepted: 20 MiB.
	MaxBytes = 20 << 20
	// MaxTextChars is the most text kept, in characters (runes).
	MaxTextChars = 2_000_000
)

// Error codes carried by *Error.
const (
	// CodeUnsupportedType: the declared type or file name is not one this package reads.
	CodeUnsupportedType = "unsupported_type"
	// CodeContentMismatch: the bytes are not what the type or file name says.
	CodeContentMismatch = "content_mismatch"
	// CodeNoText: the document has no text, e.g. a scanned PDF without a text layer.
	CodeNoText = "no_text"
	// CodeUnreadable: the document is broken, encrypted or otherwise cannot be read.
	CodeUnreadable = "unreadable"
	// CodeTooLarge: the document is over MaxBytes or its text over MaxTextChars.
	CodeTooLarge = "too_large"
)

// Error is a problem with the document itself. Message is short and fit to
// show to the person who uploaded it.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func newError(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// acceptedTypes names what KindOf accepts, for the unsupported_type message.
const acceptedTypes = "plain text (.txt, text/plain), Markdown (.md, text/markdown), HTML (.html, text/html) or PDF (.pdf, application/pdf)"

var kindByMediaType = map[string]Kind{
	"text/plain":            PlainText,
	"text/markdown":         Markdown,
	"text/x-markdown":       Markdown,
	"text/html":             HTML,
	"application/xhtml+xml": HTML,
	"application/pdf":       PDF,
	"application/x-pdf":     PDF,
}

var kindByExtension = map[string]Kind{
	".txt":      PlainText,
	".text":     PlainText,
	".md":       Markdown,
	".markdown": Markdown,
	".mdown":    Markdown,
	".mkd":      Markdown,
	".html":     HTML,
	".htm":      HTML,
	".xhtml":    HTML,
	".pdf":      PDF,
}

// genericMediaTypes say nothing about the content; clients send them when
// they do not know, so the file name decides instead.
var genericMediaTypes = map[string]bool{
	"":                         true,
	"application/octet-stream": true,
	"binary/octet-stream":      true,
	"application/unknown":      true,
	"application/x-unknown":    true,
}

// KindOf says what data is, from its declared content type and file name
// (either may be empty), checked against the bytes themselves.
//
// A specific content type wins over the file name, except that text/plain
// with a Markdown file name is Markdown (many clients send .md files as
// text/plain). With neither, the bytes are sniffed. Data that is not what it
// is declared to be is a content_mismatch; a type this package does not read
// is unsupported_type.
func KindOf(contentType, filename string, data []byte) (Kind, error) {
	if len(data) > MaxBytes {
		return "", tooLargeFile(len(data))
	}
	kind, declared, err := declaredKind(contentType, filename)
	if err != nil {
		return "", err
	}
	if declared == "" {
		return sniffKind(data)
	}
	if err := checkContent(kind, declared, data); err != nil {
		return "", err
	}
	return kind, nil
}

// declaredKind returns the kind the content type or file name claims, and
// the claim in words for error messages ("" when nothing was claimed).
func declaredKind(contentType, filename string) (Kind, string, error) {
	mediaType := strings.ToLower(strings.TrimSpace(contentType))
	if parsed, _, err := mime.ParseMediaType(contentType); err == nil {
		mediaType = parsed
	} else if i := strings.IndexByte(mediaType, ';'); i >= 0 {
		mediaType = strings.TrimSpace(mediaType[:i])
	}
	ext := strings.ToLower(path.Ext(strings.ReplaceAll(filename, `\`, "/")))
	byExt, knownExt := kindByExtension[ext]

	if !genericMediaTypes[mediaType] {
		kind, ok := kindByMediaType[mediaType]
		if !ok {
			return "", "", newError(CodeUnsupportedType, "%s is not supported; upload %s", mediaType, acceptedTypes)
		}
		if kind == PlainText && byExt == Markdown {
			return Markdown, "named " + filename, nil
		}
		return kind, "declared as " + mediaType, nil
	}
	if knownExt {
		return byExt, "named " + filename, nil
	}
	if ext != "" {
		return "", "", newError(CodeUnsupportedType, "%s files are not supported; upload %s", ext, acceptedTypes)
	}
	return "", "", nil
}

// sniffKind decides from the bytes alone, for uploads with no type and no
// file extension.
func sniffKind(data []byte) (Kind, error) {
	if bytes.HasPrefix(data, pdfMagic) {
		return PDF, nil
	}
	if _, err := decodeUnicode(data); err != nil {
		return "", newError(CodeUnsupportedType, "the file's type cannot be told from its content; upload %s", acceptedTypes)
	}
	if strings.HasPrefix(http.DetectContentType(data), "text/html") {
		return HTML, nil
	}
	return PlainText, nil
}

var pdfMagic = []byte("%PDF-")

// checkContent reports a content_mismatch when data is not of the declared kind.
func checkContent(kind Kind, declared string, data []byte) error {
	isPDF := bytes.HasPrefix(data, pdfMagic)
	switch kind {
	case PDF:
		if !isPDF {
			return newError(CodeContentMismatch, "the file is %s but is not a PDF (it does not start with %%PDF-)%s", declared, lookLike(data))
		}
		return nil
	case PlainText, Markdown:
		if isPDF {
			return newError(CodeContentMismatch, "the file is %s but is a PDF", declared)
		}
		if _, err := decodeUnicode(data); err != nil {
			return newError(CodeContentMismatch, "the file is %s but %s", declared, err.Error())
		}
		return nil
	case HTML:
		if isPDF {
			return newError(CodeContentMismatch, "the file is %s but is a PDF", declared)
		}
		if bytes.IndexByte(stripUTF16(data), 0) >= 0 {
			return newError(CodeContentMismatch, "the file is %s but contains binary data (NUL bytes), so it is not HTML", declared)
		}
		return nil
	}
	return newError(CodeUnsupportedType, "unknown kind %q", kind)
}

// lookLike names what data seems to be instead, to make a mismatch message useful.
func lookLike(data []byte) string {
	sniffed := http.DetectContentType(data)
	switch {
	case strings.HasPrefix(sniffed, "text/html"):
		return "; it looks like an HTML page"
	case strings.HasPrefix(sniffed, "text/"):
		return "; it looks like plain text"
	case sniffed != "application/octet-stream":
		return "; it looks like " + sniffed
	}
	return ""
}

// Text returns the readable text of data of kind k, paragraphs separated by
// blank lines. Problems with the document are *Error values; a cancelled
// ctx returns ctx.Err().
func Text(ctx context.Context, k Kind, data []byte) (string, error) {
	if len(data) > MaxBytes {
		return "", tooLargeFile(len(data))
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var text string
	var err error
	switch k {
	case PlainText:
		text, err = plainText(data)
	case Markdown:
		text, err = markdownText(data)
	case HTML:
		text, err = htmlText(data)
	case PDF:
		text, err = pdfText(ctx, data)
	default:
		return "", newError(CodeUnsupportedType, "unknown kind %q; accepted: %s", k, acceptedTypes)
	}
	if err != nil {
		return "", err
	}
	text = tidy(text)
	if text == "" {
		if k == PDF {
			return "", newError(CodeNoText, "the PDF has no text layer (it may be scanned images); text cannot be extracted from it")
		}
		return "", newError(CodeNoText, "the document contains no text")
	}
	if utf8.RuneCountInString(text) > MaxTextChars {
		return "", tooMuchText()
	}
	return text, nil
}

func tooLargeFile(size int) *Error {
	return newError(CodeTooLarge, "the file is %.1f MiB; the limit is %d MiB", float64(size)/(1<<20), MaxBytes>>20)
}

func tooMuchText() *Error {
	return newError(CodeTooLarge, "the document has more than %d characters of text; split it into smaller documents", MaxTextChars)
}
