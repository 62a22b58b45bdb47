package agent

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

func TestVoicesFilterByLanguagePrefix(t *testing.T) {
	t.Parallel()
	all, err := Voices("")
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) == 0 || all.Total != len(all.Items) {
		t.Fatalf("every voice: %d items, total %d", len(all.Items), all.Total)
	}
	for _, tc := range []struct {
		language string
		want     func(tag string) bool
	}{
		{"auto", func(string) bool { return true }},
		{"AUTO", func(string) bool { return true }},
		{"pt", func(tag string) bool { return tag == "pt-BR" }},
		{"pt-BR", func(tag string) bool { return tag == "pt-BR" }},
		{"pt-br", func(tag string) bool { return tag == "pt-BR" }},
		{"en", func(tag string) bool { return strings.HasPrefix(tag, "en-") }},
		{"en-GB", func(tag string) bool { return tag == "en-GB" }},
		{"nl", func(tag string) bool { return tag == "nl-NL" || tag == "nl-BE" }},
		{"es-E", func(string) bool { return false }}, // a prefix of a subtag is no match
		{"sw", func(string) bool { return false }},
	} {
		got, err := Voices(tc.language)
		if err != nil {
			t.Fatalf("Voices(%q): %v", tc.language, err)
		}
		if got.Total != all.Total || !slices.Equal(got.Languages, all.Languages) {
			t.Errorf("Voices(%q): total %d, languages %v; the catalogue's are %d, %v", tc.language, got.Total, got.Languages, all.Total, all.Languages)
		}
		want := 0
		for _, v := range all.Items {
			if tc.want(v.Language) {
				want++
			}
		}
		if len(got.Items) != want {
			t.Errorf("Voices(%q) = %d voices, want %d", tc.language, len(got.Items), want)
		}
		for _, v := range got.Items {
			if !tc.want(v.Language) {
				t.Errorf("Voices(%q) lists %s (%s)", tc.language, v.ID, v.Language)
			}
		}
	}
	if got, _ := Voices("pt"); len(got.Items) == 0 {
		t.Error("no voice speaks Portuguese")
	}
}

func TestVoicesRefuseAMalformedLanguage(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"pt_BR", "english!", "-en", "en-", "x"} {
		_, err := Voices(bad)
		if e := apperror.As(err); e == nil || e.Code != "invalid_request" {
			t.Errorf("Voices(%q) = %v, want invalid_request", bad, err)
		}
	}
}

// TestVoiceCatalogue: ids are unique (they are what voice.ttsVoiceId holds), every voice names
// a language and one of ConversationRelay's TTS providers in its id's form, and the languages
// list is auto then the catalogue's languages, each once.
func TestVoiceCatalogue(t *testing.T) {
	t.Parallel()
	list, err := Voices("")
	if err != nil {
		t.Fatal(err)
	}
	forms := map[string]*regexp.Regexp{
		"Google":     regexp.MustCompile(`^[a-z]{2,3}-[A-Z]{2}-(Journey-[A-Z]|Chirp3-HD-[A-Z][a-z]+)$`),
		"Amazon":     regexp.MustCompile(`^[A-Z][a-z]+-Generative$`),
		"ElevenLabs": regexp.MustCompile(`^[A-Za-z0-9]{20}$`),
	}
	seen := map[string]bool{}
	for _, v := range list.Items {
		if seen[v.ID] {
			t.Errorf("voice %s is listed twice", v.ID)
		}
		seen[v.ID] = true
		form, ok := forms[v.Provider]
		if !ok || !form.MatchString(v.ID) {
			t.Errorf("voice %s: provider %q, or an id not in its form", v.ID, v.Provider)
		}
		if v.Name == "" || !languageTag.MatchString(v.Language) || !slices.Contains(list.Languages, v.Language) {
			t.Errorf("voice %s: name %q, language %q", v.ID, v.Name, v.Language)
		}
		if strings.HasPrefix(v.ID, "en-") || strings.HasPrefix(v.ID, "pt-") {
			if !strings.HasPrefix(v.ID, v.Language+"-") {
				t.Errorf("voice %s is listed as %s", v.ID, v.Language)
			}
		}
		if got, ok := VoiceByID(v.ID); !ok || got != v {
			t.Errorf("VoiceByID(%s) = %v, %v", v.ID, got, ok)
		}
	}
	if list.Languages[0] != LanguageAuto || !slices.IsSorted(list.Languages[1:]) || len(slices.Compact(slices.Clone(list.Languages))) != len(list.Languages) {
		t.Errorf("languages = %v", list.Languages)
	}
	if _, ok := VoiceByID("en-US-Wavenet-Z"); ok {
		t.Error("an unknown voice is found")
	}
}

// An installation's voices file adds voices and replaces a shipped one by id; a bad entry is refused.
func TestVoicebookExtends(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "voices.json")
	if err := os.WriteFile(good, []byte(`[{"id":"acme-es-1","name":"Acme Spanish","language":"es-CL","provider":"ElevenLabs"},
		{"id":"en-US-Journey-D","name":"Replaced","language":"en-US","provider":"Google"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	book, err := LoadVoicebook(good)
	if err != nil {
		t.Fatal(err)
	}
	shipped, _ := Voices("")
	all, _ := book.Voices("")
	if all.Total != shipped.Total+1 {
		t.Errorf("total %d, shipped %d", all.Total, shipped.Total)
	}
	es, _ := book.Voices("es-CL")
	if len(es.Items) != 1 || es.Items[0].ID != "acme-es-1" || !slices.Contains(es.Languages, "es-CL") {
		t.Errorf("es-CL = %+v", es)
	}
	en, _ := book.Voices("en-US")
	if i := slices.IndexFunc(en.Items, func(v CatalogVoice) bool { return v.ID == "en-US-Journey-D" }); i < 0 || en.Items[i].Name != "Replaced" {
		t.Errorf("the replaced voice: %+v", en.Items)
	}
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`[{"id":"x","language":"not a tag","provider":"Google"}]`), 0o600)
	if _, err := LoadVoicebook(bad); err == nil {
		t.Error("a voice with a bad language was taken")
	}
	if _, err := LoadVoicebook(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file was taken")
	}
}
