package extract

import (
	"encoding/hex"
	"sort"
	"unicode/utf16"
)

// toUnicodeMap is a font's /ToUnicode CMap: which byte sequences are
// character codes and what text each code stands for. It is parsed here
// rather than by the PDF library because the library ignores /ToUnicode
// whenever a font also names an /Encoding, and does not expose code lengths,
// which are needed to place each glyph.
type toUnicodeMap struct {
	codeSpaces []codeSpace
	single     map[string]string
	ranges     []codeRange // sorted by lo, for binary search
}

type codeSpace struct{ lo, hi string }

type codeRange struct {
	lo, hi   string
	loValue  uint32
	hiValue  uint32
	firstDst []uint16 // UTF-16 text of lo; later codes add to its last unit
}

// codeLength returns how many bytes of raw form the next character code,
// or 0 when the CMap declares no code space that matches.
func (m *toUnicodeMap) codeLength(raw string) int {
	for n := 1; n <= 4 && n <= len(raw); n++ {
		for _, space := range m.codeSpaces {
			if len(space.lo) == n && inCodeSpace(raw[:n], space) {
				return n
			}
		}
	}
	return 0
}

// inCodeSpace checks each byte against the range's bounds, as the CMap
// specification defines code space ranges.
func inCodeSpace(code string, space codeSpace) bool {
	for i := 0; i < len(code); i++ {
		if code[i] < space.lo[i] || code[i] > space.hi[i] {
			return false
		}
	}
	return true
}

func (m *toUnicodeMap) lookup(code string) (string, bool) {
	if text, ok := m.single[code]; ok {
		return text, true
	}
	value := codeValue(code)
	i := sort.Search(len(m.ranges), func(i int) bool {
		r := m.ranges[i]
		return len(r.lo) > len(code) || len(r.lo) == len(code) && r.loValue > value
	})
	if i == 0 {
		return "", false
	}
	r := m.ranges[i-1]
	if len(r.lo) != len(code) || value > r.hiValue || len(r.firstDst) == 0 {
		return "", false
	}
	units := append([]uint16(nil), r.firstDst...)
	units[len(units)-1] += uint16(value - r.loValue)
	return string(utf16.Decode(units)), true
}

func codeValue(code string) uint32 {
	var v uint32
	for i := 0; i < len(code); i++ {
		v = v<<8 | uint32(code[i])
	}
	return v
}

// cmapOperand is a string or an array of strings from a CMap program.
type cmapOperand struct {
	str   string
	array []string
	isArr bool
}

// parseToUnicode reads the codespacerange, bfchar and bfrange sections of a
// CMap and ignores everything else in it.
func parseToUnicode(data []byte) *toUnicodeMap {
	m := &toUnicodeMap{single: map[string]string{}}
	lex := cmapLexer{data: data}
	var operands []cmapOperand
	for {
		tok, ok := lex.next()
		if !ok {
			break
		}
		switch tok.kind {
		case cmapString:
			operands = append(operands, cmapOperand{str: tok.value})
		case cmapArray:
			operands = append(operands, cmapOperand{array: tok.array, isArr: true})
		case cmapKeyword:
			switch tok.value {
			case "endcodespacerange":
				for i := 0; i+1 < len(operands); i += 2 {
					lo, hi := operands[i].str, operands[i+1].str
					if len(lo) == len(hi) && len(lo) >= 1 && len(lo) <= 4 {
						m.codeSpaces = append(m.codeSpaces, codeSpace{lo, hi})
					}
				}
			case "endbfchar":
				for i := 0; i+1 < len(operands); i += 2 {
					m.single[operands[i].str] = utf16Text(operands[i+1].str)
				}
			case "endbfrange":
				for i := 0; i+2 < len(operands); i += 3 {
					m.addRange(operands[i].str, operands[i+1].str, operands[i+2])
				}
			}
			operands = operands[:0]
		}
	}
	sort.Slice(m.ranges, func(i, j int) bool {
		a, b := m.ranges[i], m.ranges[j]
		if len(a.lo) != len(b.lo) {
			return len(a.lo) < len(b.lo)
		}
		return a.loValue < b.loValue
	})
	return m
}

func (m *toUnicodeMap) addRange(lo, hi string, dst cmapOperand) {
	if len(lo) != len(hi) || len(lo) == 0 || len(lo) > 4 || codeValue(lo) > codeValue(hi) {
		return
	}
	if dst.isArr {
		// An array gives each code its own text; spell them out.
		for i, text := range dst.array {
			code := codeValue(lo) + uint32(i)
			if code > codeValue(hi) {
				break
			}
			m.single[codeString(code, len(lo))] = utf16Text(text)
		}
		return
	}
	units := utf16Units(dst.str)
	m.ranges = append(m.ranges, codeRange{lo: lo, hi: hi, loValue: codeValue(lo), hiValue: codeValue(hi), firstDst: units})
}

func codeString(value uint32, length int) string {
	b := make([]byte, length)
	for i := length - 1; i >= 0; i-- {
		b[i] = byte(value)
		value >>= 8
	}
	return string(b)
}

func utf16Units(s string) []uint16 {
	units := make([]uint16, 0, len(s)/2)
	for i := 0; i+1 < len(s); i += 2 {
		units = append(units, uint16(s[i])<<8|uint16(s[i+1]))
	}
	return units
}

func utf16Text(s string) string { return string(utf16.Decode(utf16Units(s))) }

type cmapTokenKind int

const (
	cmapKeyword cmapTokenKind = iota
	cmapString
	cmapArray
	cmapOther
)

type cmapToken struct {
	kind  cmapTokenKind
	value string
	array []string
}

// cmapLexer tokenises the PostScript subset CMaps are written in: hex and
// literal strings, arrays, names, numbers and keywords.
type cmapLexer struct {
	data []byte
	pos  int
}

func (l *cmapLexer) next() (cmapToken, bool) {
	l.skipSpaceAndComments()
	if l.pos >= len(l.data) {
		return cmapToken{}, false
	}
	c := l.data[l.pos]
	switch {
	case c == '<' && l.peek(1) == '<', c == '>' && l.peek(1) == '>':
		l.pos += 2
		return cmapToken{kind: cmapOther}, true
	case c == '<':
		return cmapToken{kind: cmapString, value: l.hexString()}, true
	case c == '(':
		return cmapToken{kind: cmapString, value: l.literalString()}, true
	case c == '[':
		l.pos++
		var array []string
		for {
			tok, ok := l.next()
			if !ok || tok.kind == cmapOther && tok.value == "]" {
				return cmapToken{kind: cmapArray, array: array}, true
			}
			if tok.kind == cmapString {
				array = append(array, tok.value)
			}
		}
	case c == ']' || c == '{' || c == '}' || c == '>' || c == ')':
		l.pos++
		return cmapToken{kind: cmapOther, value: string(c)}, true
	case c == '/':
		l.pos++
		l.regular()
		return cmapToken{kind: cmapOther}, true
	}
	return cmapToken{kind: cmapKeyword, value: l.regular()}, true
}

func (l *cmapLexer) peek(offset int) byte {
	if l.pos+offset < len(l.data) {
		return l.data[l.pos+offset]
	}
	return 0
}

func (l *cmapLexer) skipSpaceAndComments() {
	for l.pos < len(l.data) {
		switch c := l.data[l.pos]; {
		case isPDFSpace(c):
			l.pos++
		case c == '%':
			for l.pos < len(l.data) && l.data[l.pos] != '\n' && l.data[l.pos] != '\r' {
				l.pos++
			}
		default:
			return
		}
	}
}

func (l *cmapLexer) regular() string {
	start := l.pos
	for l.pos < len(l.data) && !isPDFSpace(l.data[l.pos]) && !isPDFDelimiter(l.data[l.pos]) {
		l.pos++
	}
	if l.pos == start { // a stray byte that is neither; step over it
		l.pos++
	}
	return string(l.data[start:l.pos])
}

func (l *cmapLexer) hexString() string {
	l.pos++ // '<'
	digits := make([]byte, 0, 8)
	for l.pos < len(l.data) && l.data[l.pos] != '>' {
		if c := l.data[l.pos]; isHexDigit(c) {
			digits = append(digits, c)
		}
		l.pos++
	}
	l.pos++ // '>'
	if len(digits)%2 == 1 {
		digits = append(digits, '0')
	}
	decoded, _ := hex.DecodeString(string(digits))
	return string(decoded)
}

func (l *cmapLexer) literalString() string {
	l.pos++ // '('
	var out []byte
	for depth := 1; l.pos < len(l.data); l.pos++ {
		c := l.data[l.pos]
		switch {
		case c == '\\' && l.pos+1 < len(l.data):
			l.pos++
			out = append(out, unescapeLiteral(l.data[l.pos]))
			continue
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				l.pos++
				return string(out)
			}
		}
		out = append(out, c)
	}
	return string(out)
}

func unescapeLiteral(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	}
	return c
}

func isPDFSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == 0
}

func isPDFDelimiter(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
