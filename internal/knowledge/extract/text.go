package extract

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	xunicode "golang.org/x/text/encoding/unicode"
)

var (
	utf8BOM    = []byte{0xEF, 0xBB, 0xBF}
	utf16BEBOM = []byte{0xFE, 0xFF}
	utf16LEBOM = []byte{0xFF, 0xFE}
)

// decodeUnicode returns data as a UTF-8 string: UTF-8 with or without a BOM,
// or UTF-16 with a BOM (what Windows editors save as "Unicode"). Anything
// else, or text with NUL bytes, is not text.
func decodeUnicode(data []byte) (string, error) {
	data = stripUTF16(data)
	data = bytes.TrimPrefix(data, utf8BOM)
	if !utf8.Valid(data) {
		return "", errors.New("is not valid UTF-8")
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", errors.New("contains binary data (NUL bytes)")
	}
	return string(data), nil
}

// stripUTF16 converts UTF-16 with a byte order mark to UTF-8 and returns
// any other data unchanged.
func stripUTF16(data []byte) []byte {
	var endianness xunicode.Endianness
	switch {
	case bytes.HasPrefix(data, utf16BEBOM):
		endianness = xunicode.BigEndian
	case bytes.HasPrefix(data, utf16LEBOM):
		endianness = xunicode.LittleEndian
	default:
		return data
	}
	decoded, err := xunicode.UTF16(endianness, xunicode.ExpectBOM).NewDecoder().Bytes(data)
	if err != nil {
		return data
	}
	return decoded
}

func plainText(data []byte) (string, error) {
	text, err := decodeUnicode(data)
	if err != nil {
		return "", newError(CodeUnreadable, "the text %s", err.Error())
	}
	return text, nil
}

var (
	blankLineRuns = regexp.MustCompile(`\n{3,}`)
	// Page breaks (form feeds) in text files separate paragraphs too.
	newlines = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\f", "\n\n", "\v", "\n")
)

const (
	softHyphen            = '\u00AD' // invisible unless a line breaks there
	zeroWidthNoBreakSpace = '\uFEFF' // a stray byte order mark inside the text
)

// tidy normalises extracted text: LF newlines, no control characters, no
// trailing spaces, at most one blank line between paragraphs, no blank
// lines at either end.
func tidy(text string) string {
	text = newlines.Replace(text)
	text = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == utf8.RuneError, r == softHyphen, r == zeroWidthNoBreakSpace, unicode.IsControl(r):
			return -1
		}
		return r
	}, text)
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		lines[i] = strings.TrimRightFunc(line, unicode.IsSpace)
	}
	text = strings.Join(lines, "\n")
	text = blankLineRuns.ReplaceAllString(text, "\n\n")
	return strings.TrimSpace(text)
}
