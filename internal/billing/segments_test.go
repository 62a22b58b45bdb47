package billing

import (
	"strings"
	"testing"
)

// The lengths of a text's pieces add up to the text's: a broadcast's estimate prices a text
// filled in per recipient from them, so they must give the parts the whole text takes.
func TestLengthsOfPiecesAddUp(t *testing.T) {
	t.Parallel()
	pieces := []string{"", "Hi ", "Ann", strings.Repeat("a", 150), "€{}[]", "Жанна", "😀", strings.Repeat("é", 100),
		strings.Repeat("Ж", 69), strings.Repeat("x", 160), "\n"}
	for _, a := range pieces {
		for _, b := range pieces {
			for _, c := range pieces {
				whole := a + b + c
				l := Measure(a).Plus(Measure(b)).Plus(Measure(c))
				if l != Measure(whole) || l.Segments() != Segments(whole) {
					t.Errorf("%q+%q+%q: pieces %+v (%d parts), whole %+v (%d parts)", a, b, c, l, l.Segments(), Measure(whole), Segments(whole))
				}
			}
		}
	}
}
