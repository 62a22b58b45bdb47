package risk_test

import (
	"strings"
	"testing"

	"github.com/switchboard-io/switchboard/internal/risk"
)

func TestFeatures(t *testing.T) {
	t.Parallel()
	m := risk.Features("sms", "+15005550100", "URGENT: your parcel is held, pay at bit.ly/3xYz or https://Parcel-Help.co.uk/pay?id=1. Mail help@acme.example", "", "US")
	if len(m.Links) != 2 {
		t.Fatalf("links = %+v", m.Links)
	}
	if l := m.Links[0]; l.Host != "bit.ly" || !l.Shortener || l.Domain != "bit.ly" {
		t.Errorf("first link = %+v", l)
	}
	if l := m.Links[1]; l.Host != "parcel-help.co.uk" || l.Domain != "parcel-help.co.uk" || l.Shortener {
		t.Errorf("second link = %+v", l)
	}
	if m.Words[0] != "urgent" || m.CapitalsShare <= 0 || m.CapitalsShare >= 0.5 {
		t.Errorf("words %v, capitals %v", m.Words[:3], m.CapitalsShare)
	}
	if shout := risk.Features("sms", "", "WIN A FREE PRIZE NOW", "", ""); shout.CapitalsShare != 1 {
		t.Errorf("capitals of a shout = %v", shout.CapitalsShare)
	}
}

func TestReviewOutcomes(t *testing.T) {
	t.Parallel()
	rules, err := risk.Compile([]risk.Rule{
		{Name: "shortened", Expression: `message.shortenedLinks > 0`, Outcome: risk.Hold, Reason: "a shortened link hides where it goes"},
		{Name: "gambling", Expression: `message.words.exists(w, w in lists.gambling)`, Outcome: risk.Refuse},
		{Name: "blocked-domain", Expression: `message.domains.exists(d, d in lists.blockedDomains)`, Outcome: risk.Block, Reason: "a known phishing domain"},
		{Name: "shouting", Expression: `message.capitalsShare > 0.8 && message.length > 10`, Outcome: risk.Hold},
		{Name: "fast first contacts", Expression: `project.newRecipientsLastHour > 100 && message.recipientCountry != "US"`, Outcome: risk.Hold},
	}, map[string][]string{"gambling": {"casino", "jackpot"}, "blockedDomains": {"evil.example"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text    string
		p       risk.Project
		outcome risk.Outcome
		rule    string
	}{
		{"Your code is 1234", risk.Project{}, risk.Approve, ""},
		{"Track it at bit.ly/abc", risk.Project{}, risk.Hold, "shortened"},
		{"Win the JACKPOT at bit.ly/abc", risk.Project{}, risk.Refuse, "gambling"}, // the most severe match
		{"Casino night at https://evil.example/x and bit.ly/y", risk.Project{}, risk.Block, "blocked-domain"},
		{"WIN A FREE PRIZE NOW", risk.Project{}, risk.Hold, "shouting"},
		{"Hello", risk.Project{NewRecipientsLastHour: 500}, risk.Hold, "fast first contacts"},
	} {
		d := rules.Review(risk.Features("sms", "+447700900123", c.text, "", "GB"), c.p)
		if d.Outcome != c.outcome || d.Rule != c.rule || (d.Outcome != risk.Approve && d.Reason == "") {
			t.Errorf("%q: %+v, want %s by %q", c.text, d, c.outcome, c.rule)
		}
	}
}

// TestCompileRefuses: a rule that does not compile, is not a boolean or has no outcome is
// refused with its name and CEL's reason.
func TestCompileRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rule risk.Rule
		want string
	}{
		{risk.Rule{Name: "syntax", Expression: `message.words.exists(w,`, Outcome: risk.Hold}, "rule syntax: ERROR"},
		{risk.Rule{Name: "unknown", Expression: `sender.name == "x"`, Outcome: risk.Hold}, "undeclared reference to 'sender'"},
		{risk.Rule{Name: "not-bool", Expression: `message.length + 1`, Outcome: risk.Hold}, ""},
		{risk.Rule{Name: "no-outcome", Expression: `true`, Outcome: "approve"}, "outcome must be hold, refuse or block"},
	} {
		_, err := risk.Compile([]risk.Rule{c.rule}, nil)
		if err == nil || !strings.Contains(err.Error(), c.rule.Name) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.rule.Name, err)
		}
	}
}

// TestUnreadableHolds: a rule that cannot be evaluated on a message holds it.
func TestUnreadableHolds(t *testing.T) {
	t.Parallel()
	rules, err := risk.Compile([]risk.Rule{{Name: "typo", Expression: `message.nosuchfield == 1`, Outcome: risk.Block}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := rules.Review(risk.Features("sms", "", "hi", "", ""), risk.Project{}); d.Outcome != risk.Hold || !strings.Contains(d.Reason, "typo") {
		t.Fatalf("decision = %+v", d)
	}
}
