package emailcheck

import (
	"context"
	"time"
)

// Verdicts of an inspection (WIRE.md §9, introspect/email).
const (
	VerdictDeliverable   = "deliverable"
	VerdictRisky         = "risky"
	VerdictUndeliverable = "undeliverable"
)

// Result is what an inspection found of one address.
type Result struct {
	Email      string   `json:"email"`
	Normalized *string  `json:"normalized"`
	Domain     *string  `json:"domain"`
	Verdict    string   `json:"verdict"`
	Reasons    []string `json:"reasons"`
}

// Inspect tells what sending to address would meet: malformed (invalid_syntax), a domain that
// takes no mail (domain_not_found) or only through its address record (domain_no_mx), DNS not
// answering (dns_unavailable, Switchboard's own reason), a role address, a disposable domain,
// and the project's suppression list (suppressed_<reason>). Undeliverable is what a send would
// fail for; risky is what it would go out despite.
func (c *Checker) Inspect(ctx context.Context, project string, testMode bool, disposable Disposable, address string) (Result, error) {
	res := Result{Email: address, Reasons: []string{}}
	normalized, domain, err := Normalize(address)
	if err != nil {
		res.Verdict, res.Reasons = VerdictUndeliverable, []string{"invalid_syntax"}
		return res, nil
	}
	res.Normalized, res.Domain = &normalized, &domain
	undeliverable := false
	switch c.Domain(ctx, domain) {
	case DomainNotFound:
		res.Reasons, undeliverable = append(res.Reasons, "domain_not_found"), true
	case DomainNoMX:
		res.Reasons = append(res.Reasons, "domain_no_mx")
	case DomainUnknown:
		res.Reasons = append(res.Reasons, "dns_unavailable")
	}
	if disposable.Has(domain) {
		res.Reasons = append(res.Reasons, "disposable_domain")
	}
	if IsRole(normalized) {
		res.Reasons = append(res.Reasons, "role_address")
	}
	entry, err := c.Suppressed(ctx, project, testMode, normalized)
	if err != nil {
		return Result{}, err
	}
	if entry != nil {
		res.Reasons, undeliverable = append(res.Reasons, "suppressed_"+entry.Reason), true
	}
	switch {
	case undeliverable:
		res.Verdict = VerdictUndeliverable
	case len(res.Reasons) > 0:
		res.Verdict = VerdictRisky
	default:
		res.Verdict = VerdictDeliverable
	}
	return res, nil
}

// inspectTimeout bounds the DNS of one inspection, so a slow domain does not hold a batch.
const inspectTimeout = 5 * time.Second

// InspectAll inspects each address, in order.
func (c *Checker) InspectAll(ctx context.Context, project string, testMode bool, disposable Disposable, addresses []string) ([]Result, error) {
	out := make([]Result, 0, len(addresses))
	for _, a := range addresses {
		actx, cancel := context.WithTimeout(ctx, inspectTimeout)
		r, err := c.Inspect(actx, project, testMode, disposable, a)
		cancel()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
