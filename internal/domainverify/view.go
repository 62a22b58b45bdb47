package domainverify

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// Domain is an email domain as the REST API and its events show it (WIRE.md §9: id, domain,
// status, dkimStatus, dnsRecords; v2 adds verifiable and setupError). The rest is Switchboard's
// own, for users who want to see what each record's check found.
type Domain struct {
	ID         string      `json:"id"`
	Domain     string      `json:"domain"`
	Status     string      `json:"status"`
	DKIMStatus string      `json:"dkimStatus"`
	DNSRecords []DNSRecord `json:"dnsRecords"`
	Verifiable bool        `json:"verifiable"`
	SetupError *string     `json:"setupError,omitempty"`
	// StatusReason says what the records alone do not: that another project holds the domain
	// (naming none), or until when a domain verified before ownership records does without one.
	StatusReason     *string    `json:"statusReason,omitempty"`
	EnhancedRecords  bool       `json:"enhancedRecords"`
	ReceivingEnabled bool       `json:"receivingEnabled"`
	CreatedAt        time.Time  `json:"createdAt"`
	VerifiedAt       *time.Time `json:"verifiedAt"`
	LastCheckedAt    *time.Time `json:"lastCheckedAt"`
}

// DNSRecord is a record to publish as the API shows it.
type DNSRecord struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Value    string `json:"value"`
	Purpose  string `json:"purpose"`
	Required bool   `json:"required"`
	Priority *int32 `json:"priority,omitempty"`
	// Status is what the last check found: pending, verified, failed, temporary_failure.
	Status string `json:"status"`
}

// View shows d as the API does.
func View(d *v1alpha1.EmailDomain) Domain {
	st := d.Status
	out := Domain{ID: d.Name, Domain: d.Spec.Domain, Status: string(st.State), DKIMStatus: string(v1alpha1.RecordPending),
		DNSRecords: []DNSRecord{}, Verifiable: st.Verifiable == nil || *st.Verifiable,
		EnhancedRecords: d.Spec.EnhancedRecords, ReceivingEnabled: d.Spec.Receiving, CreatedAt: d.CreationTimestamp.UTC()}
	if out.Status == "" {
		out.Status = string(v1alpha1.DomainPending)
	}
	if !out.Verifiable {
		out.SetupError = &st.SetupError
		out.DKIMStatus = string(v1alpha1.RecordFailed)
	}
	for _, rec := range st.Records {
		state := rec.State
		if state == "" {
			state = v1alpha1.RecordPending
		}
		purpose := rec.Purpose
		switch purpose {
		case v1alpha1.PurposeDKIM:
			out.DKIMStatus = string(state)
		case v1alpha1.PurposeDKIMEd25519:
			// The wire knows DKIM records by one purpose; its value (k=ed25519) tells them apart.
			purpose = v1alpha1.PurposeDKIM
		}
		out.DNSRecords = append(out.DNSRecords, DNSRecord{Name: rec.Name, Type: rec.Type, Value: rec.Value,
			Purpose: string(purpose), Required: rec.Required, Priority: rec.Priority, Status: string(state)})
	}
	if c := meta.FindStatusCondition(st.Conditions, ConditionOwnership); c != nil &&
		(c.Reason == ReasonHeldElsewhere || c.Reason == ReasonOwnershipGrace) {
		msg := c.Message
		out.StatusReason = &msg
	}
	if st.VerifiedAt != nil {
		t := st.VerifiedAt.UTC()
		out.VerifiedAt = &t
	}
	if st.LastCheckedAt != nil {
		t := st.LastCheckedAt.UTC()
		out.LastCheckedAt = &t
	}
	return out
}

// EventData is the data of domain.verified and domain.failed (the spec leaves it unnamed):
// the domain as the API shows it under domainId, and the state announced before
// (previousStatus: verified, failed, or null the first time).
func EventData(d *v1alpha1.EmailDomain, previous string) map[string]any {
	v := View(d)
	data := map[string]any{
		"domainId": v.ID, "domain": v.Domain, "status": v.Status, "dkimStatus": v.DKIMStatus,
		"dnsRecords": v.DNSRecords, "verifiable": v.Verifiable, "previousStatus": nil,
	}
	if previous != "" {
		data["previousStatus"] = previous
	}
	if v.SetupError != nil {
		data["setupError"] = *v.SetupError
	}
	if v.StatusReason != nil {
		data["statusReason"] = *v.StatusReason
	}
	return data
}
