package agent

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/switchboard-io/switchboard/internal/apperror"
)

// CatalogVoice is a voice an agent can speak with on a call: a text-to-speech voice of Twilio
// ConversationRelay (the calls' voice pipeline), whose ID is the value of voice.ttsVoiceId and of
// ConversationRelay's voice attribute, and whose Provider is its ttsProvider (Google, Amazon,
// ElevenLabs). Language is the voice's own BCP-47 tag.
type CatalogVoice struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Language string `json:"language"`
	Provider string `json:"provider"`
}

// VoiceList is GET /v1/agents/voices: the voices that speak the language asked for, the
// languages an agent can be pinned to (auto first: it follows the caller), and the catalogue's
// size before filtering.
type VoiceList struct {
	Items     []CatalogVoice `json:"items"`
	Languages []string       `json:"languages"`
	Total     int            `json:"total"`
}

// LanguageAuto is the voice language that follows the caller.
const LanguageAuto = "auto"

//go:embed catalog/voices.json
var voicesJSON []byte

// voiceCatalog is the shipped catalogue (catalog/voices.json), read once.
var voiceCatalog = sync.OnceValues(func() ([]CatalogVoice, error) {
	var out []CatalogVoice
	if err := json.Unmarshal(voicesJSON, &out); err != nil {
		return nil, fmt.Errorf("read the voice catalogue: %w", err)
	}
	return out, nil
})

// languageTag is the shape of a BCP-47 tag as the filter takes it: a language, then subtags.
var languageTag = regexp.MustCompile(`^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$`)

// Voicebook is the voices of an installation: the shipped catalogue, extended (and, voice by
// voice, overridden by id) by the installation's own (--voices-file).
type Voicebook struct {
	voices []CatalogVoice
}

// LoadVoicebook is the shipped catalogue extended by the JSON array of voices in extra (the
// shipped file's format); "" is the shipped catalogue alone.
func LoadVoicebook(extra string) (*Voicebook, error) {
	shipped, err := voiceCatalog()
	if err != nil {
		return nil, err
	}
	all := slices.Clone(shipped)
	if extra == "" {
		return &Voicebook{voices: all}, nil
	}
	b, err := os.ReadFile(extra)
	if err != nil {
		return nil, fmt.Errorf("read the voices file: %w", err)
	}
	var more []CatalogVoice
	if err := json.Unmarshal(b, &more); err != nil {
		return nil, fmt.Errorf("read the voices file %s: %w", extra, err)
	}
	for i, v := range more {
		if v.ID == "" || !languageTag.MatchString(v.Language) || v.Provider == "" {
			return nil, fmt.Errorf("voices file %s, entry %d: a voice needs an id, a BCP-47 language and a provider", extra, i)
		}
		if j := slices.IndexFunc(all, func(c CatalogVoice) bool { return c.ID == v.ID }); j >= 0 {
			all[j] = v
		} else {
			all = append(all, v)
		}
	}
	return &Voicebook{voices: all}, nil
}

// Voices lists the shipped catalogue's voices that speak language (Voicebook.Voices).
func Voices(language string) (VoiceList, error) {
	all, err := voiceCatalog()
	if err != nil {
		return VoiceList{}, err
	}
	return (&Voicebook{voices: all}).Voices(language)
}

// Voices lists the book's voices that speak language: a BCP-47 tag matched as a prefix on
// subtag boundaries, whatever the case (pt matches pt-BR, en-us matches en-US, e matches
// nothing); "" or auto lists every voice. A malformed tag is 400.
func (b *Voicebook) Voices(language string) (VoiceList, error) {
	language = strings.TrimSpace(language)
	if language != "" && !strings.EqualFold(language, LanguageAuto) && !languageTag.MatchString(language) {
		return VoiceList{}, apperror.InvalidFields(apperror.FieldError{Path: "language",
			Message: "must be a BCP-47 language tag such as en, es or pt-BR, or auto"})
	}
	all := b.voices
	out := VoiceList{Items: []CatalogVoice{}, Languages: []string{LanguageAuto}, Total: len(all)}
	for _, v := range all {
		if !slices.Contains(out.Languages, v.Language) {
			out.Languages = append(out.Languages, v.Language)
		}
		if speaks(v.Language, language) {
			out.Items = append(out.Items, v)
		}
	}
	slices.Sort(out.Languages[1:])
	return out, nil
}

// speaks tells whether a voice of tag speaks the language asked for.
func speaks(tag, asked string) bool {
	if asked == "" || strings.EqualFold(asked, LanguageAuto) {
		return true
	}
	tag, asked = strings.ToLower(tag), strings.ToLower(asked)
	return tag == asked || strings.HasPrefix(tag, asked+"-")
}

// VoiceByID is the catalogue's voice id; ok is false when there is none.
func VoiceByID(id string) (CatalogVoice, bool) {
	all, err := voiceCatalog()
	if err != nil {
		return CatalogVoice{}, false
	}
	i := slices.IndexFunc(all, func(v CatalogVoice) bool { return v.ID == id })
	if i < 0 {
		return CatalogVoice{}, false
	}
	return all[i], true
}
