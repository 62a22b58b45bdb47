package knowledge

import (
	"slices"
	"testing"
)

// A message becomes an OR of its words: letters and digits only, so tsquery syntax in it is
// never read as such; repeated and one-letter words once or not at all.
func TestOrQuery(t *testing.T) {
	for in, want := range map[string]string{
		"Can I return an item?":           "can | return | an | item",
		"refund & (return) | !cancel:*":   "refund | return | cancel",
		"política de devolución, 30 días": "política | de | devolución | 30 | días",
		"a b c":                           "",
		"":                                "",
		"Refund refund REFUND":            "refund",
	} {
		if got := orQuery(in); got != want {
			t.Errorf("orQuery(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVectorRoundTrip(t *testing.T) {
	v := []float32{0.5, -0.25, 1e-7, 0}
	if got := decodeVector(encodeVector(v)); !slices.Equal(got, v) {
		t.Fatalf("round trip = %v", got)
	}
	n := normalize([]float32{3, 4})
	if n[0] != 0.6 || n[1] != 0.8 {
		t.Fatalf("normalize = %v", n)
	}
}

func TestIndexKeys(t *testing.T) {
	key := IndexKey("acme", "support", "openai/text-embedding-3-small@256")
	if key != "acme/support/openai/text-embedding-3-small@256" {
		t.Fatalf("key = %q", key)
	}
	// An agent's prefix names its keys and no other agent's.
	if p := keyPrefix("acme", "support"); key[:len(p)] != p || keyPrefix("acme", "sup") == p {
		t.Fatalf("prefix = %q", p)
	}
}

func TestParseTSVector(t *testing.T) {
	got := parseTSVector(`'a':3 'days':12,20 'it''s':5 'refund':1,7,9 'x'`)
	want := map[string]int32{"a": 1, "days": 2, "it's": 1, "refund": 3, "x": 1}
	if len(got) != len(want) {
		t.Fatalf("parsed %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("parsed %v, want %v", got, want)
		}
	}
}
