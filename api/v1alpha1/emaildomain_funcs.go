/*
Copyright 2026 The Switchboard Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import "strings"

// EmailDomainOf is the domain of an email address, lowercased; "" when it has none.
func EmailDomainOf(address string) string {
	at := strings.LastIndexByte(address, '@')
	if at < 0 {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(address[at+1:]), ".")
}

// DomainFor returns, among the EmailDomains of a namespace, the one for the domain of address.
func DomainFor(items []EmailDomain, address string) *EmailDomain {
	return FirstDomainNamed(items, EmailDomainOf(address))
}

// FirstDomainNamed returns, among the EmailDomains of a namespace, the one for domain: the
// oldest (then first by name) when kubectl made several; nil when there is none.
func FirstDomainNamed(items []EmailDomain, domain string) *EmailDomain {
	var first *EmailDomain
	for i := range items {
		d := &items[i]
		if d.Spec.Domain != domain || !d.DeletionTimestamp.IsZero() {
			continue
		}
		if first == nil || d.CreationTimestamp.Before(&first.CreationTimestamp) ||
			(d.CreationTimestamp.Equal(&first.CreationTimestamp) && d.Name < first.Name) {
			first = d
		}
	}
	return first
}

// RecordVerified tells whether the domain's record of purpose was found published at the last
// check (DKIM, to sign; the inbound MX, to receive).
func (d *EmailDomain) RecordVerified(purpose RecordPurpose) bool {
	for _, rec := range d.Status.Records {
		if rec.Purpose == purpose && rec.State == RecordVerified {
			return true
		}
	}
	return false
}

// Receives tells whether mail to the domain reaches Switchboard for this project: receiving is
// asked for, its inbound MX is published, and the project holds the domain (the MX is shared by
// every project, so it proves nothing of who owns the domain).
func (d *EmailDomain) Receives() bool {
	return d.Spec.Receiving && d.RecordVerified(PurposeInbound) && d.Status.Held
}
