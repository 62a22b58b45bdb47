package extract

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Layout thresholds, in multiples of the font size.
const (
	wordGap          = 0.15 // a gap wider than this between glyphs is a space
	sameBaseline     = 0.5  // baselines closer than this are one line (allows sub/superscripts)
	backstep         = 0.5  // a glyph this far left of the line's end starts a new line
	duplicateOffset  = 0.1  // a repeated glyph this close is fake bold, drawn twice
	paragraphSpacing = 1.3  // a line pitch this much above the usual one starts a paragraph
	firstLineIndent  = 1.0  // a line starting this far right of the one before starts a paragraph
	shortLine        = 2.0  // a line ending this far short of its paragraph's right edge ends the paragraph
)

type textLine struct {
	text       strings.Builder
	start, end float64
	v, size    float64
	dir        int
	last       glyph
}

// layoutPage rebuilds lines from glyphs in drawing order and groups lines
// into paragraphs, separated by blank lines. Lines of one paragraph are
// joined with spaces so sentences stay whole for the chunker.
func layoutPage(glyphs []glyph) string {
	lines := buildLines(glyphs)
	if len(lines) == 0 {
		return ""
	}
	pitch := usualPitch(lines)
	var paragraphs []string
	var current strings.Builder
	paragraphStart, paragraphRight := lines[0].start, lines[0].end
	linesInParagraph := 0
	for i, line := range lines {
		text := strings.TrimSpace(line.text.String())
		if i > 0 && startsParagraph(lines[i-1], line, pitch, paragraphStart, paragraphRight, linesInParagraph) {
			paragraphs = append(paragraphs, current.String())
			current.Reset()
			paragraphStart, paragraphRight, linesInParagraph = line.start, line.end, 0
		}
		if current.Len() > 0 {
			joinLine(&current, text)
		} else {
			current.WriteString(text)
		}
		paragraphRight = max(paragraphRight, line.end)
		linesInParagraph++
	}
	paragraphs = append(paragraphs, current.String())
	return strings.Join(paragraphs, "\n\n")
}

func buildLines(glyphs []glyph) []*textLine {
	var lines []*textLine
	var line *textLine
	for _, g := range glyphs {
		if line != nil && isDuplicate(line.last, g) {
			continue
		}
		if line == nil || g.dir != line.dir || abs(g.v-line.v) > sameBaseline*max(g.size, line.size) || g.u < line.end-backstep*g.size {
			if line != nil && strings.TrimSpace(line.text.String()) == "" {
				lines = lines[:len(lines)-1] // a line of only spaces is none
			}
			line = &textLine{start: g.u, end: g.u, v: g.v, size: g.size, dir: g.dir}
			lines = append(lines, line)
		} else if g.u-line.end > wordGap*g.size && !isSpaceText(g.text) && !endsWithSpace(&line.text) {
			line.text.WriteByte(' ')
		}
		line.text.WriteString(g.text)
		line.end = max(line.end, g.end)
		line.size = max(line.size, g.size)
		line.last = g
	}
	if line != nil && strings.TrimSpace(line.text.String()) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func isDuplicate(previous, g glyph) bool {
	return previous.text == g.text && previous.dir == g.dir &&
		abs(previous.u-g.u) < duplicateOffset*g.size && abs(previous.v-g.v) < duplicateOffset*g.size
}

// usualPitch is the common distance between baselines as a multiple of the
// font size: the lower quartile, so paragraph spacing does not count.
func usualPitch(lines []*textLine) float64 {
	var pitches []float64
	for i := 1; i < len(lines); i++ {
		a, b := lines[i-1], lines[i]
		if a.dir != b.dir {
			continue
		}
		if ratio := (a.v - b.v) / max(a.size, b.size); ratio > 0.5 && ratio < 3 {
			pitches = append(pitches, ratio)
		}
	}
	if len(pitches) == 0 {
		return 1.2 // what most software sets by default
	}
	sort.Float64s(pitches)
	return pitches[len(pitches)/4]
}

func startsParagraph(previous, line *textLine, pitch, paragraphStart, paragraphRight float64, linesInParagraph int) bool {
	size := max(previous.size, line.size)
	gap := (previous.v - line.v) / size
	switch {
	case line.dir != previous.dir:
		return true
	case abs(line.size-previous.size) > 0.15*size: // a heading, a caption, a footnote
		return true
	case gap < sameBaseline: // moved up or back on the same baseline: a new column or text box
		return true
	case gap > pitch*paragraphSpacing:
		return true
	case startsWithBullet(line.text.String()):
		return true
	case linesInParagraph > 1 && line.start > previous.start+firstLineIndent*size:
		return true
	case previous.end < paragraphRight-shortLine*size && endsSentence(previous.text.String()):
		return true
	}
	return false
}

// joinLine appends the next line of a paragraph: with a space, without one
// after a hyphen that splits a word, or between CJK characters.
func joinLine(b *strings.Builder, next string) {
	sofar := b.String()
	last, _ := utf8.DecodeLastRuneInString(sofar)
	first, _ := utf8.DecodeRuneInString(next)
	switch {
	case last == '-' && len(sofar) > 1 && unicode.IsLetter(secondLastRune(sofar)) && unicode.IsLower(first):
	case isCJK(last) && isCJK(first):
	default:
		b.WriteByte(' ')
	}
	b.WriteString(next)
}

func secondLastRune(s string) rune {
	_, size := utf8.DecodeLastRuneInString(s)
	r, _ := utf8.DecodeLastRuneInString(s[:len(s)-size])
	return r
}

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

func startsWithBullet(text string) bool {
	text = strings.TrimSpace(text)
	r, _ := utf8.DecodeRuneInString(text)
	switch r {
	case '•', '◦', '▪', '▫', '■', '□', '●', '○', '‣', '⁃', '–', '—', '\uF0B7': // U+F0B7: the Symbol font's bullet
		return true
	}
	return false
}

func endsSentence(text string) bool {
	text = strings.TrimRight(text, " \"'”’)»")
	r, _ := utf8.DecodeLastRuneInString(text)
	return strings.ContainsRune(".!?:。！？", r)
}

func isSpaceText(s string) bool { return strings.TrimSpace(s) == "" }

func endsWithSpace(b *strings.Builder) bool {
	s := b.String()
	return s == "" || s[len(s)-1] == ' '
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
