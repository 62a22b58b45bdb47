// Package chunk splits a document's text into the overlapping pieces a knowledge base embeds
// and retrieves: about 600 tokens each, cut between paragraphs where it can, else between
// sentences, else between words, and only inside a word (a long URL, a run of CJK text with
// no punctuation) that would not fit a chunk by itself.
package chunk

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// DefaultTokens and DefaultOverlap are what zero Options mean.
	DefaultTokens  = 600
	DefaultOverlap = 120
	// minTokens bounds Options.Tokens from below: a chunk must hold at least a word (2
	// tokens) and leave room for an overlap.
	minTokens = 8
)

// Options size the chunks.
type Options struct {
	// Tokens bounds a chunk's EstimateTokens; 0 (or less) is DefaultTokens, and less than 8 is 8.
	Tokens int
	// Overlap is about how many tokens of the end of a chunk begin the next (whole sentences,
	// or words when the sentence is longer); 0 is DefaultOverlap, less than 0 none. It is at
	// most half of Tokens, so that every chunk brings at least half of new text.
	Overlap int
}

func (o Options) limits() (tokens, overlap int) {
	tokens, overlap = o.Tokens, o.Overlap
	if tokens <= 0 {
		tokens = DefaultTokens
	}
	tokens = max(tokens, minTokens)
	switch {
	case overlap == 0:
		overlap = DefaultOverlap
	case overlap < 0:
		overlap = 0
	}
	return tokens, min(overlap, tokens/2)
}

// Chunk is one piece of the text.
type Chunk struct {
	// Index is the chunk's place, from 0.
	Index int
	// Text is the chunk's text, its whitespace normalised: a paragraph break (a blank line) is
	// "\n\n", any other run of whitespace a space, none at either end.
	Text string
	// Start and End are the rune offsets in the input of the chunk's first rune and of the one
	// after its last (so the input's runes [Start, End) are Text before normalising).
	Start, End int
	// Tokens is EstimateTokens(Text).
	Tokens int
}

// EstimateTokens estimates how many tokens a model's tokenizer makes of s, with no tokenizer:
// the larger of 1.3 tokens a word and 1 token every 4 characters, rounded up. English prose
// is about 1.3 tokens a word, and the character count catches what words undercount: long
// words, numbers, code, URLs. A word is a run of characters between spaces, except that each
// CJK character (Han, kana, Hangul, and CJK and full-width punctuation) is a word by itself:
// those scripts write no spaces and take about a token a character. Errors, if any, are on
// the side of more tokens, so that a chunk fits the model it is estimated for.
func EstimateTokens(s string) int {
	return estimate(count(s))
}

func estimate(words, runes int) int {
	return max((13*words+9)/10, (runes+3)/4)
}

// count is s's words (as EstimateTokens counts them) and runes.
func count(s string) (words, runes int) {
	inWord := false
	for _, r := range s {
		runes++
		switch {
		case unicode.IsSpace(r):
			inWord = false
		case wide(r):
			words++
			inWord = false
		case !inWord:
			words++
			inWord = true
		}
	}
	return words, runes
}

// wide says r is a character of a script written without spaces, counted as a word by itself.
func wide(r rune) bool {
	if r < 0x2e80 {
		return false
	}
	return r <= 0x303f || // CJK radicals, symbols and punctuation
		(r >= 0xff00 && r <= 0xffef) || // full-width and half-width forms
		unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// level is how strong a cut between two atoms is.
type level uint8

const (
	inWord level = iota // between two pieces of a word too long for a chunk
	betweenWords
	betweenSentences
	betweenParagraphs // and at the end of the text
)

// spacing is the normalised whitespace before an atom.
type spacing uint8

const (
	noSpace spacing = iota
	space
	paragraphBreak
)

var seps = [...]string{noSpace: "", space: " ", paragraphBreak: "\n\n"}

// atom is a unit a chunk is made of: a word, or part of one (a CJK sentence, a piece of a
// word too long for a chunk). It holds no whitespace, and no pointer: a text has many.
type atom struct {
	b0, b1 int // byte offsets into the input
	r0, r1 int // rune offsets into the input
	sep    spacing
	after  level // the cut after it
	words  int
	// n0 is its rune offset in the normalised text (the atoms joined by their seps), and
	// wordsBefore the words of the atoms before it: a run of atoms' tokens in O(1).
	n0, wordsBefore int
}

// Split cuts text into chunks in order. Each chunk's estimated tokens are at most
// Options.Tokens; it ends at the last paragraph break that leaves it at least half full, else
// at the last sentence end that does, else at the last word that fits; the next begins with
// the sentences (or, if the last is too long, the words) of its end that make up to
// Options.Overlap tokens. A word that does not fit a chunk by itself is cut between
// characters, and the chunks overlap by characters there. Blank text has no chunks.
//
// Sentences end with . ! ? … followed by a space or the end of the text (so not "3.5" or
// "example.com"), and not after an abbreviation ("e.g.", "Dr.", "J.") that is seldom a
// sentence's last word; and with the CJK and full-width 。！？．, which need no space.
func Split(text string, o Options) []Chunk {
	tokens, overlap := o.limits()
	s := splitter{text: text, max: tokens, overlap: overlap}
	s.segment()
	n := len(s.atoms)
	if n == 0 {
		return nil
	}
	var chunks []Chunk
	start, done := 0, 0 // the next chunk's first atom, and how many atoms are in chunks
	for {
		var end int
		start, end = s.pickEnd(start, done)
		chunks = append(chunks, s.chunk(len(chunks), start, end))
		if end == n {
			return chunks
		}
		start, done = s.overlapStart(start, end), end
	}
}

type splitter struct {
	text         string
	max, overlap int
	atoms        []atom
}

// tokens is the estimate for the normalised text of atoms [i, j), i < j. It is exact but for
// words cut in pieces, each piece counted as a word: more, never fewer.
func (s *splitter) tokens(i, j int) int {
	a, b := &s.atoms[i], &s.atoms[j-1]
	runes := b.n0 + (b.r1 - b.r0) - a.n0
	return estimate(b.wordsBefore+b.words-a.wordsBefore, runes)
}

// pickEnd chooses where the chunk that begins at atom start ends: after atom done at the
// least, which may mean beginning later (with less overlap) when the atom after done does not
// fit with the overlap.
func (s *splitter) pickEnd(start, done int) (int, int) {
	n := len(s.atoms)
	if s.tokens(start, n) <= s.max {
		return start, n
	}
	fit := -1 // the most atoms that fit
	for j := done + 1; j <= n && s.tokens(start, j) <= s.max; j++ {
		fit = j
	}
	if fit < 0 {
		// Every atom fits a chunk by itself (segment cut those that do not).
		return s.pickEnd(done, done)
	}
	// A paragraph break, or else a sentence end, that leaves the chunk half full: a cut that
	// fits the meaning is worth a smaller chunk, but not a crumb of one.
	for _, want := range []level{betweenParagraphs, betweenSentences} {
		for j := fit; j > done && s.tokens(start, j) >= s.max/2; j-- {
			if s.atoms[j-1].after >= want {
				return start, j
			}
		}
	}
	for j := fit; j > done; j-- {
		if s.atoms[j-1].after >= betweenWords {
			return start, j
		}
	}
	return start, fit
}

// overlapStart is where the chunk after atoms [start, end) begins: at the earliest sentence
// start whose sentences to end make at most s.overlap tokens, else at such a word (the last
// sentence is longer than the overlap), else inside the word the chunk was cut in, else at
// end (no overlap). It is after start, so that chunks move on.
func (s *splitter) overlapStart(start, end int) int {
	sentence, word, piece := end, end, end
	for b := end - 1; b > start && s.tokens(b, end) <= s.overlap; b-- {
		switch s.atoms[b-1].after {
		case betweenParagraphs, betweenSentences:
			sentence = b
			word = b
		case betweenWords:
			word = b
		}
		piece = b
	}
	switch {
	case sentence < end:
		return sentence
	case word < end:
		return word
	case s.atoms[end-1].after == inWord:
		return piece
	}
	return end
}

func (s *splitter) chunk(index, start, end int) Chunk {
	first, last := &s.atoms[start], &s.atoms[end-1]
	var b strings.Builder
	// Normalising only shortens whitespace.
	b.Grow(last.b1 - first.b0)
	for i := start; i < end; i++ {
		a := &s.atoms[i]
		if i > start {
			b.WriteString(seps[a.sep])
		}
		b.WriteString(s.text[a.b0:a.b1])
	}
	text := b.String()
	return Chunk{Index: index, Text: text, Start: first.r0, End: last.r1, Tokens: EstimateTokens(text)}
}

// segment cuts the text into atoms: its words, CJK sentences cut apart, words too long for a
// chunk cut in pieces; each atom knows the whitespace before it and the cut after it.
func (s *splitter) segment() {
	s.atoms = make([]atom, 0, len(s.text)/6+1) // English averages 6 bytes a word and space
	newlines, crBefore := 0, false
	word0, wordR0 := -1, 0 // where the current word began, -1 outside one
	r := 0
	for i, c := range s.text {
		if !unicode.IsSpace(c) {
			crBefore = false
			if word0 < 0 {
				word0, wordR0 = i, r
			}
			r++
			continue
		}
		if word0 >= 0 {
			s.addWord(word0, i, wordR0, r, newlines)
			word0, newlines = -1, 0
		}
		// A paragraph break is a blank line: two line ends in a run of whitespace (\r\n is one).
		switch c {
		case '\n':
			if !crBefore {
				newlines++
			}
		case '\r', '\u2028', '\v', '\f':
			newlines++
		case '\u2029':
			newlines += 2
		}
		crBefore = c == '\r'
		r++
	}
	if word0 >= 0 {
		s.addWord(word0, len(s.text), wordR0, r, newlines)
	}
	if n := len(s.atoms); n > 0 {
		s.atoms[n-1].after = betweenParagraphs
	}
	for i := range s.atoms {
		a := &s.atoms[i]
		if i > 0 {
			p := &s.atoms[i-1]
			a.n0 = p.n0 + (p.r1 - p.r0) + len(seps[a.sep])
			a.wordsBefore = p.wordsBefore + p.words
		}
	}
}

// addWord adds the word text[b0:b1] (runes r0 to r1), preceded by whitespace with newlines
// line ends: cut after its CJK sentence ends, and in pieces where too long.
func (s *splitter) addWord(b0, b1, r0, r1, newlines int) {
	sep := space
	if n := len(s.atoms); n == 0 {
		sep = noSpace
	} else {
		p := &s.atoms[n-1]
		switch {
		case newlines >= 2:
			sep, p.after = paragraphBreak, betweenParagraphs
		case sentenceEnd(s.text[p.b0:p.b1]):
			p.after = betweenSentences
		default:
			p.after = betweenWords
		}
	}
	// A CJK sentence end needs no space after it: cut there, past its closing quotes.
	r := r0
	for i := b0; i < b1; {
		c, size := utf8.DecodeRuneInString(s.text[i:b1])
		i += size
		r++
		if !cjkEnd(c) {
			continue
		}
		for i < b1 {
			c, size := utf8.DecodeRuneInString(s.text[i:b1])
			if !closer(c) && !cjkEnd(c) {
				break
			}
			i += size
			r++
		}
		if i < b1 {
			s.add(b0, i, r0, r, sep)
			s.atoms[len(s.atoms)-1].after = betweenSentences
			b0, r0, sep = i, r, noSpace
		}
	}
	s.add(b0, b1, r0, r1, sep)
}

// add adds text[b0:b1] as an atom, or as pieces of about a sixteenth of a chunk if it does
// not fit one: small, so that the overlap has pieces to be made of.
func (s *splitter) add(b0, b1, r0, r1 int, sep spacing) {
	words, runes := count(s.text[b0:b1])
	if estimate(words, runes) <= s.max {
		s.atoms = append(s.atoms, atom{b0: b0, b1: b1, r0: r0, r1: r1, sep: sep, after: betweenWords, words: words})
		return
	}
	budget := max(2, s.max/16)
	pieceB, pieceR := b0, r0
	words, runes, prevWide := 0, 0, true
	r := r0
	for i := b0; i < b1; {
		c, size := utf8.DecodeRuneInString(s.text[i:b1])
		w := words
		if wide(c) || prevWide {
			w++ // c begins a word: it is wide, follows a wide rune, or is the first
		}
		if runes > 0 && estimate(w, runes+1) > budget {
			s.atoms = append(s.atoms, atom{b0: pieceB, b1: i, r0: pieceR, r1: r, sep: sep, after: inWord, words: words})
			pieceB, pieceR, sep = i, r, noSpace
			words, runes = 1, 0
		} else {
			words = w
		}
		runes++
		prevWide = wide(c)
		i += size
		r++
	}
	s.atoms = append(s.atoms, atom{b0: pieceB, b1: b1, r0: pieceR, r1: r1, sep: sep, after: betweenWords, words: words})
}

// sentenceEnd says a word followed by whitespace ends a sentence.
func sentenceEnd(w string) bool {
	w = strings.TrimRightFunc(w, closer)
	last, _ := utf8.DecodeLastRuneInString(w)
	switch {
	case cjkEnd(last) || last == '!' || last == '?' || last == '…':
		return true
	case last != '.':
		return false
	}
	w = strings.TrimLeftFunc(w, opener)
	return !abbreviations[strings.ToLower(w)] && !dotted(w)
}

// dotted says w is letters each followed by a dot: an initial ("J. Smith", but not "I." nor a
// lower-case letter) or "U.S.", "e.g.", "a.m.".
func dotted(w string) bool {
	rs := []rune(w)
	if len(rs) == 2 {
		return unicode.IsUpper(rs[0]) && rs[0] != 'I' && rs[1] == '.'
	}
	if len(rs) < 4 || len(rs)%2 != 0 {
		return false
	}
	for i, c := range rs {
		if i%2 == 0 && !unicode.IsLetter(c) || i%2 == 1 && c != '.' {
			return false
		}
	}
	return true
}

func cjkEnd(r rune) bool { return r == '。' || r == '！' || r == '？' || r == '．' || r == '｡' }

func closer(r rune) bool { return strings.ContainsRune(`"')]}’”»›」』】）`, r) }

func opener(r rune) bool { return strings.ContainsRune(`"'([{‘“«‹「『【（¿¡`, r) }

// abbreviations are words ending in a dot that seldom end a sentence, lower-cased ("etc.",
// "no.", "Inc." often do; letters with dots, "e.g.", are found without a list).
var abbreviations = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`mr. mrs. ms. dr. dra. prof. sr. sra. srta. jr. st. mt. vs. cf.
		approx. fig. figs. vol. pp. dept. jan. feb. apr. jun. jul. aug. sep. sept. oct. nov. dec.
		ej. pág. núm. lic. av.`) {
		m[w] = true
	}
	return m
}()
