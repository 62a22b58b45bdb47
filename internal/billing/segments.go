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
func Segments(text string) int {
	septets, gsm := 0, true
	units := 0
	for _, r := range text {
		switch {
		case gsm7Set[r]:
			septets++
		case gsm7ExtSet[r]:
			septets += 2
		default:
			gsm = false
		}
		if r > 0xFFFF {
			units += 2
		} else {
			units++
		}
	}
	single, multi, n := 160, 153, septets
	if !gsm {
		single, multi, n = 70, 67, units
	}
	if n <= single {
		return 1
	}
	return (n + multi - 1) / multi
}
