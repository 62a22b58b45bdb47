package mailin

import (
	"context"
	"errors"
	"net"
	"net/mail"
	"strings"

	"blitiri.com.ar/go/spf"
	"github.com/emersion/go-msgauth/dkim"
	"github.com/emersion/go-msgauth/dmarc"
	"golang.org/x/net/publicsuffix"
)

// maxDKIMSignatures bounds the signatures checked on one message, each a DNS lookup and a
// hash of the body; a message carrying more is hostile or badly broken.
const maxDKIMSignatures = 8

// authenticate runs the SPF, DKIM and DMARC checks of a message whose From address is from.
// A check that cannot run says so in its result; none fails the message.
func (s *Server) authenticate(ctx context.Context, env Envelope, raw *RawMail, from string) Auth {
	lookupTXT := func(name string) ([]string, error) { return s.cfg.Resolver.LookupTXT(ctx, name) }
	auth := Auth{
		SPF:  s.checkSPF(ctx, env),
		DKIM: checkDKIM(raw, lookupTXT),
	}
	auth.DMARC, auth.DMARCPolicy = checkDMARC(domainOf(from), spfDomain(env), auth.SPF, auth.DKIM, lookupTXT)
	return auth
}

// checkSPF checks whether the sending IP may send for the MAIL FROM domain, or for the HELO
// name when the sender is null.
func (s *Server) checkSPF(ctx context.Context, env Envelope) string {
	if !env.RemoteIP.IsValid() {
		return ResultNone
	}
	res, _ := spf.CheckHostWithSender(net.IP(env.RemoteIP.AsSlice()), env.HELO, env.MailFrom,
		spf.WithResolver(s.cfg.Resolver), spf.WithContext(ctx))
	return string(res)
}

// spfDomain is the domain SPF vouched for, the one DMARC aligns: the MAIL FROM domain, or the
// HELO name for the null sender (RFC 7489 3.1.2).
func spfDomain(env Envelope) string {
	if d := domainOf(env.MailFrom); d != "" {
		return d
	}
	return normalizeDomain(env.HELO)
}

// checkDKIM verifies each DKIM signature of raw. Forged and broken signatures are results
// like the others.
func checkDKIM(raw *RawMail, lookupTXT func(string) ([]string, error)) []DKIMResult {
	verifs, err := dkim.VerifyWithOptions(raw.Reader(), &dkim.VerifyOptions{
		LookupTXT:        lookupTXT,
		MaxVerifications: maxDKIMSignatures,
	})
	if err != nil && !errors.Is(err, dkim.ErrTooManySignatures) {
		// The header does not parse, or the body could not be read: no signature can be
		// checked, so none is reported.
		return nil
	}
	selectors := signatureSelectors(raw)
	results := make([]DKIMResult, 0, len(verifs))
	for i, v := range verifs {
		r := DKIMResult{Domain: normalizeDomain(v.Domain), Result: ResultPass}
		// Verify returns the signatures in header order, the first MaxVerifications of them.
		if len(selectors) >= len(verifs) {
			r.Selector = selectors[i]
		}
		switch {
		case v.Err == nil:
		case dkim.IsTempFail(v.Err):
			r.Result = ResultTempError
		case dkim.IsPermFail(v.Err):
			r.Result = ResultPermError
		default:
			r.Result = ResultFail
		}
		if v.Err != nil {
			r.Reason = strings.TrimPrefix(v.Err.Error(), "dkim: ")
		}
		results = append(results, r)
	}
	return results
}

// signatureSelectors returns the s= tag of each DKIM-Signature field of raw, in order; nil
// when the header does not parse. go-msgauth does not return it.
func signatureSelectors(raw *RawMail) []string {
	msg, err := mail.ReadMessage(raw.Reader())
	if err != nil {
		return nil
	}
	sigs := msg.Header["Dkim-Signature"]
	selectors := make([]string, len(sigs))
	for i, sig := range sigs {
		for tag := range strings.SplitSeq(sig, ";") {
			name, value, _ := strings.Cut(tag, "=")
			if strings.TrimSpace(name) == "s" {
				selectors[i] = strings.Join(strings.Fields(value), "")
			}
		}
	}
	return selectors
}

// checkDMARC evaluates the DMARC policy of fromDomain against the SPF result for spfDomain
// and the DKIM results: pass when either passed for an aligned domain. It returns the result
// and the policy the domain asks for on failure.
func checkDMARC(fromDomain, spfDomain, spfResult string, dkimResults []DKIMResult, lookupTXT func(string) ([]string, error)) (result, policy string) {
	if fromDomain == "" {
		return ResultNone, ""
	}
	rec, policy, err := lookupDMARC(fromDomain, lookupTXT)
	switch {
	case dmarc.IsTempFail(err):
		return ResultTempError, ""
	case rec == nil:
		// No policy, or one that does not parse: DMARC does not apply (RFC 7489 6.6.3).
		return ResultNone, ""
	}
	if dmarcPass(rec, fromDomain, spfDomain, spfResult, dkimResults) {
		return ResultPass, policy
	}
	return ResultFail, policy
}

// lookupDMARC finds the DMARC record of domain or, when it has none, of its organizational
// domain, whose subdomain policy (sp=) then applies (RFC 7489 6.6.3).
func lookupDMARC(domain string, lookupTXT func(string) ([]string, error)) (*dmarc.Record, string, error) {
	opts := &dmarc.LookupOptions{LookupTXT: lookupTXT}
	rec, err := dmarc.LookupWithOptions(domain, opts)
	if err == nil {
		return rec, string(rec.Policy), nil
	}
	org := orgDomain(domain)
	if !errors.Is(err, dmarc.ErrNoPolicy) || org == domain {
		return nil, "", err
	}
	rec, err = dmarc.LookupWithOptions(org, opts)
	if err != nil {
		return nil, "", err
	}
	if rec.SubdomainPolicy != "" {
		return rec, string(rec.SubdomainPolicy), nil
	}
	return rec, string(rec.Policy), nil
}

// dmarcPass reports whether SPF or a DKIM signature passed for a domain aligned with the From
// domain, in the record's alignment modes.
func dmarcPass(rec *dmarc.Record, fromDomain, spfDomain, spfResult string, dkimResults []DKIMResult) bool {
	if spfResult == ResultPass && aligned(spfDomain, fromDomain, rec.SPFAlignment) {
		return true
	}
	for _, r := range dkimResults {
		if r.Result == ResultPass && aligned(r.Domain, fromDomain, rec.DKIMAlignment) {
			return true
		}
	}
	return false
}

// aligned reports whether domain is aligned with fromDomain: the same name in strict mode,
// the same organizational domain in relaxed mode (the default).
func aligned(domain, fromDomain string, mode dmarc.AlignmentMode) bool {
	domain, fromDomain = normalizeDomain(domain), normalizeDomain(fromDomain)
	if domain == "" || fromDomain == "" {
		return false
	}
	if mode == dmarc.AlignmentStrict {
		return domain == fromDomain
	}
	return orgDomain(domain) == orgDomain(fromDomain)
}

// orgDomain is the organizational domain of domain, the registered one below a public suffix
// (RFC 7489 3.2); domain itself when the list does not tell.
func orgDomain(domain string) string {
	org, err := publicsuffix.EffectiveTLDPlusOne(domain)
	if err != nil {
		return domain
	}
	return org
}

// domainOf is the domain of an address, normalized; empty when it has none.
func domainOf(addr string) string {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return ""
	}
	return normalizeDomain(addr[at+1:])
}

// normalizeDomain is domain in lower case without a trailing dot.
func normalizeDomain(domain string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), ".")
}
