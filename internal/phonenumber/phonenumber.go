// Package phonenumber answers who owns a phone number (docs/resources.md#phonenumber): the
// project a Ready PhoneNumber holds it for, or nobody. The send path, inbound SMS and 10DLC ask it
// from the informer cache, so a send never calls a provider to know; a sender write through the
// API also proves a new number through the project's own twilio account (Prove), and the Sender
// controller then makes the PhoneNumber that keeps that proof.
package phonenumber

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/index"
)

// Claims lists the PhoneNumbers of number, in every namespace (the informer cache's index).
func Claims(ctx context.Context, r client.Reader, number string) ([]v1alpha1.PhoneNumber, error) {
	var list v1alpha1.PhoneNumberList
	if err := r.List(ctx, &list, client.MatchingFields{index.PhoneNumberNumber: number}); err != nil {
		return nil, fmt.Errorf("list phone numbers of %s: %w", number, err)
	}
	return list.Items, nil
}

// Owner is the PhoneNumber that holds number for its project; nil when no project owns it.
func Owner(ctx context.Context, r client.Reader, number string) (*v1alpha1.PhoneNumber, error) {
	claims, err := Claims(ctx, r, number)
	if err != nil {
		return nil, err
	}
	return v1alpha1.NumberHolder(claims), nil
}

// State is where a project stands on a number.
type State int

const (
	// Unowned: no project owns the number (and the project's own account, when asked, does
	// not list it).
	Unowned State = iota
	// Owned: a Ready PhoneNumber holds the number for the project.
	Owned
	// Sandbox: the number is one of the sandbox's test numbers, which every project may use.
	Sandbox
	// InOwnAccount: no project owns it yet, and the project's own twilio account lists it (Prove
	// only): the project may take it; its PhoneNumber is made when a Sender holds it.
	InOwnAccount
	// HeldElsewhere: another project owns the number.
	HeldElsewhere
)

// Verdict is where a project stands on a number, and why.
type Verdict struct {
	State  State
	Number string
	// Pending is the project's own PhoneNumber of the number that does not hold it (yet): its
	// Ready condition says why.
	Pending *v1alpha1.PhoneNumber
	// Holder is the PhoneNumber that holds the number (Owned, HeldElsewhere).
	Holder *v1alpha1.PhoneNumber
}

// TakesCalls tells whether the number can take calls as far as its PhoneNumber says: one whose
// capabilities are known and leave voice out cannot; the sandbox's test numbers can.
func (v Verdict) TakesCalls() bool {
	if v.Holder == nil || len(v.Holder.Status.Capabilities) == 0 {
		return true
	}
	return slices.Contains(v.Holder.Status.Capabilities, v1alpha1.CapabilityVoice)
}

// Usable tells whether the project may send live from the number, and receive at it, now.
func (v Verdict) Usable() bool { return v.State == Owned || v.State == Sandbox }

// Takeable tells whether the project may give the number to a sender (Usable, or proved by its
// own account and soon held).
func (v Verdict) Takeable() bool { return v.Usable() || v.State == InOwnAccount }

// Deciding tells whether the project's own claim on the number is still being checked (made a
// moment ago, or changed): its channels are shown as on until the controller decides.
func (v Verdict) Deciding() bool {
	if v.State != Unowned || v.Pending == nil {
		return false
	}
	c := meta.FindStatusCondition(v.Pending.Status.Conditions, v1alpha1.ConditionReady)
	return c == nil || v.Pending.Status.ObservedGeneration != v.Pending.Generation
}

// Why says what keeps the project from the number, for an answer or a message's failure; it
// never names the project that owns it.
func (v Verdict) Why() string {
	switch v.State {
	case HeldElsewhere:
		return fmt.Sprintf("%s belongs to another project: a number is used by the one project that owns it (docs/senders.md#phone-numbers)", v.Number)
	case Unowned:
		if v.Pending != nil {
			why := "it is being checked"
			if c := meta.FindStatusCondition(v.Pending.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Message != "" &&
				c.ObservedGeneration == v.Pending.Generation {
				why = c.Message
			}
			return fmt.Sprintf("%s is not this project's yet: PhoneNumber %s/%s does not hold it (%s)", v.Number,
				v.Pending.Namespace, v.Pending.Name, why)
		}
		return fmt.Sprintf("%s is not a number of this project: an operator assigns numbers to projects (a PhoneNumber), "+
			"or the project's own twilio Provider must list it in its account (docs/senders.md#phone-numbers)", v.Number)
	}
	return ""
}

// Check is where project stands on number, from the informer cache only: the send path asks it
// for every live SMS and call from a number.
func Check(ctx context.Context, r client.Reader, project, number string) (Verdict, error) {
	v := Verdict{Number: number}
	if v1alpha1.IsSandboxNumber(number) {
		v.State = Sandbox
		return v, nil
	}
	claims, err := Claims(ctx, r, number)
	if err != nil {
		return v, err
	}
	if h := v1alpha1.NumberHolder(claims); h != nil {
		v.Holder = h
		v.State = HeldElsewhere
		if h.Status.Project == project {
			v.State = Owned
		}
		return v, nil
	}
	for i := range claims {
		if c := &claims[i]; c.DeletionTimestamp.IsZero() && ClaimFor(c) == project {
			v.Pending = c
			break
		}
	}
	return v, nil
}

// ClaimFor is the project a PhoneNumber claims its number for: its status says, once the
// controller looked at it; before, its spec (or its namespace).
func ClaimFor(p *v1alpha1.PhoneNumber) string {
	switch {
	case p.Status.Project != "":
		return p.Status.Project
	case p.Spec.Project != "":
		return p.Spec.Project
	}
	return p.Namespace
}

// Lookup asks a provider account whether it holds a number (the transport registry, through
// the Provider's credentials).
type Lookup interface {
	// IncomingNumber returns what the account of p reports of number, and false when it does
	// not hold it.
	IncomingNumber(ctx context.Context, p *v1alpha1.Provider, number string) (Found, bool, error)
}

// Releaser gives a number back to the provider account that bought it (the transport
// registry, through the Provider's credentials): the account stops paying for it. A number the
// account does not hold any more is released already.
type Releaser interface {
	ReleaseNumber(ctx context.Context, p *v1alpha1.Provider, sid string) error
}

// Found is what an account reports of a number it holds.
type Found struct {
	// SID is the provider's id of the number (Twilio: PN…).
	SID          string
	Capabilities []v1alpha1.PhoneCapability
}

// OwnAccounts are the Providers of project's own namespace that can prove its numbers: its
// twilio Providers (named when name is set), oldest first. The installation's shared account
// proves nothing: it holds every project's numbers.
func OwnAccounts(ctx context.Context, r client.Reader, project, name string) ([]v1alpha1.Provider, error) {
	var list v1alpha1.ProviderList
	if err := r.List(ctx, &list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list providers of %s: %w", project, err)
	}
	var out []v1alpha1.Provider
	for _, p := range list.Items {
		if p.Spec.Type == v1alpha1.ProviderTwilio && p.DeletionTimestamp.IsZero() && (name == "" || p.Name == name) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreationTimestamp.Equal(&out[j].CreationTimestamp) {
			return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// AskAccounts asks each of providers whether its account holds number, and returns the first
// that does, with what it reports. It is nil, with the errors of those that could not be asked,
// when none does.
func AskAccounts(ctx context.Context, lookup Lookup, providers []v1alpha1.Provider, number string) (*v1alpha1.Provider, Found, error) {
	var errs []error
	for i := range providers {
		p := &providers[i]
		found, ok, err := lookup.IncomingNumber(ctx, p, number)
		if err != nil {
			errs = append(errs, fmt.Errorf("ask Provider %s: %w", p.Name, err))
			continue
		}
		if ok {
			return p, found, nil
		}
	}
	return nil, Found{}, errors.Join(errs...)
}

// Prove is Check, then, for a number no project owns, the project's own twilio accounts: one
// that lists it makes it InOwnAccount. An account that could not be asked is an error (the caller
// answers "try again"); with none to ask, the number is Unowned.
func Prove(ctx context.Context, r client.Reader, lookup Lookup, project, number string) (Verdict, error) {
	v, err := Check(ctx, r, project, number)
	if err != nil || v.State != Unowned || lookup == nil {
		return v, err
	}
	providers, err := OwnAccounts(ctx, r, project, "")
	if err != nil {
		return v, err
	}
	p, _, err := AskAccounts(ctx, lookup, providers, number)
	switch {
	case p != nil:
		v.State, v.Pending = InOwnAccount, nil
	case err != nil:
		return v, fmt.Errorf("prove %s for %s: %w", number, project, err)
	}
	return v, nil
}
