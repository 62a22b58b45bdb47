package agent

import (
	_ "embed"
	"encoding/json"
	"fmt"
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

// Voices lists the catalogue's voices that speak language: a BCP-47 tag matched as a prefix on
// subtag boundaries, whatever the case (pt matches pt-BR, en-us matches en-US, e matches
// nothing); "" or auto lists every voice. A malformed tag is 400.
func Voices(language string) (VoiceList, error) {
	language = strings.TrimSpace(language)
	if language != "" && !strings.EqualFold(language, LanguageAuto) && !languageTag.MatchString(language) {
		return VoiceList{}, apperror.InvalidFields(apperror.FieldError{Path: "language",
			Message: "must be a BCP-47 language tag such as en, es or pt-BR, or auto"})
	}
	all, err := voiceCatalog()
	if err != nil {
		return VoiceList{}, err
	}
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
