// Package domainverifytest publishes an email domain's records on a loopback DNS server
// (dnstest), as its owner would at their DNS host, for tests at every level.
package domainverifytest

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/dnsresolve/dnstest"
)

// Publish puts each record on srv, alongside what the name already holds of its type.
func Publish(srv *dnstest.Server, records ...v1alpha1.DNSRecord) {
	for _, rec := range records {
		switch rec.Type {
		case "TXT":
			srv.Add(rec.Name, dns.TypeTXT, rec.Value)
		case "MX":
			prio := int32(10)
			if rec.Priority != nil {
				prio = *rec.Priority
			}
			srv.Add(rec.Name, dns.TypeMX, fmt.Sprintf("%d %s.", prio, strings.TrimSuffix(rec.Value, ".")))
		default:
			panic("domainverifytest: cannot publish a " + rec.Type + " record")
		}
	}
}

// PublishRequired publishes the records the domain requires (all but the inbound MX, unless
// inbound is true).
func PublishRequired(srv *dnstest.Server, d *v1alpha1.EmailDomain, inbound bool) {
	for _, rec := range d.Status.Records {
		if (rec.Required && rec.Purpose != v1alpha1.PurposeInbound) || (inbound && rec.Purpose == v1alpha1.PurposeInbound) {
			Publish(srv, rec)
		}
	}
}
