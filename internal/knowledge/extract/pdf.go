package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// pdfText returns the text of each page in content-stream order (the order
// the producer wrote it, which for word processors is reading order, columns
// included), rebuilt into lines and paragraphs from glyph positions. See
// docs/knowledge-pdf.md for why github.com/ledongthuc/pdf and its limits.
func pdfText(ctx context.Context, data []byte) (string, error) {
	reader, err := openPDF(data)
	if err != nil {
		return "", err
	}
	pageCount, err := countPages(reader)
	if err != nil {
		return "", err
	}
	reading := &contentReader{ctx: ctx}
	var pages []string
	textChars := 0
	for number := 1; number <= pageCount; number++ {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		glyphs, err := reading.page(reader, number)
		if err != nil {
			return "", err
		}
		text := layoutPage(glyphs)
		textChars += utf8.RuneCountInString(text)
		if textChars > MaxTextChars {
			return "", tooMuchText()
		}
		if text != "" {
			pages = append(pages, text)
		}
	}
	return ligatures.Replace(strings.Join(pages, "\n\n")), nil
}

// ligatures are single characters in some fonts' encodings; search and the
// chunker want the letters.
var ligatures = strings.NewReplacer("ﬀ", "ff", "ﬁ", "fi", "ﬂ", "fl", "ﬃ", "ffi", "ﬄ", "ffl", "ﬅ", "st", "ﬆ", "st")

func openPDF(data []byte) (reader *pdf.Reader, err error) {
	defer func() {
		if r := recover(); r != nil {
			reader, err = nil, unreadablePDF(r)
		}
	}()
	reader, err = pdf.NewReader(bytes.NewReader(normalizeHeader(data)), int64(len(data)))
	switch {
	case errors.Is(err, pdf.ErrInvalidPassword):
		return nil, newError(CodeUnreadable, "the PDF is protected by a password")
	case err != nil:
		return nil, unreadablePDF(err)
	}
	return reader, nil
}

// normalizeHeader rewrites a "%PDF-2.0" header, or one followed by
// something other than a line end, to "%PDF-1.7\n", which is all the
// library accepts. Byte offsets stay the same, so the file reads as before.
func normalizeHeader(data []byte) []byte {
	const header = "%PDF-1.7\n"
	if len(data) < len(header) {
		return data
	}
	version, end := data[5:8], data[8]
	supported := version[0] == '1' && version[1] == '.' && '0' <= version[2] && version[2] <= '7'
	if supported && (end == '\n' || end == '\r') {
		return data
	}
	patched := bytes.Clone(data)
	copy(patched, header)
	return patched
}

func countPages(reader *pdf.Reader) (count int, err error) {
	defer func() {
		if r := recover(); r != nil {
			count, err = 0, unreadablePDF(r)
		}
	}()
	count = reader.NumPage()
	if count <= 0 {
		return 0, newError(CodeUnreadable, "the PDF has no pages")
	}
	// A page needs at least a few dozen bytes; a larger count is a damaged page tree.
	if count > MaxBytes/32 {
		return 0, newError(CodeUnreadable, "the PDF's page tree is damaged (it claims %d pages)", count)
	}
	return count, nil
}

// unreadablePDF turns a library error or panic into a short reason.
func unreadablePDF(problem any) *Error {
	reason := fmt.Sprint(problem)
	if _, isRuntime := problem.(runtime.Error); isRuntime {
		reason = "malformed structure"
	}
	switch {
	case strings.Contains(reason, "missing %%EOF"):
		return &Error{Code: CodeUnreadable, Message: "the PDF is incomplete; it may have been cut off during upload (no end-of-file marker)"}
	case strings.Contains(reason, "encryption"):
		return &Error{Code: CodeUnreadable, Message: "the PDF is encrypted in a way that cannot be read (such as AES-256); save it again without protection"}
	}
	reason = strings.TrimPrefix(strings.TrimPrefix(reason, "malformed PDF: "), "malformed PDF file: ")
	reason = strings.TrimPrefix(reason, "not a PDF file: ")
	if runes := []rune(strings.ToValidUTF8(reason, "?")); len(runes) > 80 {
		reason = string(runes[:80]) + "…"
	}
	return newError(CodeUnreadable, "the PDF is damaged or not valid (%s)", reason)
}

// glyph is one decoded character code placed on the page. u runs along its
// baseline in reading direction and v across it, decreasing line by line,
// so rotated text is laid out like upright text.
type glyph struct {
	text   string
	u, end float64 // where the glyph starts and ends along the baseline
	v      float64
	size   float64 // font size on the page
	dir    int     // baseline direction in quarter turns counterclockwise
}

// matrix is a PDF transformation [a b c d e f].
type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

// times returns m×n: apply m, then n.
func (m matrix) times(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2],
		m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2],
		m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4],
		m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func translation(x, y float64) matrix { return matrix{1, 0, 0, 1, x, y} }

func matrixFrom(args []pdf.Value) (matrix, bool) {
	var m matrix
	if len(args) != 6 {
		return m, false
	}
	for i, a := range args {
		if a.Kind() != pdf.Integer && a.Kind() != pdf.Real {
			return m, false
		}
		m[i] = a.Float64()
	}
	return m, true
}

type graphicsState struct {
	ctm       matrix
	font      *pdfFont
	fontSize  float64
	charSpace float64
	wordSpace float64
	hScale    float64
	leading   float64
	rise      float64
}

const (
	maxFormDepth   = 8       // nested form XObjects followed
	maxStateDepth  = 256     // q without Q
	opsPerCtxCheck = 1 << 12 // how often a long page checks for cancellation
	// maxOps bounds the work on one document (about five seconds). Real
	// documents use well under a million operators for a hundred pages.
	maxOps = 20_000_000
	// maxFormRuns bounds form XObjects drawn per document: forms that draw
	// each other over and over would otherwise multiply the work without
	// end. A header and footer form on every page stays far below it.
	maxFormRuns = 20_000
	// maxGlyphChars stops reading once the glyphs alone are far over the
	// text limit, before they take much memory.
	maxGlyphChars = 2 * MaxTextChars
)

// contentReader runs page content streams and collects their glyphs.
type contentReader struct {
	ctx      context.Context
	glyphs   []glyph
	ops      int // operators run in the document so far
	formRuns int // form XObjects run in the document so far
	chars    int // glyph characters decoded in the document so far
}

// stopReading aborts a content stream from inside the library's interpreter.
type stopReading struct{ err error }

func (c *contentReader) page(reader *pdf.Reader, number int) (glyphs []glyph, err error) {
	c.glyphs = nil
	defer func() {
		if r := recover(); r != nil {
			if stop, ok := r.(stopReading); ok {
				glyphs, err = nil, stop.err
				return
			}
			glyphs, err = nil, unreadablePage(number, r)
		}
	}()
	page := reader.Page(number)
	if page.V.IsNull() {
		return nil, newError(CodeUnreadable, "the PDF is damaged or not valid (page %d is missing)", number)
	}
	contents := page.V.Key("Contents")
	if contents.Kind() != pdf.Stream && contents.Kind() != pdf.Array {
		return nil, nil // a blank page
	}
	c.run(contents, page.Resources(), identity, 0)
	return c.glyphs, nil
}

func unreadablePage(number int, problem any) *Error {
	e := unreadablePDF(problem)
	e.Message = strings.Replace(e.Message, "(", fmt.Sprintf("(page %d: ", number), 1)
	return e
}

// run interprets one content stream (a page's or a form XObject's).
func (c *contentReader) run(stream, resources pdf.Value, ctm matrix, depth int) {
	state := graphicsState{ctm: ctm, hScale: 1}
	var saved []graphicsState
	var textMatrix, lineMatrix matrix
	fonts := map[string]*pdfFont{}

	show := func(raw string) {
		font := state.font
		if font == nil {
			return // text shown before any Tf has no encoding to read it by
		}
		for len(raw) > 0 {
			n := font.codeLength(raw)
			code := raw[:n]
			raw = raw[n:]
			start := matrix{state.fontSize * state.hScale, 0, 0, state.fontSize, 0, state.rise}.times(textMatrix).times(state.ctm)
			advance := font.width(code)*state.fontSize + state.charSpace
			if code == " " {
				advance += state.wordSpace // word spacing applies to single-byte spaces only
			}
			textMatrix = translation(advance*state.hScale, 0).times(textMatrix)
			end := matrix{state.fontSize * state.hScale, 0, 0, state.fontSize, 0, state.rise}.times(textMatrix).times(state.ctm)
			c.add(font.decode(code), start, end)
		}
	}
	nextLine := func(tx, ty float64) {
		lineMatrix = translation(tx, ty).times(lineMatrix)
		textMatrix = lineMatrix
	}

	pdf.Interpret(stream, func(stack *pdf.Stack, op string) {
		args := make([]pdf.Value, stack.Len())
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stack.Pop()
		}
		c.ops++
		if c.ops%opsPerCtxCheck == 0 {
			if err := c.ctx.Err(); err != nil {
				panic(stopReading{err})
			}
			if c.ops > maxOps {
				panic(stopReading{newError(CodeUnreadable, "the PDF is too complex to read (over %d drawing operations)", maxOps)})
			}
		}
		number := func(i int) float64 { return args[i].Float64() }
		switch op {
		case "q":
			if len(saved) < maxStateDepth {
				saved = append(saved, state)
			}
		case "Q":
			if len(saved) > 0 {
				state = saved[len(saved)-1]
				saved = saved[:len(saved)-1]
			}
		case "cm":
			if m, ok := matrixFrom(args); ok {
				state.ctm = m.times(state.ctm)
			}
		case "BT":
			textMatrix, lineMatrix = identity, identity
		case "Tc":
			if len(args) == 1 {
				state.charSpace = number(0)
			}
		case "Tw":
			if len(args) == 1 {
				state.wordSpace = number(0)
			}
		case "Tz":
			if len(args) == 1 {
				state.hScale = number(0) / 100
			}
		case "TL":
			if len(args) == 1 {
				state.leading = number(0)
			}
		case "Ts":
			if len(args) == 1 {
				state.rise = number(0)
			}
		case "Tf":
			if len(args) == 2 {
				name := args[0].Name()
				font, ok := fonts[name]
				if !ok {
					font = loadFont(resources.Key("Font").Key(name))
					fonts[name] = font
				}
				state.font, state.fontSize = font, number(1)
			}
		case "Td":
			if len(args) == 2 {
				nextLine(number(0), number(1))
			}
		case "TD":
			if len(args) == 2 {
				state.leading = -number(1)
				nextLine(number(0), number(1))
			}
		case "Tm":
			if m, ok := matrixFrom(args); ok {
				textMatrix, lineMatrix = m, m
			}
		case "T*":
			nextLine(0, -state.leading)
		case "Tj":
			if len(args) == 1 {
				show(args[0].RawString())
			}
		case "'":
			if len(args) == 1 {
				nextLine(0, -state.leading)
				show(args[0].RawString())
			}
		case "\"":
			if len(args) == 3 {
				state.wordSpace, state.charSpace = number(0), number(1)
				nextLine(0, -state.leading)
				show(args[2].RawString())
			}
		case "TJ":
			if len(args) != 1 {
				return
			}
			for i := 0; i < args[0].Len(); i++ {
				item := args[0].Index(i)
				if item.Kind() == pdf.String {
					show(item.RawString())
				} else {
					// A number moves the next glyph left (positive) or right, in thousandths of the font size.
					textMatrix = translation(-item.Float64()/1000*state.fontSize*state.hScale, 0).times(textMatrix)
				}
			}
		case "Do":
			if len(args) == 1 && depth < maxFormDepth {
				c.runForm(resources.Key("XObject").Key(args[0].Name()), resources, state.ctm, depth)
			}
		}
	})
}

// runForm follows a form XObject, which can hold text (headers, footers,
// stamped pages); image XObjects hold none.
func (c *contentReader) runForm(xobject, resources pdf.Value, ctm matrix, depth int) {
	if xobject.Kind() != pdf.Stream || xobject.Key("Subtype").Name() != "Form" || c.formRuns >= maxFormRuns {
		return
	}
	c.formRuns++
	if own := xobject.Key("Resources"); own.Kind() == pdf.Dict {
		resources = own
	}
	formMatrix := identity
	if m := xobject.Key("Matrix"); m.Kind() == pdf.Array {
		values := make([]pdf.Value, m.Len())
		for i := range values {
			values[i] = m.Index(i)
		}
		if parsed, ok := matrixFrom(values); ok {
			formMatrix = parsed
		}
	}
	c.run(xobject, resources, formMatrix.times(ctm), depth+1)
}

// add places a decoded glyph drawn from start to end (text rendering matrices).
func (c *contentReader) add(text string, start, end matrix) {
	if text == "" {
		return
	}
	c.chars += utf8.RuneCountInString(text)
	if c.chars > maxGlyphChars {
		panic(stopReading{tooMuchText()})
	}
	size := math.Hypot(start[2], start[3])
	if size < 0.1 {
		size = 0.1
	}
	dir := direction(start[0], start[1])
	u, v := project(start[4], start[5], dir)
	endU, _ := project(end[4], end[5], dir)
	c.glyphs = append(c.glyphs, glyph{text: text, u: u, end: endU, v: v, size: size, dir: dir})
}

// direction rounds a baseline vector to quarter turns.
func direction(x, y float64) int {
	if math.Abs(x) >= math.Abs(y) {
		if x >= 0 {
			return 0
		}
		return 2
	}
	if y > 0 {
		return 1
	}
	return 3
}

// project turns page coordinates into (along the baseline, across it).
func project(x, y float64, dir int) (u, v float64) {
	switch dir {
	case 1:
		return y, -x
	case 2:
		return -x, -y
	case 3:
		return -y, x
	}
	return x, y
}

// pdfFont decodes a font's character codes to text and gives their widths.
type pdfFont struct {
	composite    bool              // Type0: multi-byte codes
	identity     bool              // Identity-H/V: two-byte codes equal to glyph ids
	toUnicode    *toUnicodeMap     // nil when the font has none
	fallback     *pdf.Font         // decodes codes ToUnicode lacks from /Encoding; nil when that would be guesswork
	widths       map[int]float64   // code (simple) or CID (composite) -> glyph width
	defaultWidth float64           // for codes without a width
	scale        float64           // glyph space to text space
	decoded      map[string]string // decode cache
}

func loadFont(v pdf.Value) *pdfFont {
	font := &pdfFont{scale: 0.001, widths: map[int]float64{}, decoded: map[string]string{}}
	subtype := v.Key("Subtype").Name()
	font.composite = subtype == "Type0"
	encoding := v.Key("Encoding").Name()
	font.identity = font.composite && (encoding == "Identity-H" || encoding == "Identity-V")
	font.toUnicode = readToUnicode(v.Key("ToUnicode"))
	// Simple fonts' encodings name their characters. Of the composite ones
	// the library reads only UCS-2; other codes are glyph ids, not text.
	if !font.composite || font.toUnicode == nil && encoding == "UniGB-UCS2-H" {
		font.fallback = &pdf.Font{V: v}
	}
	if font.composite {
		descendant := v.Key("DescendantFonts").Index(0)
		font.defaultWidth = 1000
		if dw := descendant.Key("DW"); dw.Kind() == pdf.Integer || dw.Kind() == pdf.Real {
			font.defaultWidth = dw.Float64()
		}
		readCIDWidths(descendant.Key("W"), font.widths)
		return font
	}
	first := int(v.Key("FirstChar").Int64())
	widths := v.Key("Widths")
	for i := 0; i < widths.Len(); i++ {
		font.widths[first+i] = widths.Index(i).Float64()
	}
	font.defaultWidth = v.Key("FontDescriptor").Key("MissingWidth").Float64()
	if widths.Len() == 0 {
		font.defaultWidth = 500 // the standard 14 fonts come without widths; half an em keeps words apart
	}
	if subtype == "Type3" {
		if m := v.Key("FontMatrix"); m.Len() == 6 {
			font.scale = m.Index(0).Float64()
		}
	}
	return font
}

// readToUnicode parses a /ToUnicode stream; a broken one leaves the font to
// its /Encoding rather than failing the page.
func readToUnicode(stream pdf.Value) (m *toUnicodeMap) {
	if stream.Kind() != pdf.Stream {
		return nil
	}
	defer func() {
		if recover() != nil {
			m = nil
		}
	}()
	body := stream.Reader()
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, 4<<20))
	if err != nil {
		return nil
	}
	return parseToUnicode(data)
}

// readCIDWidths reads a composite font's W array: "c [w1 w2 ...]" gives
// widths from CID c on, "c1 c2 w" one width for CIDs c1 to c2.
func readCIDWidths(w pdf.Value, widths map[int]float64) {
	const maxEntries = 1 << 16
	for i := 0; i < w.Len() && len(widths) < maxEntries; {
		first := int(w.Index(i).Int64())
		next := w.Index(i + 1)
		if next.Kind() == pdf.Array {
			for j := 0; j < next.Len(); j++ {
				widths[first+j] = next.Index(j).Float64()
			}
			i += 2
			continue
		}
		last, width := int(next.Int64()), w.Index(i+2).Float64()
		for cid := first; cid <= last && cid-first < maxEntries; cid++ {
			widths[cid] = width
		}
		i += 3
	}
}

func (f *pdfFont) codeLength(raw string) int {
	if !f.composite {
		return 1
	}
	if !f.identity && f.toUnicode != nil {
		if n := f.toUnicode.codeLength(raw); n > 0 {
			return n
		}
	}
	return min(2, len(raw))
}

// width returns the code's advance in text space per unit of font size.
func (f *pdfFont) width(code string) float64 {
	key := int(code[0])
	if f.composite {
		key = int(codeValue(code))
	}
	if w, ok := f.widths[key]; ok {
		return w * f.scale
	}
	return f.defaultWidth * f.scale
}

func (f *pdfFont) decode(code string) string {
	if text, ok := f.decoded[code]; ok {
		return text
	}
	text := f.decodeUncached(code)
	f.decoded[code] = text
	return text
}

func (f *pdfFont) decodeUncached(code string) string {
	if f.toUnicode != nil {
		if text, ok := f.toUnicode.lookup(code); ok {
			return printable(text)
		}
	}
	if f.fallback == nil {
		return "" // a glyph id without a mapping is no text
	}
	return printable(f.fallback.Encoder().Decode(code))
}

// printable drops what decoding produced for codes with no text: control
// characters and the replacement character.
func printable(text string) string {
	return strings.Map(func(r rune) rune {
		if r == unicode.ReplacementChar || unicode.IsControl(r) && r != '\t' {
			return -1
		}
		if r == '\t' || r == '\u00A0' {
			return ' '
		}
		return r
	}, text)
}
