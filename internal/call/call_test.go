package call

import (
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{"queued": StatusRinging, "initiated": StatusRinging, "ringing": StatusRinging,
		"in-progress": StatusInProgress, "completed": StatusCompleted, "busy": StatusBusy, "no-answer": StatusNoAnswer,
		"failed": StatusFailed, "canceled": StatusCanceled, "paused": ""} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSpeechOf(t *testing.T) {
	no := false
	a := &v1alpha1.Agent{Spec: v1alpha1.AgentSpec{Voice: &v1alpha1.AgentVoice{Enabled: true, Greeting: "Hello", Language: "en-US",
		Greetings: map[string]string{"es": "Hola", "pt-BR": "Olá"}, Interruptible: &no, TTSVoiceID: "v1"}}}
	for _, c := range []struct{ language, greeting, wantLang, wantGreeting string }{
		{"", "", "en-US", "Hello"},
		{"es-MX", "", "es-MX", "Hola"},
		{"pt-br", "", "pt-br", "Olá"},
		{"auto", "", "", "Hello"},
		{"es", "Buenas", "es", "Buenas"},
	} {
		sp := SpeechOf(a, c.language, c.greeting)
		if sp.Language != c.wantLang || sp.Greeting != c.wantGreeting || sp.Interruptible || sp.Voice != "v1" {
			t.Errorf("SpeechOf(%q, %q) = %+v", c.language, c.greeting, sp)
		}
	}
	if sp := SpeechOf(&v1alpha1.Agent{}, "", ""); sp.Greeting != DefaultGreeting || !sp.Interruptible {
		t.Errorf("no voice settings: %+v", sp)
	}
}

func TestEndpoints(t *testing.T) {
	e := EndpointsOf("https://sb.example.com/", "twilio", "acme", "main", "call_1")
	if e.Relay != "wss://sb.example.com/callbacks/twilio/acme/main/relay?call=call_1" ||
		e.RelayEnded != "https://sb.example.com/callbacks/twilio/acme/main/relay-ended?call=call_1" ||
		e.Voice != "https://sb.example.com/callbacks/twilio/acme/main/voice" {
		t.Errorf("endpoints %+v", e)
	}
	twiml := twilio.ConversationRelayTwiML(RelayOptions(e, Speech{Greeting: `Say "hi" & <wave>`, Interruptible: true}, true))
	if !strings.Contains(twiml, `welcomeGreeting="Say &#34;hi&#34; &amp; &lt;wave&gt;"`) || !strings.Contains(twiml, `interruptible="any"`) ||
		!strings.Contains(twiml, `url="wss://sb.example.com/callbacks/twilio/acme/main/relay?call=call_1"`) {
		t.Errorf("twiml %s", twiml)
	}
	if resumed := twilio.ConversationRelayTwiML(RelayOptions(e, Speech{Greeting: "hi"}, false)); strings.Contains(resumed, "welcomeGreeting") {
		t.Errorf("a takeover greets again: %s", resumed)
	}
}

func TestSandboxScript(t *testing.T) {
	for to, want := range map[string]int{"+15005550107": 7, "+15005550100": 0, "+15005550199": 99, "+14155550100": SandboxDefaultTurns,
		"+150055501x1": SandboxDefaultTurns} {
		if n, _ := sandboxScript(to); n != want {
			t.Errorf("sandboxScript(%s) = %d, want %d", to, n, want)
		}
	}
	if n, hangs := sandboxScript(SandboxHangsUp); n != 1 || !hangs {
		t.Errorf("the number that hangs up: %d %v", n, hangs)
	}
}

func TestInputValidate(t *testing.T) {
	s := func(v string) *string { return &v }
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		in   Input
		path string
	}{
		{Input{To: "+14155550100"}, ""},
		{Input{To: ""}, "to"},
		{Input{To: "+0123"}, "to"},
		{Input{To: "+14155550100", Language: s("e s")}, "language"},
		{Input{To: "+14155550100", Language: s("auto")}, ""},
		{Input{To: "+14155550100", MaxDurationMinutes: f(241)}, "maxDurationMinutes"},
		{Input{To: "+14155550100", MaxDurationMinutes: f(240)}, ""},
		{Input{To: "+14155550100", Greeting: s(strings.Repeat("é", MaxGreeting))}, ""},
		{Input{To: "+14155550100", Metadata: map[string]string{"": "x"}}, "metadata."},
	} {
		err := c.in.validate()
		if (err == nil) != (c.path == "") || (err != nil && !strings.Contains(err.Error(), c.path)) {
			t.Errorf("validate(%+v) = %v, want a problem at %q", c.in, err, c.path)
		}
	}
}
