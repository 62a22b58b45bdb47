package dnsresolve

import "context"

// The mail-authentication libraries take the resolver in three shapes:
//   - blitiri.com.ar/go/spf: spf.WithResolver(r) — *Resolver has the methods of spf.DNSResolver
//     (LookupTXT, LookupMX, LookupIPAddr, LookupAddr) and returns the *net.DNSError it reads;
//   - go-msgauth's dkim.VerifyOptions.LookupTXT and dmarc.LookupOptions.LookupTXT: a
//     func(name string) ([]string, error), r.DKIMLookupTXT or r.TXTFunc(ctx).

// DKIMLookupTXT is LookupTXT without a context, for dkim.VerifyOptions.LookupTXT and
// dmarc.LookupOptions.LookupTXT; the resolver's timeout still bounds each query. Use TXTFunc
// where a context is at hand.
func (r *Resolver) DKIMLookupTXT(name string) ([]string, error) {
	return r.LookupTXT(context.Background(), name)
}

// TXTFunc returns LookupTXT bound to ctx, in the shape of dkim.VerifyOptions.LookupTXT and
// dmarc.LookupOptions.LookupTXT, so that a verification stops with the request it serves.
func (r *Resolver) TXTFunc(ctx context.Context) func(name string) ([]string, error) {
	return func(name string) ([]string, error) { return r.LookupTXT(ctx, name) }
}
