package agent

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apperror"
	"github.com/switchboard-io/switchboard/internal/optional"
)

// Input is an agent's create or update body (the client's AgentCreateParams and
// AgentUpdateParams): a field left out changes nothing; null clears maxTokens and temperature.
type Input struct {
	Name                   optional.Value[string]   `json:"name"`
	Provider               optional.Value[string]   `json:"provider"`
	Model                  optional.Value[string]   `json:"model"`
	SystemPrompt           optional.Value[string]   `json:"systemPrompt"`
	APIKey                 optional.Value[string]   `json:"apiKey"`
	Enabled                optional.Value[bool]     `json:"enabled"`
	ContextWindowMessages  optional.Value[int64]    `json:"contextWindowMessages"`
	IncludeContactMetadata optional.Value[bool]     `json:"includeContactMetadata"`
	MaxTokens              optional.Value[int64]    `json:"maxTokens"`
	Temperature            optional.Value[float64]  `json:"temperature"`
	TriggerOnChannels      optional.Value[[]string] `json:"triggerOnChannels"`
	TriggerOnMessageTypes  optional.Value[[]string] `json:"triggerOnMessageTypes"`
	Voice                  optional.Value[Voice]    `json:"voice"`
}

// Voice is the client's VoiceConfig.
type Voice struct {
	Enabled                *bool             `json:"enabled"`
	Greeting               *string           `json:"greeting,omitempty"`
	Greetings              map[string]string `json:"greetings,omitempty"`
	Interruptible          *bool             `json:"interruptible,omitempty"`
	Language               *string           `json:"language,omitempty"`
	MaxCallDurationMinutes *int32            `json:"maxCallDurationMinutes,omitempty"`
	MaxIdleSeconds         *int32            `json:"maxIdleSeconds,omitempty"`
	Model                  *string           `json:"model,omitempty"`
	RecordCalls            *bool             `json:"recordCalls,omitempty"`
	STTModel               *string           `json:"sttModel,omitempty"`
	STTProvider            *string           `json:"sttProvider,omitempty"`
	TTSProvider            *string           `json:"ttsProvider,omitempty"`
	TTSVoiceID             *string           `json:"ttsVoiceId,omitempty"`
	TransferPhoneNumber    *string           `json:"transferPhoneNumber,omitempty"`
	VoicemailAction        *string           `json:"voicemailAction,omitempty"`
	VoicemailMessage       *string           `json:"voicemailMessage,omitempty"`
	VoiceSpeed             *float64          `json:"voiceSpeed,omitempty"`
}

// Providers are the values of provider.
var Providers = []string{"openai", "anthropic", "google", "mistral", "zavu"}

func given(v optional.Value[string]) *string {
	if !v.Set || v.Null {
		return nil
	}
	return &v.Value
}

// apply sets the fields in gives on a; it returns every field that cannot be.
func (in Input) apply(a *v1alpha1.Agent) []apperror.FieldError {
	var errs []apperror.FieldError
	bad := func(path, msg string) { errs = append(errs, apperror.FieldError{Path: path, Message: msg}) }
	text := func(path string, v optional.Value[string], min, max int, set func(string)) {
		switch {
		case !v.Set:
		case v.Null:
			bad(path, "must not be null")
		case len([]rune(strings.TrimSpace(v.Value))) < min:
			bad(path, "is required")
		case len([]rune(v.Value)) > max:
			bad(path, fmt.Sprintf("must be at most %d characters", max))
		default:
			set(v.Value)
		}
	}
	text("name", in.Name, 1, 100, func(v string) { a.Spec.DisplayName = strings.TrimSpace(v) })
	text("model", in.Model, 1, 200, func(v string) { a.Spec.Model = strings.TrimSpace(v) })
	text("systemPrompt", in.SystemPrompt, 1, 32000, func(v string) { a.Spec.SystemPrompt = v })
	if in.Provider.Set {
		switch {
		case in.Provider.Null || !slices.Contains(Providers, in.Provider.Value):
			bad("provider", "must be one of "+strings.Join(Providers, ", "))
		default:
			if string(a.Spec.Provider) != in.Provider.Value {
				// A key of one provider is no key of another: a new provider needs its own.
				a.Spec.ProviderRef, a.Spec.APIKeyRef = "", nil
			}
			a.Spec.Provider = v1alpha1.ModelProvider(in.Provider.Value)
		}
	}
	if in.APIKey.Set {
		switch {
		case in.APIKey.Null || in.APIKey.Value == "":
			if HasOwnAPIKey(a) {
				a.Spec.APIKeyRef = nil
			}
		case len(in.APIKey.Value) > 4096:
			bad("apiKey", "must be at most 4096 characters")
		default:
			a.Spec.APIKeyRef = &v1alpha1.SecretKeyRef{Name: a.OwnSecretName(), Key: v1alpha1.AgentKeyAPIKey}
			a.Spec.ProviderRef = ""
		}
	}
	if in.Enabled.Set && !in.Enabled.Null {
		a.Spec.Enabled = in.Enabled.Value
	}
	if in.IncludeContactMetadata.Set && !in.IncludeContactMetadata.Null {
		a.Spec.IncludeContactMetadata = in.IncludeContactMetadata.Value
	}
	bounded := func(path string, v optional.Value[int64], min, max int64, nullable bool, set func(*int32)) {
		switch {
		case !v.Set:
		case v.Null && nullable:
			set(nil)
		case v.Null:
			bad(path, "must not be null")
		case v.Value < min || v.Value > max:
			bad(path, fmt.Sprintf("must be between %d and %d", min, max))
		default:
			n := int32(v.Value)
			set(&n)
		}
	}
	bounded("contextWindowMessages", in.ContextWindowMessages, 0, 100, false, func(n *int32) { a.Spec.ContextWindowMessages = n })
	bounded("maxTokens", in.MaxTokens, 1, 32000, true, func(n *int32) { a.Spec.MaxTokens = n })
	if in.Temperature.Set {
		switch t := in.Temperature.Value; {
		case in.Temperature.Null:
			a.Spec.Temperature = ""
		case t < 0 || t > 2 || math.IsNaN(t):
			bad("temperature", "must be between 0 and 2")
		default:
			a.Spec.Temperature = strconv.FormatFloat(math.Round(t*1000)/1000, 'f', -1, 64)
		}
	}
	if in.TriggerOnChannels.Set {
		var chans []v1alpha1.Channel
		for i, c := range in.TriggerOnChannels.Value {
			if !slices.Contains(v1alpha1.AllChannels, v1alpha1.Channel(c)) {
				bad(fmt.Sprintf("triggerOnChannels[%d]", i), "must be a channel: "+channelList())
				continue
			}
			if !slices.Contains(chans, v1alpha1.Channel(c)) {
				chans = append(chans, v1alpha1.Channel(c))
			}
		}
		if len(chans) > 10 {
			bad("triggerOnChannels", "must have at most 10 items")
		}
		a.Spec.TriggerOnChannels = chans
	}
	if in.TriggerOnMessageTypes.Set {
		var types []string
		for i, t := range in.TriggerOnMessageTypes.Value {
			if !slices.Contains(MessageTypes, t) {
				bad(fmt.Sprintf("triggerOnMessageTypes[%d]", i), "must be a message type: "+strings.Join(MessageTypes, ", "))
				continue
			}
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
		a.Spec.TriggerOnMessageTypes = types
	}
	if in.Voice.Set {
		errs = append(errs, in.Voice.Value.apply(a, in.Voice.Null)...)
	}
	return errs
}

// MessageTypes are the inbound message types an agent can be triggered by.
var MessageTypes = []string{"text", "image", "video", "audio", "document", "location", "contact", "sticker", "reaction",
	"interactive", "button"}

func channelList() string {
	names := make([]string, len(v1alpha1.AllChannels))
	for i, c := range v1alpha1.AllChannels {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// apply merges the voice settings given into a's (a patch: the keys left out stay).
func (v Voice) apply(a *v1alpha1.Agent, null bool) []apperror.FieldError {
	if null {
		a.Spec.Voice = nil
		return nil
	}
	var errs []apperror.FieldError
	if v.Enabled == nil {
		errs = append(errs, apperror.FieldError{Path: "voice.enabled", Message: "is required"})
		return errs
	}
	out := a.Spec.Voice
	if out == nil {
		out = &v1alpha1.AgentVoice{}
	}
	out.Enabled = *v.Enabled
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&out.Greeting, v.Greeting)
	set(&out.Language, v.Language)
	set(&out.Model, v.Model)
	set(&out.STTModel, v.STTModel)
	set(&out.STTProvider, v.STTProvider)
	set(&out.TTSProvider, v.TTSProvider)
	set(&out.TTSVoiceID, v.TTSVoiceID)
	set(&out.TransferPhoneNumber, v.TransferPhoneNumber)
	set(&out.VoicemailAction, v.VoicemailAction)
	set(&out.VoicemailMessage, v.VoicemailMessage)
	if v.Greetings != nil {
		out.Greetings = v.Greetings
	}
	if v.Interruptible != nil {
		out.Interruptible = v.Interruptible
	}
	if v.RecordCalls != nil {
		out.RecordCalls = *v.RecordCalls
	}
	if v.MaxCallDurationMinutes != nil {
		out.MaxCallDurationMinutes = v.MaxCallDurationMinutes
	}
	if v.MaxIdleSeconds != nil {
		out.MaxIdleSeconds = v.MaxIdleSeconds
	}
	if v.VoiceSpeed != nil {
		if *v.VoiceSpeed < 0.5 || *v.VoiceSpeed > 2 {
			errs = append(errs, apperror.FieldError{Path: "voice.voiceSpeed", Message: "must be between 0.5 and 2"})
		}
		out.VoiceSpeed = strconv.FormatFloat(math.Round(*v.VoiceSpeed*1000)/1000, 'f', -1, 64)
		if !strings.Contains(out.VoiceSpeed, ".") {
			out.VoiceSpeed += ".0"
		}
	}
	a.Spec.Voice = out
	return errs
}
