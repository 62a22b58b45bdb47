package controller

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

func TestNumberHolder(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	claim := func(key string, minutesOld int, proved, holding bool) numberClaim {
		return numberClaim{key: key, created: t0.Add(time.Duration(-minutesOld) * time.Minute), proved: proved, holding: holding}
	}
	for _, tt := range []struct {
		name   string
		claims []numberClaim
		want   int
	}{
		{"none", nil, -1},
		{"nothing proved", []numberClaim{claim("a/x", 5, false, false), claim("b/y", 9, false, true)}, -1},
		{"the only proved claim", []numberClaim{claim("a/x", 9, false, false), claim("b/y", 1, true, false)}, 1},
		{"the oldest proved claim", []numberClaim{claim("a/x", 1, true, false), claim("b/y", 5, true, false), claim("c/z", 3, true, false)}, 1},
		{"an older claim proved later takes nothing away", []numberClaim{claim("a/x", 1, true, true), claim("b/y", 9, true, false)}, 0},
		{"a holder no longer proved lets the oldest proved one hold", []numberClaim{claim("a/x", 9, false, true), claim("b/y", 3, true, false), claim("c/z", 5, true, false)}, 2},
		{"two holding for a moment: the oldest", []numberClaim{claim("a/x", 1, true, true), claim("b/y", 2, true, true)}, 1},
		{"as old: by namespace and name", []numberClaim{claim("b/y", 5, true, false), claim("a/z", 5, true, false)}, 1},
	} {
		if got := numberHolder(tt.claims); got != tt.want {
			t.Errorf("%s: holder = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestPhoneNumberReadiness(t *testing.T) {
	t.Parallel()
	pn := &v1alpha1.PhoneNumber{ObjectMeta: metav1.ObjectMeta{Namespace: "bravo", Name: "pn-14155550100", UID: "self"},
		Spec: v1alpha1.PhoneNumberSpec{Number: "+14155550100"}}
	other := func(ns, project string) *v1alpha1.PhoneNumber {
		o := &v1alpha1.PhoneNumber{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held", UID: "other"}}
		o.Status.Project = project
		return o
	}
	account := &v1alpha1.PhoneNumberAccount{Provider: "twilio", NumberSID: "PN1", CheckedAt: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	for _, tt := range []struct {
		name        string
		proof       numberProof
		holder      *v1alpha1.PhoneNumber
		ready       bool
		reason      string
		say, silent string // the message says say and never silent
	}{
		{"no project", numberProof{invalid: "set spec.project"}, nil, false, v1alpha1.ReasonNumberInvalidProject, "spec.project", ""},
		{"accounts unreachable", numberProof{project: "bravo", unreachable: "HTTP 503"}, nil, false, v1alpha1.ReasonProviderUnreachable, "HTTP 503", ""},
		{"not listed", numberProof{project: "bravo", notOwned: "not a number of the account"}, nil, false, v1alpha1.ReasonNumberNotOwned, "not a number", ""},
		{"another project holds it", numberProof{project: "bravo", ownership: v1alpha1.OwnershipProviderAccount, account: account},
			other("switchboard-system", "alpha"), false, v1alpha1.ReasonNumberConflict, "another project holds +14155550100", "alpha"},
		{"this project holds it elsewhere", numberProof{project: "bravo", ownership: v1alpha1.OwnershipProviderAccount, account: account},
			other("switchboard-system", "bravo"), false, v1alpha1.ReasonNumberConflict, "switchboard-system/held", ""},
		{"holds it, assigned", numberProof{project: "bravo", ownership: v1alpha1.OwnershipAssigned}, pn, true, v1alpha1.ReasonReady, "assigned by an operator", ""},
		{"holds it, listed", numberProof{project: "bravo", ownership: v1alpha1.OwnershipProviderAccount, account: account}, pn, true, v1alpha1.ReasonReady, "twilio Provider twilio lists it (PN1)", ""},
		{"holds it, the account could not be asked again", numberProof{project: "bravo", ownership: v1alpha1.OwnershipProviderAccount, account: account, recheckFailed: "HTTP 503"},
			pn, true, v1alpha1.ReasonReady, "failed: HTTP 503", ""},
	} {
		got := phoneNumberReadiness(pn, tt.proof, tt.holder)
		if got.ready != tt.ready || got.reason != tt.reason || !strings.Contains(got.message, tt.say) ||
			(tt.silent != "" && strings.Contains(got.message, tt.silent)) {
			t.Errorf("%s: %+v, want ready %v, reason %s, saying %q", tt.name, got, tt.ready, tt.reason, tt.say)
		}
	}
}
