package connectpage

import (
	"strings"
	"testing"
)

// Every language has every key, with the same placeholders, so no page shows a key or a
// %!s(MISSING).
func TestEveryLanguageHasEveryText(t *testing.T) {
	for l, texts := range text {
		for key, en := range text["en"] {
			s, ok := texts[key]
			if !ok {
				t.Errorf("%s lacks %q", l, key)
				continue
			}
			if strings.Count(s, "%s") != strings.Count(en, "%s") {
				t.Errorf("%s %q has %d placeholders, English %d", l, key, strings.Count(s, "%s"), strings.Count(en, "%s"))
			}
		}
		if len(texts) != len(text["en"]) {
			t.Errorf("%s has %d texts, English %d", l, len(texts), len(text["en"]))
		}
	}
}
