package twilio

import (
	"encoding/xml"
	"sort"
	"strconv"
	"strings"
)

// ConversationRelay (https://www.twilio.com/docs/voice/conversationrelay) holds a call's speech:
// Twilio recognises what the caller says and reads out what the application answers, and the
// two talk over one WebSocket per call, opened by Twilio to the URL the <ConversationRelay>
// noun names, its handshake signed with X-Twilio-Signature over that URL (no parameters).

// The types of the messages Twilio sends on the relay's WebSocket.
const (
	RelaySetup     = "setup"
	RelayPrompt    = "prompt"
	RelayDTMF      = "dtmf"
	RelayInterrupt = "interrupt"
	RelayError     = "error"
)

// The types of the messages the application sends.
const (
	RelayText = "text"
	RelayEnd  = "end"
)

// RelayMessage is any message Twilio sends on the relay (its Type says which fields are set).
type RelayMessage struct {
	Type string `json:"type"`

	// setup
	SessionID        string            `json:"sessionId,omitempty"`
	AccountSID       string            `json:"accountSid,omitempty"`
	ParentCallSID    string            `json:"parentCallSid,omitempty"`
	CallSID          string            `json:"callSid,omitempty"`
	From             string            `json:"from,omitempty"`
	To               string            `json:"to,omitempty"`
	ForwardedFrom    string            `json:"forwardedFrom,omitempty"`
	CallType         string            `json:"callType,omitempty"`
	CallerName       string            `json:"callerName,omitempty"`
	Direction        string            `json:"direction,omitempty"`
	CallStatus       string            `json:"callStatus,omitempty"`
	CustomParameters map[string]string `json:"customParameters,omitempty"`

	// prompt: what the caller said (Last: the utterance is complete), in Lang.
	VoicePrompt string `json:"voicePrompt,omitempty"`
	Lang        string `json:"lang,omitempty"`
	Last        bool   `json:"last,omitempty"`

	// dtmf
	Digit string `json:"digit,omitempty"`

	// interrupt: what of the answer the caller heard before speaking over it.
	UtteranceUntilInterrupt  string `json:"utteranceUntilInterrupt,omitempty"`
	DurationUntilInterruptMs int64  `json:"durationUntilInterruptMs,omitempty"`

	// error
	Description string `json:"description,omitempty"`
}

// TextToken is a piece of the answer to read out; Last closes the answer (the talk cycle).
type TextToken struct {
	Type          string `json:"type"` // RelayText
	Token         string `json:"token"`
	Last          bool   `json:"last"`
	Interruptible *bool  `json:"interruptible,omitempty"`
	Lang          string `json:"lang,omitempty"`
}

// EndSession ends the relay: Twilio posts the <Connect> action URL with HandoffData, and the
// call goes on with the TwiML that answers it.
type EndSession struct {
	Type        string `json:"type"` // RelayEnd
	HandoffData string `json:"handoffData,omitempty"`
}

// RelayOptions are the attributes of a <ConversationRelay> noun and of its <Connect>.
type RelayOptions struct {
	// URL is the WebSocket (wss://, ws:// only for loopback tests) Twilio opens.
	URL string
	// Action is where Twilio posts when the session ends (the <Connect> action).
	Action string
	// WelcomeGreeting is read out as soon as the call connects.
	WelcomeGreeting string
	// Language is the language of speech recognition and synthesis (BCP-47); "" is Twilio's.
	Language string
	// Voice and TTSProvider choose the voice (GET /v1/agents/voices).
	Voice, TTSProvider string
	// TranscriptionProvider and SpeechModel choose the speech recognition.
	TranscriptionProvider, SpeechModel string
	// Interruptible says whether the caller's speech cuts the answer short ("any", "none").
	Interruptible string
	// DTMFDetection sends dtmf messages for keys pressed.
	DTMFDetection bool
	// Parameters reach the WebSocket in setup's customParameters.
	Parameters map[string]string
}

// ConversationRelayTwiML is the TwiML that hands a call to the relay of o.
func ConversationRelayTwiML(o RelayOptions) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><Response><Connect`)
	attr(&b, "action", o.Action)
	b.WriteString(`><ConversationRelay`)
	attr(&b, "url", o.URL)
	attr(&b, "welcomeGreeting", o.WelcomeGreeting)
	attr(&b, "language", o.Language)
	attr(&b, "voice", o.Voice)
	attr(&b, "ttsProvider", o.TTSProvider)
	attr(&b, "transcriptionProvider", o.TranscriptionProvider)
	attr(&b, "speechModel", o.SpeechModel)
	attr(&b, "interruptible", o.Interruptible)
	if o.DTMFDetection {
		attr(&b, "dtmfDetection", strconv.FormatBool(true))
	}
	if len(o.Parameters) == 0 {
		b.WriteString(`/></Connect></Response>`)
		return b.String()
	}
	b.WriteString(`>`)
	keys := make([]string, 0, len(o.Parameters))
	for k := range o.Parameters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(`<Parameter`)
		attr(&b, "name", k)
		attr(&b, "value", o.Parameters[k])
		b.WriteString(`/>`)
	}
	b.WriteString(`</ConversationRelay></Connect></Response>`)
	return b.String()
}

// HangupTwiML ends a call; with text, after reading it out in language.
func HangupTwiML(text, language string) string {
	if text == "" {
		return `<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>`
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><Response><Say`)
	attr(&b, "language", language)
	b.WriteString(`>`)
	_ = xml.EscapeText(&b, []byte(text))
	b.WriteString(`</Say><Hangup/></Response>`)
	return b.String()
}

// DialTwiML transfers a call to number (a human), from callerID.
func DialTwiML(number, callerID string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><Response><Dial`)
	attr(&b, "callerId", callerID)
	b.WriteString(`>`)
	_ = xml.EscapeText(&b, []byte(number))
	b.WriteString(`</Dial></Response>`)
	return b.String()
}

// RejectTwiML refuses an incoming call without answering it (no charge at Twilio).
func RejectTwiML(reason string) string {
	if reason == "" {
		reason = "rejected"
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><Response><Reject`)
	attr(&b, "reason", reason)
	b.WriteString(`/></Response>`)
	return b.String()
}

// attr writes name="value" escaped for XML, nothing when value is empty.
func attr(b *strings.Builder, name, value string) {
	if value == "" {
		return
	}
	b.WriteString(" " + name + `="`)
	_ = xml.EscapeText(b, []byte(value))
	b.WriteString(`"`)
}
