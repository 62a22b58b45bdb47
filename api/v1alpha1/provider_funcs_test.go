package v1alpha1

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestProviderTypeChannels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ  ProviderType
		want []Channel
	}{
		{ProviderTwilio, []Channel{ChannelSMS, ChannelSMSOneway, ChannelVoice}},
		{ProviderTelegram, []Channel{ChannelTelegram}},
		{ProviderMeta, []Channel{ChannelWhatsApp, ChannelInstagram, ChannelMessenger}},
		{ProviderSMTP, []Channel{ChannelEmail}},
		{"carrier-pigeon", nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			t.Parallel()
			if got := tt.typ.Channels(); !slices.Equal(got, tt.want) {
				t.Fatalf("%s.Channels() = %v, want %v", tt.typ, got, tt.want)
			}
		})
	}

	// Every channel has exactly one provider type.
	for _, c := range AllChannels {
		var serving []ProviderType
		for _, typ := range ProviderTypes {
			if typ.Serves(c) {
				serving = append(serving, typ)
			}
		}
		if len(serving) != 1 {
			t.Errorf("channel %s is served by %v, want exactly one type", c, serving)
		}
	}
}

func TestMissingCredentialKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		typ  ProviderType
		data map[string][]byte
		want []string
	}{
		{"twilio complete", ProviderTwilio, map[string][]byte{"accountSid": []byte("AC1"), "authToken": []byte("t")}, nil},
		{"twilio without token", ProviderTwilio, map[string][]byte{"accountSid": []byte("AC1")}, []string{"authToken"}},
		{"twilio with an empty token", ProviderTwilio, map[string][]byte{"accountSid": []byte("AC1"), "authToken": {}}, []string{"authToken"}},
		{"twilio empty", ProviderTwilio, nil, []string{"accountSid", "authToken"}},
		{"meta needs no app secret", ProviderMeta, map[string][]byte{"accessToken": []byte("EAA")}, nil},
		{"meta without token", ProviderMeta, map[string][]byte{"appSecret": []byte("s")}, []string{"accessToken"}},
		{"smtp without password", ProviderSMTP, map[string][]byte{"username": []byte("u")}, []string{"password"}},
		{"telegram needs nothing", ProviderTelegram, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.typ.MissingCredentialKeys(tt.data); !slices.Equal(got, tt.want) {
				t.Fatalf("MissingCredentialKeys = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestResolveProvider(t *testing.T) {
	t.Parallel()
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	gone := metav1.NewTime(t1.Add(time.Minute))
	mk := func(ns, name string, typ ProviderType, isDefault bool, created metav1.Time) Provider {
		return Provider{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: created},
			Spec:       ProviderSpec{Type: typ, Default: isDefault},
		}
	}
	deleting := func(p Provider) Provider { p.DeletionTimestamp = &gone; return p }

	projTwilio := mk("acme", "twilio-acme", ProviderTwilio, true, t1)
	projTwilioOlder := mk("acme", "twilio-old", ProviderTwilio, true, t0)
	projTwilioSameAge := mk("acme", "a-twilio", ProviderTwilio, true, t1)
	projTwilioNotDefault := mk("acme", "twilio-spare", ProviderTwilio, false, t0)
	projMeta := mk("acme", "meta-acme", ProviderMeta, true, t0)
	instTwilio := mk("switchboard-system", "twilio", ProviderTwilio, true, t0)
	instSMTP := mk("switchboard-system", "smtp", ProviderSMTP, true, t0)
	instSpare := mk("switchboard-system", "twilio-spare", ProviderTwilio, false, t0)
	instNamedLikeProject := mk("switchboard-system", "twilio-acme", ProviderTwilio, true, t0)

	tests := []struct {
		name         string
		channel      Channel
		named        string
		project      []Provider
		installation []Provider
		want         *Provider // nil: none
		reason       string
	}{
		{"the project's default", ChannelSMS, "", []Provider{projTwilio}, []Provider{instTwilio}, &projTwilio, ""},
		{"the project's default serves every channel of its type", ChannelVoice, "", []Provider{projTwilio}, nil, &projTwilio, ""},
		{"the project's default of another type does not serve", ChannelSMS, "", []Provider{projMeta}, []Provider{instTwilio}, &instTwilio, ""},
		{"the installation's default when the project has none", ChannelEmail, "", []Provider{projTwilio}, []Provider{instTwilio, instSMTP}, &instSMTP, ""},
		{"a project Provider that is not a default is not used", ChannelSMS, "", []Provider{projTwilioNotDefault}, []Provider{instTwilio}, &instTwilio, ""},
		{"the oldest default wins", ChannelSMS, "", []Provider{projTwilio, projTwilioOlder}, nil, &projTwilioOlder, ""},
		{"equally old defaults: first by name", ChannelSMS, "", []Provider{projTwilio, projTwilioSameAge}, nil, &projTwilioSameAge, ""},
		{"a default being deleted is skipped", ChannelSMS, "", []Provider{deleting(projTwilio)}, []Provider{instTwilio}, &instTwilio, ""},
		{"none serves the channel", ChannelSMS, "", []Provider{projMeta}, []Provider{instSMTP}, nil,
			"no Provider serves sms: create one (docs/providers.md)"},
		{"no Providers at all", ChannelTelegram, "", nil, nil, nil, "no Provider serves telegram: create one (docs/providers.md)"},
		{"named, in the project", ChannelSMS, "twilio-spare", []Provider{projTwilio, projTwilioNotDefault}, []Provider{instTwilio}, &projTwilioNotDefault, ""},
		{"named: the project's comes before the installation's", ChannelSMS, "twilio-acme", []Provider{projTwilio}, []Provider{instNamedLikeProject}, &projTwilio, ""},
		{"named, in the installation", ChannelSMS, "twilio-spare", []Provider{projTwilio}, []Provider{instSpare}, &instSpare, ""},
		{"named need not be a default", ChannelSMSOneway, "twilio-spare", nil, []Provider{instSpare}, &instSpare, ""},
		{"named and missing: no fallback to a default", ChannelSMS, "x", []Provider{projTwilio}, []Provider{instTwilio}, nil, `Provider "x" not found`},
		{"named and being deleted", ChannelSMS, "twilio-acme", []Provider{deleting(projTwilio)}, nil, nil, `Provider "twilio-acme" not found`},
		{"named of the wrong type", ChannelSMS, "meta-acme", []Provider{projMeta}, []Provider{instTwilio}, nil,
			`Provider "meta-acme" is of type meta, which does not serve sms`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, reason := ResolveProvider(tt.channel, tt.named, tt.project, tt.installation)
			switch {
			case tt.want == nil && got != nil:
				t.Fatalf("ResolveProvider = %s/%s, want none (%q)", got.Namespace, got.Name, tt.reason)
			case tt.want != nil && (got == nil || got.Namespace != tt.want.Namespace || got.Name != tt.want.Name):
				t.Fatalf("ResolveProvider = %v (%q), want %s/%s", got, reason, tt.want.Namespace, tt.want.Name)
			}
			if reason != tt.reason {
				t.Fatalf("reason = %q, want %q", reason, tt.reason)
			}
		})
	}
}

func TestProviderEndpointAllowed(t *testing.T) {
	t.Parallel()
	provider := func(ns string, typ ProviderType, baseURL string) *Provider {
		return &Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: ProviderSpec{Type: typ, BaseURL: baseURL}}
	}
	tests := []struct {
		name  string
		p     *Provider
		allow bool
		want  bool
	}{
		{"a project's endpoint", provider("acme", ProviderTelegram, "http://127.0.0.1:9"), false, false},
		{"a project's twilio endpoint", provider("acme", ProviderTwilio, "https://twilio.example"), false, false},
		{"a project's meta endpoint", provider("acme", ProviderMeta, "https://graph.example"), false, false},
		{"allowed by the operator", provider("acme", ProviderTelegram, "http://127.0.0.1:9"), true, true},
		{"the installation's endpoint", provider("switchboard-system", ProviderTwilio, "https://twilio.example"), false, true},
		{"a project's smtp relay", provider("acme", ProviderSMTP, "smtp://relay.example:587"), false, true},
		{"no endpoint", provider("acme", ProviderTwilio, ""), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.p.EndpointAllowed("switchboard-system", tt.allow); got != tt.want {
				t.Fatalf("EndpointAllowed = %v, want %v", got, tt.want)
			}
		})
	}
	// With no installation namespace, every namespace is a project's.
	if provider("", ProviderTwilio, "https://twilio.example").EndpointAllowed("", false) {
		t.Errorf("an empty installation namespace allowed an endpoint")
	}
}
