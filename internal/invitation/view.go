package invitation

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// View is the Invitation object of the API: the spec's 19 fields, none more (WIRE.md §8).
type View struct {
	ID               string       `json:"id"`
	URL              string       `json:"url"`
	Token            string       `json:"token"`
	ClientName       *string      `json:"clientName"`
	ClientEmail      *string      `json:"clientEmail"`
	ClientPhone      *string      `json:"clientPhone"`
	PhoneNumberID    *string      `json:"phoneNumberId"`
	ConnectionType   string       `json:"connectionType"`
	Status           string       `json:"status"`
	SenderID         *string      `json:"senderId"`
	ConnectedAccount *AccountView `json:"connectedAccount"`
	FailureReason    *string      `json:"failureReason"`
	FailedAt         *time.Time   `json:"failedAt"`
	ViewedAt         *time.Time   `json:"viewedAt"`
	StartedAt        *time.Time   `json:"startedAt"`
	CompletedAt      *time.Time   `json:"completedAt"`
	ExpiresAt        time.Time    `json:"expiresAt"`
	CreatedAt        time.Time    `json:"createdAt"`
	UpdatedAt        time.Time    `json:"updatedAt"`
}

// AccountView is a connected account: channel, the provider's id and its name.
type AccountView struct {
	Channel string  `json:"channel"`
	ID      string  `json:"id"`
	Name    *string `json:"name"`
}

// View is inv as the API shows it at now.
func (s *Service) View(inv *v1alpha1.Invitation) View {
	st := inv.Status
	v := View{ID: inv.Name, URL: s.URL(inv), Token: s.Token(inv), ClientName: strOrNil(inv.Spec.ClientName),
		ClientEmail: strOrNil(inv.Spec.ClientEmail), ClientPhone: strOrNil(inv.Spec.ClientPhone),
		ConnectionType: string(connectionType(inv)), Status: string(inv.StateAt(s.now())),
		SenderID: strOrNil(st.Sender), ConnectedAccount: accountView(st.ConnectedAccount), FailureReason: strOrNil(st.FailureReason),
		FailedAt: timeOf(st.FailedAt), ViewedAt: timeOf(st.ViewedAt), StartedAt: timeOf(st.StartedAt), CompletedAt: timeOf(st.CompletedAt),
		CreatedAt: inv.CreationTimestamp.UTC()}
	if connectionType(inv) == v1alpha1.ConnectionWhatsApp {
		v.PhoneNumberID = strOrNil(inv.Spec.PhoneNumberID)
	}
	if e := timeOf(st.ExpiresAt); e != nil {
		v.ExpiresAt = *e
	} else {
		v.ExpiresAt = expiry(inv.CreationTimestamp.Time, inv.Spec.ExpiresInDays).UTC()
	}
	v.UpdatedAt = v.CreatedAt
	if u := timeOf(st.UpdatedAt); u != nil {
		v.UpdatedAt = *u
	}
	return v
}

func connectionType(inv *v1alpha1.Invitation) v1alpha1.ConnectionType {
	if inv.Spec.ConnectionType == "" {
		return v1alpha1.ConnectionWhatsApp
	}
	return inv.Spec.ConnectionType
}

func accountView(a *v1alpha1.InvitationAccount) *AccountView {
	if a == nil {
		return nil
	}
	return &AccountView{Channel: a.Channel, ID: a.ID, Name: strOrNil(a.Name)}
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// orNil is s, or nil when empty, for event data.
func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
