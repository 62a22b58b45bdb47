package call

import (
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// DefaultGreeting opens a call whose agent and request name none.
const DefaultGreeting = "Hello! How can I help you?"

// Apology is what the caller hears when the agent cannot answer (a model that failed or timed
// out) before the call ends.
const Apology = "I'm sorry, I can't answer right now. Please call again later. Goodbye."

// Speech is how a call sounds: what the provider's speech synthesis and recognition are told.
type Speech struct {
	Greeting string
	// Language is a BCP-47 tag; "" leaves it to the provider (auto: follow the caller).
	Language                 string
	Voice, TTSProvider       string
	STTProvider, STTModel    string
	Interruptible            bool
	VoicemailAction, Message string
}

// SpeechOf is the speech of a call held by a: language and greeting override the agent's
// (a greeting by language first, then its greeting). A custom voice is kept whatever the
// language (the client's contract).
func SpeechOf(a *v1alpha1.Agent, language, greeting string) Speech {
	v := a.Spec.Voice
	if v == nil {
		v = &v1alpha1.AgentVoice{}
	}
	sp := Speech{Language: v.Language, Voice: v.TTSVoiceID, TTSProvider: v.TTSProvider, STTProvider: v.STTProvider,
		STTModel: v.STTModel, Interruptible: v.Interruptible == nil || *v.Interruptible,
		VoicemailAction: v.VoicemailAction, Message: v.VoicemailMessage}
	if language != "" {
		sp.Language = language
	}
	if strings.EqualFold(sp.Language, "auto") {
		sp.Language = ""
	}
	switch {
	case greeting != "":
		sp.Greeting = greeting
	case byLanguage(v.Greetings, sp.Language) != "":
		sp.Greeting = byLanguage(v.Greetings, sp.Language)
	case v.Greeting != "":
		sp.Greeting = v.Greeting
	default:
		sp.Greeting = DefaultGreeting
	}
	return sp
}

// byLanguage is the greeting for language: its own tag, else its primary language's (es for es-MX).
func byLanguage(greetings map[string]string, language string) string {
	if language == "" || len(greetings) == 0 {
		return ""
	}
	for k, g := range greetings {
		if strings.EqualFold(k, language) {
			return g
		}
	}
	primary, _, _ := strings.Cut(language, "-")
	for k, g := range greetings {
		if strings.EqualFold(k, primary) {
			return g
		}
	}
	return ""
}
