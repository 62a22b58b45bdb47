package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

func TestProviderReadiness(t *testing.T) {
	t.Parallel()
	twilio := &v1alpha1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "twilio"},
		Spec:       v1alpha1.ProviderSpec{Type: v1alpha1.ProviderTwilio, SecretRef: &v1alpha1.ProviderSecretRef{Name: "twilio-credentials"}},
	}
	proxied := twilio.DeepCopy()
	proxied.Spec.BaseURL = "http://twilio-proxy.internal:8080"
	telegram := &v1alpha1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "telegram"},
		Spec:       v1alpha1.ProviderSpec{Type: v1alpha1.ProviderTelegram},
	}
	secret := func(kv ...string) *corev1.Secret {
		s := &corev1.Secret{Data: map[string][]byte{}}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Data[kv[i]] = []byte(kv[i+1])
		}
		return s
	}
	complete := secret("accountSid", "AC123", "authToken", "t0k3n")
	accepted := &checkRecord{account: "Acme (AC123)"}
	rejected := &checkRecord{err: fmt.Errorf("%w: twilio answered 401", ErrCredentialsRejected)}
	unreachable := &checkRecord{err: fmt.Errorf("dial tcp 127.0.0.1:1: connection refused")}

	tests := []struct {
		name    string
		facts   providerFacts
		reason  string
		message []string // fragments the message must hold
	}{
		{"a project's endpoint", providerFacts{provider: proxied, endpointRefused: true, secret: complete, checked: true, outcome: accepted},
			v1alpha1.ReasonEndpointNotAllowed, []string{"baseURL is for the installation's Providers", "--allow-project-provider-endpoints"}},
		{"a project's endpoint comes first", providerFacts{provider: proxied, endpointRefused: true, checked: true},
			v1alpha1.ReasonEndpointNotAllowed, nil},
		{"Secret missing", providerFacts{provider: twilio, checked: true}, v1alpha1.ReasonSecretNotFound,
			[]string{`Secret "twilio-credentials" not found in namespace acme`, `messaging.switchboard.io/secret: "true"`}},
		{"Secret without the token", providerFacts{provider: twilio, secret: secret("accountSid", "AC123"), checked: true},
			v1alpha1.ReasonSecretIncomplete, []string{`has no key authToken`, "needs accountSid and authToken"}},
		{"Secret with neither key", providerFacts{provider: twilio, secret: secret("sid", "AC123"), checked: true},
			v1alpha1.ReasonSecretIncomplete, []string{`has no keys accountSid, authToken`}},
		{"Secret with an empty key", providerFacts{provider: twilio, secret: secret("accountSid", "AC123", "authToken", ""), checked: true},
			v1alpha1.ReasonSecretIncomplete, []string{`has no key authToken`}},
		{"check pending", providerFacts{provider: twilio, secret: complete, checked: true}, v1alpha1.ReasonCheckPending,
			[]string{"checked with twilio"}},
		{"rejected", providerFacts{provider: twilio, secret: complete, checked: true, outcome: rejected}, v1alpha1.ReasonCredentialsRejected,
			[]string{`twilio rejected the credentials in Secret "twilio-credentials"`, "401", "correct accountSid and authToken in the Secret"}},
		{"unreachable", providerFacts{provider: proxied, secret: complete, checked: true, outcome: unreachable}, v1alpha1.ReasonProviderUnreachable,
			[]string{"http://twilio-proxy.internal:8080", "connection refused", "trying again"}},
		{"accepted", providerFacts{provider: twilio, secret: complete, checked: true, outcome: accepted}, v1alpha1.ReasonReady,
			[]string{"twilio accepted the credentials of account Acme (AC123)"}},
		{"no check for the type", providerFacts{provider: twilio, secret: complete}, v1alpha1.ReasonReady,
			[]string{"credentials are not checked for twilio"}},
		{"no check does not skip the Secret", providerFacts{provider: twilio}, v1alpha1.ReasonSecretNotFound, nil},
		{"telegram needs no Secret", providerFacts{provider: telegram}, v1alpha1.ReasonReady,
			[]string{"credentials are not checked for telegram"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := providerReadiness(tt.facts)
			if got.reason != tt.reason || got.ready != (tt.reason == v1alpha1.ReasonReady) {
				t.Fatalf("providerReadiness = %+v, want reason %s", got, tt.reason)
			}
			for _, m := range tt.message {
				if !strings.Contains(got.message, m) {
					t.Errorf("message %q lacks %q", got.message, m)
				}
			}
		})
	}
}

func TestPlanCheck(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration, inputs string) *checkRecord {
		return &checkRecord{inputs: inputs, at: now.Add(-ago)}
	}
	tests := []struct {
		name string
		last *checkRecord
		plan checkPlan
		wait time.Duration
	}{
		{"never checked", nil, checkNow, 0},
		{"same inputs, just checked", at(2*time.Second, "a"), checkReuse, 0},
		{"changed inputs, just checked: wait", at(2*time.Second, "b"), checkWait, providerMinCheckInterval - 2*time.Second},
		{"changed inputs, checked a while ago", at(providerMinCheckInterval, "b"), checkNow, 0},
		{"same inputs, due again", at(time.Hour, "a"), checkNow, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			plan, wait := planCheck(tt.last, "a", now)
			if plan != tt.plan || wait != tt.wait {
				t.Fatalf("planCheck = %d, %s; want %d, %s", plan, wait, tt.plan, tt.wait)
			}
		})
	}
}

func TestProviderRequeue(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	down := fmt.Errorf("connection refused")
	tests := []struct {
		name string
		rec  checkRecord
		want time.Duration
	}{
		{"accepted: the periodic re-check", checkRecord{at: now}, time.Hour},
		{"rejected: the periodic re-check", checkRecord{at: now, err: fmt.Errorf("%w: 401", ErrCredentialsRejected)}, time.Hour},
		{"unreachable once", checkRecord{at: now, err: down, failures: 1}, 30 * time.Second},
		{"unreachable twice", checkRecord{at: now, err: down, failures: 2}, time.Minute},
		{"unreachable four times", checkRecord{at: now, err: down, failures: 4}, 4 * time.Minute},
		{"unreachable for long: at most 5m", checkRecord{at: now, err: down, failures: 40}, 5 * time.Minute},
		{"a reused outcome: what is left", checkRecord{at: now.Add(-20 * time.Second), err: down, failures: 1}, 10 * time.Second},
		{"never a hot loop", checkRecord{at: now.Add(-2 * time.Hour)}, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.rec.nextIn(now); got != tt.want {
				t.Fatalf("nextIn = %s, want %s", got, tt.want)
			}
		})
	}
}
