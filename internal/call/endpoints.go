package call

import (
	"net/url"
	"strings"

	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

// Endpoints are where a provider reaches Switchboard about one call, under the installation's
// public URL: /callbacks/<provider>/<namespace>/<name>/… with the call's id in the query, which
// the provider signs with the rest of the URL.
type Endpoints struct {
	// Relay is the relay's WebSocket (wss:// for an https public URL).
	Relay string
	// RelayEnded is the <Connect> action: the relay's session ended; what next.
	RelayEnded string
	// Status takes the call's status callbacks, AMD its answering machine detection.
	Status, AMD string
	// Voice answers the provider's numbers' incoming calls (no call yet: no query).
	Voice string
}

// EndpointsOf are the endpoints of call id through the Provider namespace/name of type kind.
func EndpointsOf(publicURL, kind, namespace, name, id string) Endpoints {
	base := strings.TrimRight(publicURL, "/") + "/callbacks/" + kind + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(name) + "/"
	query := "?" + url.Values{"call": {id}}.Encode()
	ws := base
	switch {
	case strings.HasPrefix(ws, "https://"):
		ws = "wss://" + strings.TrimPrefix(ws, "https://")
	case strings.HasPrefix(ws, "http://"):
		ws = "ws://" + strings.TrimPrefix(ws, "http://")
	}
	return Endpoints{Relay: ws + "relay" + query, RelayEnded: base + "relay-ended" + query, Status: base + "call-status" + query,
		AMD: base + "call-amd" + query, Voice: base + "voice"}
}

// RelayOptions is the <ConversationRelay> of a call: its greeting read out when greet (not when
// a new session takes a call over), its language, voice and speech recognition.
func RelayOptions(e Endpoints, sp Speech, greet bool) twilio.RelayOptions {
	o := twilio.RelayOptions{URL: e.Relay, Action: e.RelayEnded, Language: sp.Language, Voice: sp.Voice, TTSProvider: sp.TTSProvider,
		TranscriptionProvider: sp.STTProvider, SpeechModel: sp.STTModel, Interruptible: "none", DTMFDetection: true}
	if sp.Interruptible {
		o.Interruptible = "any"
	}
	if greet {
		o.WelcomeGreeting = sp.Greeting
	}
	return o
}
