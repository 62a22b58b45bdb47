package pagelang

import "testing"

func TestLanguageOfTheBrowser(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]string{
		"":                          "en",
		"es-MX,es;q=0.9,en;q=0.8":   "es",
		"es-MX,es;q=0.9":            "es",
		"es-419":                    "es",
		"fr-FR,fr;q=0.9":            "en",
		"fr, en;q=0.5":              "en",
		"de":                        "en",
		"de;q=0.9,es;q=0.8,en;q=.1": "es",
		"en-GB":                     "en",
		"not a header":              "en",
	} {
		if got := Of(header); got != want {
			t.Errorf("Of(%q) = %s, want %s", header, got, want)
		}
	}
}
