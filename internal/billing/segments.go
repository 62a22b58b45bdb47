package billing

import "unicode/utf8"

// gsm7 are the characters of the GSM 03.38 default alphabet; gsm7Ext those of its extension
// table, which take two septets each.
const (
	gsm7    = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
	gsm7Ext = "^{}\\[~]|€\f"
)

var gsm7Set, gsm7ExtSet = runeSet(gsm7), runeSet(gsm7Ext)

func runeSet(s string) map[rune]bool {
	m := make(map[rune]bool, utf8.RuneCountInString(s))
	for _, r := range s {
		m[r] = true
	}
	return m
}

// Segments is how many SMS parts text goes out as: in the GSM 7-bit alphabet 160 septets fit
// one part and 153 each part of a longer one; with any other character the text is UCS-2, 70
// characters in one part and 67 each (a character outside the Basic Multilingual Plane takes
// two). An empty text is one part.
func Segments(text string) int { return Measure(text).Segments() }

// Length is what the parts of an SMS depend on: the text's septets in the GSM 7-bit alphabet,
// its UTF-16 code units, and whether every character is in that alphabet. The lengths of pieces
// of a text add up to the text's (Plus), so a text filled in per recipient is priced from the
// lengths of its pieces (a broadcast's estimate).
type Length struct {
	Septets, Units int
	GSM            bool
}

// Measure is text's length.
func Measure(text string) Length {
	l := Length{GSM: true}
	for _, r := range text {
		switch {
		case gsm7Set[r]:
			l.Septets++
		case gsm7ExtSet[r]:
			l.Septets += 2
		default:
			l.GSM = false
		}
		if r > 0xFFFF {
			l.Units += 2
		} else {
			l.Units++
		}
	}
	return l
}

// Plus is the length of two pieces of text one after the other.
func (l Length) Plus(o Length) Length {
	return Length{Septets: l.Septets + o.Septets, Units: l.Units + o.Units, GSM: l.GSM && o.GSM}
}

// Segments is how many SMS parts a text of this length goes out as (see Segments).
func (l Length) Segments() int {
	single, multi, n := 160, 153, l.Septets
	if !l.GSM {
		single, multi, n = 70, 67, l.Units
	}
	if n <= single {
		return 1
	}
	return (n + multi - 1) / multi
}
