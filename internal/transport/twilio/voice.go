package twilio

import (
	"context"
	"encoding/xml"
	"strings"
	"unicode/utf8"

	openapi "github.com/twilio/twilio-go/rest/api/v2010"

	"github.com/switchboard-io/switchboard/internal/transport"
)

// DefaultVoiceLanguage is what a voice message is spoken in when neither the message nor the
// recipient's country says.
const DefaultVoiceLanguage = "en-US"

// maxTwiML is the length of TwiML the Calls resource takes inline (its Twiml parameter).
const maxTwiML = 4000

// callEvents are the call progress events a voice message's status callback is sent for.
var callEvents = []string{"initiated", "ringing", "answered", "completed"}

// voiceLanguages maps country calling codes to a language <Say> speaks there. Calling codes
// are a prefix code (no code is the start of another), so at most one entry matches a number.
// A country with several languages and no clear default (+32, +41) is left out: the caller
// names the language, or refuses the message.
var voiceLanguages = map[string]string{
	"1":   "en-US",
	"7":   "ru-RU",
	"31":  "nl-NL",
	"33":  "fr-FR",
	"34":  "es-ES",
	"39":  "it-IT",
	"44":  "en-GB",
	"45":  "da-DK",
	"46":  "sv-SE",
	"47":  "nb-NO",
	"48":  "pl-PL",
	"49":  "de-DE",
	"52":  "es-MX",
	"55":  "pt-BR",
	"61":  "en-AU",
	"81":  "ja-JP",
	"82":  "ko-KR",
	"86":  "zh-CN",
	"90":  "tr-TR",
	"91":  "en-IN",
	"351": "pt-PT",
	"358": "fi-FI",
	"852": "zh-HK",
	"886": "zh-TW",
}

// VoiceLanguage is the language a voice message to the E.164 number to is spoken in when the
// message names none, from the number's country calling code; false when the table has no
// entry (Send then speaks DefaultVoiceLanguage, so a caller that cares refuses the message when
// it is accepted).
func VoiceLanguage(to string) (string, bool) {
	if len(to) < 2 || to[0] != '+' {
		return "", false
	}
	for n := 1; n <= 3 && n < len(to); n++ {
		if lang, ok := voiceLanguages[to[1:1+n]]; ok {
			return lang, true
		}
	}
	return "", false
}

// SayTwiML is the TwiML of a voice message: text read out in language, escaped for XML.
//
// twilio-go's twiml package would build it, but it needs github.com/beevik/etree, which is not
// in this module's go.sum; encoding/xml escapes the same way.
func SayTwiML(text, language string) string {
	var b strings.Builder
	b.WriteString(`<Response><Say language="`)
	_ = xml.EscapeText(&b, []byte(language))
	b.WriteString(`">`)
	_ = xml.EscapeText(&b, []byte(text))
	b.WriteString(`</Say></Response>`)
	return b.String()
}

func (t *Transport) call(ctx context.Context, m transport.Outbound) (transport.Result, error) {
	if strings.TrimSpace(m.Text) == "" {
		return transport.Result{}, &transport.Failure{Code: CodeVoiceTextRequired,
			Message: "A voice message needs text to read out."}
	}
	lang := m.VoiceLanguage
	if lang == "" {
		if l, ok := VoiceLanguage(m.To); ok {
			lang = l
		} else {
			lang = DefaultVoiceLanguage
		}
	}
	twiml := SayTwiML(m.Text, lang)
	if utf8.RuneCountInString(twiml) > maxTwiML {
		return transport.Result{}, &transport.Failure{Code: CodeVoiceTextTooLong,
			Message: "The text is too long to be read out in one call (Twilio takes 4,000 characters of TwiML)."}
	}
	p := &openapi.CreateCallParams{}
	p.SetTo(m.To)
	p.SetFrom(m.From)
	p.SetTwiml(twiml)
	if m.StatusCallback != "" {
		p.SetStatusCallback(m.StatusCallback)
		p.SetStatusCallbackEvent(callEvents)
	}
	api, ex, err := t.api(ctx)
	if err != nil {
		return transport.Result{}, err
	}
	c, err := api.CreateCall(p)
	if err != nil {
		return transport.Result{}, t.classify(ctx, "create call", err, ex, true, m.Text)
	}
	if c == nil || c.Sid == nil || *c.Sid == "" {
		return transport.Result{}, acceptedUnreadable("create call")
	}
	return transport.Result{ProviderMessageID: *c.Sid}, nil
}
