// Package embedtest makes embeddings for tests and the sandbox: deterministic vectors in which
// texts that share words lie near each other, so that retrieval (chunk, embed, search by
// cosine) can be tested end to end with no provider account. It is not a language model: it
// knows words, not meaning ("car" and "automobile" are unrelated to it).
package embedtest

import (
	"hash/fnv"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// slots is how many signed dimensions each word adds to: more than one, so that two words
// that collide in one dimension still differ in the others (feature hashing).
const slots = 3

// Vector is the embedding of text in dims dimensions (none when dims < 1): each word, lower-
// cased, stripped of accents and crudely stemmed, stop words left out, adds ±1 to slots
// dimensions chosen by its FNV-1a hash, and the sum is scaled to unit length. A text with no
// words is the first unit vector, so that every vector is of unit length. Values are float32,
// so they survive a JSON round trip exactly.
func Vector(text string, dims int) []float32 {
	if dims < 1 {
		return []float32{}
	}
	sum := make([]float64, dims)
	for _, w := range words(text) {
		for s := range slots {
			h := fnv.New64a()
			h.Write([]byte{byte(s)})
			h.Write([]byte(w))
			x := h.Sum64()
			sign := 1.0
			if x>>63 == 1 {
				sign = -1
			}
			sum[(x&(1<<63-1))%uint64(dims)] += sign
		}
	}
	var norm float64
	for _, x := range sum {
		norm += x * x
	}
	out := make([]float32, dims)
	if norm == 0 {
		// No words, or (in few dimensions) signs that cancelled out.
		out[0] = 1
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range sum {
		out[i] = float32(x / norm)
	}
	return out
}

// words are the terms Vector hashes: text lower-cased and split on what is neither a letter
// nor a digit (in any script), accents taken off Latin vowels, stop words left out, the rest
// stemmed.
func words(text string) []string {
	fields := strings.FieldsFunc(foldAccents.Replace(strings.ToLower(text)), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := fields[:0]
	for _, f := range fields {
		if !stopWords[f] {
			out = append(out, stem(f))
		}
	}
	return out
}

// foldAccents makes "política" and "politica" (and Spanish plurals that move the accent,
// "devolución", "devoluciones") one word; ñ is kept, as it tells words apart (año, ano).
var foldAccents = strings.NewReplacer("á", "a", "à", "a", "â", "a", "ä", "a", "é", "e", "è", "e", "ê", "e", "ë", "e",
	"í", "i", "ì", "i", "î", "i", "ï", "i", "ó", "o", "ò", "o", "ô", "o", "ö", "o", "ú", "u", "ù", "u", "û", "u", "ü", "u")

// stem strips the commonest English and Spanish inflections, a plural, then -ing or -ed, then
// a final e, so that "returns", "returned" and "returning" are "return", and "update",
// "updates", "updated" and "updating" are "updat": crude (a stem may not be a word), but the
// same for a word in a question and in a document, which is all similarity needs. A stem
// keeps at least 3 letters.
func stem(w string) string {
	strip := func(suffix, repl string) bool {
		if !strings.HasSuffix(w, suffix) || utf8.RuneCountInString(w)-utf8.RuneCountInString(suffix) < 3 {
			return false
		}
		w = strings.TrimSuffix(w, suffix) + repl
		return true
	}
	// Plurals: -ies, English ones of words ending in a sibilant (boxes, matches), Spanish ones of
	// words ending in -ión (devoluciones), else -s but for words that end in s unplural (class,
	// status, analysis).
	plural := false
	for _, r := range [][2]string{{"ies", "y"}, {"sses", "ss"}, {"ches", "ch"}, {"shes", "sh"}, {"xes", "x"}, {"zes", "z"}, {"ones", "on"}} {
		if strip(r[0], r[1]) {
			plural = true
			break
		}
	}
	if !plural && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is") {
		strip("s", "")
	}
	if !strip("ing", "") && !strip("ied", "y") {
		strip("ed", "")
	}
	strip("e", "")
	return w
}

// stopWords are English and Spanish words too common to tell texts apart (after lower-casing
// and accent folding: "como" is also "cómo").
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		a an the and or but if of to in on at by for from with about into over as than then so
		is are was were be been being am do does did doing have has had having will would shall
		should can could may might must i me my mine we us our you your he him his she her it its
		they them their this that these those there here what which who whom whose when where why
		how not no yes all any some just also very too s t don
		el la los las lo un una unos unas y o u e ni pero si no de del al a en con por para sin
		sobre entre que quien cual cuales como cuando donde es son ser fue era esta estan estoy
		este esto estos estas ese esa eso yo tu te se me mi mis su sus nos le les ya mas muy hay
	`) {
		m[w] = true
	}
	return m
}()
