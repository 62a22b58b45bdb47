package v1alpha1

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func provider(namespace, name string, typ ProviderType, def bool) Provider {
	return Provider{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: ProviderSpec{Type: typ, Default: def}}
}

func names(plan RoutePlan) string {
	var out []string
	for _, p := range plan.Providers {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return strings.Join(out, ",")
}

// A sender's route matches by its longest prefix, then a route without prefixes; a channel
// without one takes its channel's provider, else the defaults.
func TestRouteFor(t *testing.T) {
	t.Parallel()
	project := []Provider{provider("acme", "carrier-a", ProviderTwilio, true), provider("acme", "carrier-b", ProviderTwilio, false),
		provider("acme", "relay", ProviderSMTP, false)}
	installation := []Provider{provider("switchboard-system", "shared", ProviderTwilio, true),
		provider("switchboard-system", "uk", ProviderTwilio, false)}
	two := int32(2)
	snd := &Sender{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "main"}, Spec: SenderSpec{
		PhoneNumber: "+14155550100", SMS: &Activation{Active: true}, SMSOneway: &Enablement{Enabled: true, Provider: "carrier-b"},
		Voice: &Enablement{Enabled: true},
		Routes: []ChannelRoute{
			{Channel: ChannelSMS, Strategy: StrategyWeighted, Providers: []RouteProvider{{Name: "carrier-a"}, {Name: "carrier-b", Weight: &two}}},
			{Channel: ChannelSMS, Prefixes: []string{"+44", "+353"}, Providers: []RouteProvider{{Name: "uk"}, {Name: "carrier-a"}}},
			{Channel: ChannelSMS, Prefixes: []string{"+4420"}, Providers: []RouteProvider{{Name: "missing"}, {Name: "relay"}, {Name: "carrier-b"}}},
			{Channel: ChannelVoice, Prefixes: []string{"+49"}, Providers: []RouteProvider{{Name: "relay"}}},
		}}}
	for _, c := range []struct {
		channel             Channel
		to                  string
		want, source, cause string
		strategy            RouteStrategy
	}{
		{ChannelSMS, "+14155550101", "acme/carrier-a,acme/carrier-b", RouteFromSender, "", StrategyWeighted},
		{ChannelSMS, "+447700900123", "switchboard-system/uk,acme/carrier-a", RouteFromSender, "", StrategyFailover},
		{ChannelSMS, "+353861234567", "switchboard-system/uk,acme/carrier-a", RouteFromSender, "", StrategyFailover},
		// The longest prefix wins; the Providers that cannot serve are left out and named.
		{ChannelSMS, "+442071838750", "acme/carrier-b", RouteFromSender, `Provider "missing" not found; Provider "relay" is of type smtp, which does not serve sms`, StrategyFailover},
		{ChannelSMSOneway, "+447700900123", "acme/carrier-b", RouteFromChannel, "", StrategyFailover},
		{ChannelVoice, "+14155550101", "acme/carrier-a", RouteFromProjectDefault, "", StrategyFailover},
		// A route none of whose Providers serves: nothing carries the message.
		{ChannelVoice, "+4930123456", "", "", `Provider "relay" is of type smtp, which does not serve voice`, ""},
	} {
		plan, reason := snd.RouteFor(c.channel, c.to, RoutingScope{Project: project, Installation: installation})
		if got := names(plan); got != c.want || plan.Source != c.source || plan.Strategy != c.strategy ||
			(c.want == "" && reason != c.cause) || (c.want != "" && strings.Join(plan.Errors, "; ") != c.cause) {
			t.Errorf("%s to %s = %s from %q (%s), errors %v, reason %q; want %s from %q (%s), %q", c.channel, c.to, got,
				plan.Source, plan.Strategy, plan.Errors, reason, c.want, c.source, c.strategy, c.cause)
		}
	}
	if plan, _ := snd.RouteFor(ChannelSMS, "+14155550101", RoutingScope{Project: project, Installation: installation}); fmt.Sprint(plan.Weights) != "[1 2]" {
		t.Errorf("weights = %v, want [1 2]", plan.Weights)
	}

	// The status: every route, then the channels' Providers for the destinations no route covers.
	var got []string
	for _, r := range snd.ResolvedRoutes(RoutingScope{Project: project, Installation: installation}) {
		got = append(got, fmt.Sprintf("%s%v %s %s [%s] %s", r.Channel, r.Prefixes, r.Strategy, r.Source, strings.Join(r.Providers, ","), r.Error))
	}
	want := []string{
		"sms[] weighted route [acme/carrier-a,acme/carrier-b] ",
		"sms[+44 +353] failover route [switchboard-system/uk,acme/carrier-a] ",
		`sms[+4420] failover route [acme/carrier-b] Provider "missing" not found; Provider "relay" is of type smtp, which does not serve sms`,
		`voice[+49] failover route [] Provider "relay" is of type smtp, which does not serve voice`,
		"sms_oneway[] failover channel [acme/carrier-b] ",
		"voice[] failover projectDefault [acme/carrier-a] ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("resolved routes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Without a route or a Provider of its own, a sender's messages follow its project's
// RoutingPolicy, then its project's default Provider, then the installation's policy (through the
// installation's Providers only: a project's Provider of the same name does not capture it),
// then the installation's default.
func TestRoutingPolicies(t *testing.T) {
	t.Parallel()
	installation := []Provider{provider("switchboard-system", "shared", ProviderTwilio, true),
		provider("switchboard-system", "backup", ProviderTwilio, false), provider("switchboard-system", "uk", ProviderTwilio, false)}
	// The project names one of its Providers as the installation's backup is named.
	project := []Provider{provider("acme", "backup", ProviderTwilio, false), provider("acme", "own", ProviderTwilio, false)}
	snd := &Sender{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "main"}, Spec: SenderSpec{
		PhoneNumber: "+14155550100", SMS: &Activation{Active: true}}}
	older := RoutingPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "switchboard-system", Name: "z-first",
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
		Spec: RoutingPolicySpec{Routes: []ChannelRoute{{Channel: ChannelSMS, Prefixes: []string{"+44"},
			Providers: []RouteProvider{{Name: "uk"}, {Name: "shared"}}}}}}
	newer := RoutingPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "switchboard-system", Name: "a-second",
		CreationTimestamp: metav1.NewTime(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))},
		Spec: RoutingPolicySpec{Routes: []ChannelRoute{
			{Channel: ChannelSMS, Prefixes: []string{"+44"}, Providers: []RouteProvider{{Name: "shared"}}},
			{Channel: ChannelSMS, Providers: []RouteProvider{{Name: "shared"}, {Name: "backup"}}}}}}
	scope := RoutingScope{Project: project, Installation: installation, InstallationRoutes: PolicyRoutes([]RoutingPolicy{newer, older})}
	for _, c := range []struct {
		to, want, source string
	}{
		// The oldest policy's route first, for equal prefixes.
		{"+447700900123", "switchboard-system/uk,switchboard-system/shared", RouteFromInstallationPolicy},
		// The installation's backup, not the project's Provider of that name.
		{"+14155550101", "switchboard-system/shared,switchboard-system/backup", RouteFromInstallationPolicy},
	} {
		plan, reason := snd.RouteFor(ChannelSMS, c.to, scope)
		if got := names(plan); got != c.want || plan.Source != c.source {
			t.Errorf("to %s = %s from %s (%s), want %s from %s", c.to, got, plan.Source, reason, c.want, c.source)
		}
	}
	// A project's policy comes before the installation's.
	scope.ProjectRoutes = []ChannelRoute{{Channel: ChannelSMS, Prefixes: []string{"+1"}, Providers: []RouteProvider{{Name: "own"}, {Name: "backup"}}}}
	if plan, _ := snd.RouteFor(ChannelSMS, "+14155550101", scope); names(plan) != "acme/own,acme/backup" || plan.Source != RouteFromProjectPolicy {
		t.Errorf("with the project's policy: %s from %s", names(plan), plan.Source)
	}
	// The project's own default Provider comes before the installation's policy.
	project[1].Spec.Default = true
	if plan, _ := snd.RouteFor(ChannelSMS, "+447700900123", scope); names(plan) != "acme/own" || plan.Source != RouteFromProjectDefault {
		t.Errorf("with the project's default: %s from %s", names(plan), plan.Source)
	}
	var got []string
	for _, r := range snd.ResolvedRoutes(scope) {
		got = append(got, fmt.Sprintf("%v %s [%s]", r.Prefixes, r.Source, strings.Join(r.Providers, ",")))
	}
	if want := []string{"[+1] projectPolicy [acme/own,acme/backup]", "[] projectDefault [acme/own]"}; strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("status routes = %q, want %q", got, want)
	}
}
