package billing

import (
	"testing"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

func TestTokensQuote(t *testing.T) {
	list := &v1alpha1.PriceList{Spec: v1alpha1.PriceListSpec{ModelPrices: []v1alpha1.ModelPrice{
		{Model: "*", InputPerMillion: "0.50", OutputPerMillion: "1.50"},
		{Model: "big", InputPerMillion: "3", OutputPerMillion: "15"},
	}}}
	for _, tc := range []struct {
		model       string
		input, outp int64
		want        Micros
	}{
		{"big", 1000, 500, 3000 + 7500}, // 0.003 + 0.0075 USD
		{"small", 1000, 1000, 500 + 1500},
		{"small", 1, 1, 2}, // 0.5 + 1.5 micros: rounded up, never free
		{"small", 0, 0, 0},
	} {
		got, ok, err := TokensQuote(list, tc.model, tc.input, tc.outp)
		if err != nil || !ok || got != tc.want {
			t.Errorf("%s %d/%d: %d %v %v, want %d", tc.model, tc.input, tc.outp, got, ok, err, tc.want)
		}
	}
	if _, ok, _ := TokensQuote(&v1alpha1.PriceList{}, "any", 10, 10); ok {
		t.Error("a list without model prices priced a model")
	}
}
