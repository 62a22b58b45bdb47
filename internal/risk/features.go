// Package risk reviews the content of sends (sms, sms_oneway, email, voice) before they go out:
// the features of a message (its links and their domains, link shorteners, words, share of
// capitals, the recipient's country, how many first contacts the project made lately) and the
// installation's rules, CEL expressions over those features, each with its outcome: hold the
// message for an operator, refuse it (RISK_REJECTED) or block it outright (RISK_BLOCKED).
package risk

import (
	"net/url"
	"strings"
	"unicode"

	"golang.org/x/net/publicsuffix"
	"mvdan.cc/xurls/v2"
)

// Shorteners are the link-shortening hosts a message's links are checked against: they hide
// where a link goes, which is how most SMS phishing is sent.
var Shorteners = map[string]bool{
	"bit.ly": true, "bitly.com": true, "tinyurl.com": true, "t.co": true, "goo.gl": true, "ow.ly": true, "is.gd": true,
	"buff.ly": true, "rebrand.ly": true, "cutt.ly": true, "shorturl.at": true, "rb.gy": true, "tiny.cc": true,
	"bl.ink": true, "s.id": true, "t.ly": true, "lnkd.in": true, "v.gd": true, "qr.ae": true, "soo.gd": true,
	"clck.ru": true, "shorte.st": true, "adf.ly": true, "bit.do": true, "tr.im": true, "x.co": true, "u.to": true,
}

// Link is a link found in a message.
type Link struct {
	URL string
	// Host is the link's host in lower case; Domain its registrable domain ("example.co.uk").
	Host, Domain string
	// Shortener says the host shortens links.
	Shortener bool
}

// Message is what a rule sees of a send.
type Message struct {
	Channel, To, Text, Subject string
	// RecipientCountry is the ISO 3166-1 region of a phone recipient ("US"); "" for email.
	RecipientCountry string
	Links            []Link
	// Words are the text's and subject's words in lower case, in order.
	Words []string
	// CapitalsShare is the share of the letters that are capitals (0 without letters).
	CapitalsShare float64
}

// Project is what a rule sees of the sending project.
type Project struct {
	ID, Plan, Verification string
	// NewRecipientsLastHour is how many recipients the project wrote to for the first time in
	// the last hour (its first-contact velocity).
	NewRecipientsLastHour int64
}

var relaxed = xurls.Relaxed()

// Features reads the links, words and capitals of a message's text and subject.
func Features(channel, to, text, subject, country string) Message {
	m := Message{Channel: channel, To: to, Text: text, Subject: subject, RecipientCountry: country}
	body := subject + "\n" + text
	for _, raw := range relaxed.FindAllString(body, -1) {
		if strings.Contains(raw, "@") && !strings.Contains(raw, "/") {
			continue // an email address, not a link
		}
		u := raw
		if !strings.Contains(u, "://") {
			u = "http://" + u
		}
		parsed, err := url.Parse(u)
		if err != nil || parsed.Hostname() == "" {
			continue
		}
		host := strings.ToLower(strings.TrimSuffix(parsed.Hostname(), "."))
		domain, err := publicsuffix.EffectiveTLDPlusOne(host)
		if err != nil {
			domain = host
		}
		m.Links = append(m.Links, Link{URL: raw, Host: host, Domain: domain, Shortener: Shorteners[host] || Shorteners[domain]})
	}
	letters, capitals := 0, 0
	for _, r := range body {
		if unicode.IsLetter(r) {
			letters++
			if unicode.IsUpper(r) {
				capitals++
			}
		}
	}
	if letters > 0 {
		m.CapitalsShare = float64(capitals) / float64(letters)
	}
	m.Words = strings.FieldsFunc(strings.ToLower(body), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '\''
	})
	return m
}
