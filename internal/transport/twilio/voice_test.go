package twilio_test

import (
	"testing"

	"github.com/switchboard-io/switchboard/internal/transport/twilio"
)

func TestVoiceLanguage(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"+14155550100": "en-US", "+447700900123": "en-GB", "+61412345678": "en-AU", "+33612345678": "fr-FR",
		"+4915112345678": "de-DE", "+34612345678": "es-ES", "+5215512345678": "es-MX", "+5511912345678": "pt-BR",
		"+351912345678": "pt-PT", "+393123456789": "it-IT", "+819012345678": "ja-JP", "+821012345678": "ko-KR",
		"+8613812345678": "zh-CN", "+919812345678": "en-IN", "+31612345678": "nl-NL", "+46701234567": "sv-SE",
		"+4791234567": "nb-NO", "+4520123456": "da-DK", "+48512345678": "pl-PL", "+79161234567": "ru-RU",
		"+905321234567": "tr-TR",
		// No entry: several languages, or none in the table.
		"+32470123456": "", "+41791234567": "", "+998901234567": "", "": "", "14155550100": "", "+": "",
	}
	for to, want := range cases {
		got, ok := twilio.VoiceLanguage(to)
		if got != want || ok != (want != "") {
			t.Errorf("VoiceLanguage(%q) = %q, %v; want %q", to, got, ok, want)
		}
	}
}

func TestMMSAllowed(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"+14155550100": true, "+16045550100": true,
		"+447700900123": false, "+1415555010": false, "+141555501000": false, "+1415555010a": false, "14155550100": false, "": false,
	}
	for to, want := range cases {
		if got := twilio.MMSAllowed(to); got != want {
			t.Errorf("MMSAllowed(%q) = %v, want %v", to, got, want)
		}
	}
}

func TestSayTwiML(t *testing.T) {
	t.Parallel()
	got := twilio.SayTwiML(`5 < 6 & "x"`, `en-US" voice="man`)
	want := `<Response><Say language="en-US&#34; voice=&#34;man">5 &lt; 6 &amp; &#34;x&#34;</Say></Response>`
	if got != want {
		t.Fatalf("SayTwiML = %s, want %s", got, want)
	}
}
