package embedtest

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
)

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func TestRelatedTextsAreNear(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b, other string
	}{
		{"refund policy for returns", "how do I return an item for a refund", "the weather in Paris is sunny"},
		{"Our shipping takes 3 to 5 business days", "How many days does shipping take?", "Reset your password from the login page"},
		{"política de devoluciones y reembolsos", "¿cómo pido un reembolso por una devolución?", "el clima en Madrid es soleado"},
		{"Updating the billing address", "update billing addresses", "the cat sat on the mat"},
	}
	for _, dims := range []int{64, 256, 1536} {
		for _, tt := range tests {
			a, b, o := Vector(tt.a, dims), Vector(tt.b, dims), Vector(tt.other, dims)
			near, farA, farB := cosine(a, b), cosine(a, o), cosine(b, o)
			// A clear margin: the related pair shares most of its words, the others none.
			if near < 0.4 || near-max(farA, farB) < 0.3 {
				t.Errorf("dims %d: cos(%q, %q) = %.3f, against %q: %.3f and %.3f", dims, tt.a, tt.b, near, tt.other, farA, farB)
			}
		}
	}
}

func TestWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want []string
	}{
		{"How do I return an item for a refund?", []string{"return", "item", "refund"}},
		{"returns returned returning RETURN", []string{"return", "return", "return", "return"}},
		{"policies classes status boxes matches", []string{"policy", "class", "status", "box", "match"}},
		{"update updates updated updating", []string{"updat", "updat", "updat", "updat"}},
		{"Devoluciones, devolución; políticas", []string{"devolucion", "devolucion", "politica"}},
		{"e-mail x2 año 東京の天気", []string{"mail", "x2", "año", "東京の天気"}},
		{"the and of is  ... ¿qué?", []string{}},
	}
	for _, tt := range tests {
		if got := words(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("words(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestVector(t *testing.T) {
	t.Parallel()
	for _, dims := range []int{1, 2, 8, 256} {
		for _, text := range []string{"", "   ", "the of and", "hello", "refund policy for returns", "東京の天気"} {
			v := Vector(text, dims)
			if len(v) != dims {
				t.Fatalf("Vector(%q, %d) has %d values", text, dims, len(v))
			}
			var norm float64
			for _, x := range v {
				norm += float64(x) * float64(x)
			}
			if math.Abs(norm-1) > 1e-6 {
				t.Errorf("Vector(%q, %d) has length² %v, want 1", text, dims, norm)
			}
			if again := Vector(text, dims); !slices.Equal(v, again) {
				t.Errorf("Vector(%q, %d) differs from one call to the next", text, dims)
			}
			// float32 values print and parse back to themselves.
			b, _ := json.Marshal(v)
			var back []float32
			if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back, v) {
				t.Errorf("Vector(%q, %d) does not survive JSON: %v", text, dims, err)
			}
		}
	}
	if v := Vector("the", 4); !slices.Equal(v, []float32{1, 0, 0, 0}) {
		t.Errorf("a text of stop words is %v, want e0", v)
	}
	if v := Vector("hello", 0); len(v) != 0 {
		t.Errorf("Vector in 0 dimensions = %v", v)
	}
	// Word order and case do not matter; words do.
	if a, b := Vector("Refund policy", 64), Vector("policy REFUND", 64); !slices.Equal(a, b) {
		t.Errorf("word order changed the vector")
	}
	if a, b := Vector("one", 256), Vector("two", 256); slices.Equal(a, b) {
		t.Errorf("two texts have one vector")
	}
}
