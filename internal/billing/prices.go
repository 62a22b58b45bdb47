package billing

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/kubewrite"
)

// +kubebuilder:rbac:groups=messaging.switchboard.io,resources=pricelists,verbs=get;list;watch

// Charged are the channels paid for per message from the balance at accept (spec: Limits, 3).
// Email is not charged per message, but needs a balance above zero.
var Charged = map[string]bool{"sms": true, "sms_oneway": true, "voice": true}

// Quote is what a message costs: its price and the provider's cost, for its units (SMS
// segments; one for other channels).
type Quote struct {
	Price, ProviderCost Micros
	Units               int
}

// Prices finds the PriceList of a project: the one in its namespace, else the installation's.
type Prices struct {
	Reader                client.Reader
	InstallationNamespace string
}

// For returns the price list that prices project, or nil when none does (nothing is charged).
// Of several in one namespace the oldest is used; one being deleted no longer prices.
func (p *Prices) For(ctx context.Context, project string) (*v1alpha1.PriceList, error) {
	for _, ns := range []string{project, p.InstallationNamespace} {
		if ns == "" {
			continue
		}
		var list v1alpha1.PriceListList
		if err := p.Reader.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("read price lists of %s: %w", ns, err)
		}
		if live := kubewrite.Live(list.Items); len(live) > 0 {
			return &live[0], nil
		}
	}
	return nil, nil
}

// Account is project's billing account (p is its Project, list its price list) with, for a
// sub-account, its parent's: the account that pays what the sub-account spends past its own
// balance. A parent that is itself a sub-account (only an operator can make one) pays from its
// own balance only.
func (p *Prices) Account(ctx context.Context, project string, proj *v1alpha1.Project, list *v1alpha1.PriceList) (Account, error) {
	a := AccountOf(project, proj, list)
	if proj == nil || proj.Spec.Parent == "" {
		return a, nil
	}
	parent, err := kubewrite.ProjectOf(ctx, p.Reader, proj.Spec.Parent)
	if err != nil {
		return Account{}, err
	}
	parentList, err := p.For(ctx, proj.Spec.Parent)
	if err != nil {
		return Account{}, err
	}
	pa := AccountOf(proj.Spec.Parent, parent, parentList)
	if parent != nil && parent.Spec.Parent != "" {
		pa.CreditLimit = 0
	}
	a.Parent = &pa
	return a, nil
}

// QuoteOf prices one message of channel to to with text: the entry of the channel with the
// longest prefix of to ("+" matches every destination, and email). ok is false when nothing in
// the list prices it.
func QuoteOf(list *v1alpha1.PriceList, channel, to, text string) (q Quote, ok bool, err error) {
	var best *v1alpha1.Price
	for i := range list.Spec.Prices {
		e := &list.Spec.Prices[i]
		if string(e.Channel) != channel || !strings.HasPrefix(to, e.Prefix) && e.Prefix != "+" {
			continue
		}
		if best == nil || len(e.Prefix) > len(best.Prefix) {
			best = e
		}
	}
	if best == nil {
		return Quote{}, false, nil
	}
	price, err := ParseUSD(best.Price)
	if err != nil {
		return Quote{}, false, fmt.Errorf("price list %s: %w", list.Name, err)
	}
	var cost Micros
	if best.ProviderCost != "" {
		if cost, err = ParseUSD(best.ProviderCost); err != nil {
			return Quote{}, false, fmt.Errorf("price list %s: %w", list.Name, err)
		}
	}
	units := 1
	if channel == "sms" || channel == "sms_oneway" {
		units = Segments(text)
	}
	return Quote{Price: price * Micros(units), ProviderCost: cost * Micros(units), Units: units}, true, nil
}

// FreeCredit is what a new Free project of list starts with.
func FreeCredit(list *v1alpha1.PriceList) Micros {
	if list == nil || list.Spec.FreeCredit == "" {
		return 0
	}
	m, err := ParseUSD(list.Spec.FreeCredit)
	if err != nil {
		return 0
	}
	return m
}

// TokensQuote is what tokens of the installation's model cost at list's ModelPrices (the
// model's own price, else "*"), rounded up to the micro-dollar; ok is false when nothing prices
// the model.
func TokensQuote(list *v1alpha1.PriceList, model string, input, output int64) (price Micros, ok bool, err error) {
	if list == nil {
		return 0, false, nil
	}
	var match *v1alpha1.ModelPrice
	for i := range list.Spec.ModelPrices {
		p := &list.Spec.ModelPrices[i]
		if p.Model == model || (p.Model == "*" && match == nil) {
			match = p
		}
	}
	if match == nil {
		return 0, false, nil
	}
	in, err := ParseUSD(match.InputPerMillion)
	if err != nil {
		return 0, false, err
	}
	out, err := ParseUSD(match.OutputPerMillion)
	if err != nil {
		return 0, false, err
	}
	// Micros per million tokens × tokens / 1e6, rounded up: a call is never free by rounding.
	total := int64(in)*input + int64(out)*output
	return Micros((total + 999_999) / 1_000_000), true, nil
}

// NumberQuote is what a phone number of country (ISO alpha-2) and numberType costs a project
// under list: its monthly and upfront prices, from the most specific entry (the country's and
// type's, then the country's "*", then "*" and the type, then "*" and "*"). ok is false when
// nothing prices it: the number is not for sale.
func NumberQuote(list *v1alpha1.PriceList, country, numberType string) (monthly, upfront Micros, ok bool, err error) {
	if list == nil {
		return 0, 0, false, nil
	}
	country = strings.ToUpper(country)
	for _, key := range [][2]string{{country, numberType}, {country, "*"}, {"*", numberType}, {"*", "*"}} {
		for _, p := range list.Spec.NumberPrices {
			if p.Country != key[0] || p.Type != key[1] {
				continue
			}
			if monthly, err = ParseUSD(p.Monthly); err != nil {
				return 0, 0, false, fmt.Errorf("price list %s: %w", list.Name, err)
			}
			if p.Upfront != "" {
				if upfront, err = ParseUSD(p.Upfront); err != nil {
					return 0, 0, false, fmt.Errorf("price list %s: %w", list.Name, err)
				}
			}
			return monthly, upfront, true, nil
		}
	}
	return 0, 0, false, nil
}

// ProviderCostOf is what Provider provider charges per message on channel to destination to, by
// the list's providerCosts: its entry with the longest prefix that matches ("+" matches every
// destination). ok is false when the list has none for the Provider.
func ProviderCostOf(list *v1alpha1.PriceList, provider, channel, to string) (cost Micros, ok bool, err error) {
	if list == nil {
		return 0, false, nil
	}
	var best *v1alpha1.ProviderCost
	for i := range list.Spec.ProviderCosts {
		e := &list.Spec.ProviderCosts[i]
		if e.Provider != provider || string(e.Channel) != channel || !strings.HasPrefix(to, e.Prefix) {
			continue
		}
		if best == nil || len(e.Prefix) > len(best.Prefix) {
			best = e
		}
	}
	if best == nil {
		return 0, false, nil
	}
	if cost, err = ParseUSD(best.Cost); err != nil {
		return 0, false, fmt.Errorf("price list %s: %w", list.Name, err)
	}
	return cost, true, nil
}
