package controller_test

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/invitation"
)

// invitationAbandonAfter is how long the suite's controller lets a connection run.
const invitationAbandonAfter = 3 * time.Second

// invitationEvents lists the invitation.status_changed events recorded for the project's
// invitations webhook, oldest first, as "previous→current reason".
func invitationEvents(ctx context.Context, project string) []string {
	rows, err := pool.Query(ctx, `SELECT data FROM webhook_deliveries WHERE project = $1 AND event = 'invitation.status_changed'
		ORDER BY created_at, id`, project)
	Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	var out []string
	for rows.Next() {
		var data []byte
		Expect(rows.Scan(&data)).To(Succeed())
		var d map[string]any
		Expect(json.Unmarshal(data, &d)).To(Succeed())
		ev := d["previousStatus"].(string) + "→" + d["currentStatus"].(string)
		if r, ok := d["failureReason"].(string); ok {
			ev += " " + r
		}
		out = append(out, ev)
	}
	return out
}

var _ = Describe("Invitation controller", func() {
	ctx := context.Background()
	var ns string

	BeforeEach(func() {
		ns = newNamespace(ctx)
		Expect(k8s.Create(ctx, &v1alpha1.Webhook{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "invitations"},
			Spec: v1alpha1.WebhookSpec{Kind: v1alpha1.WebhookKindInvitations, URL: "https://hooks.example.test/invitations"}})).To(Succeed())
	})

	applied := func(name string, spec v1alpha1.InvitationSpec) *v1alpha1.Invitation {
		inv := &v1alpha1.Invitation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
		Expect(k8s.Create(ctx, inv)).To(Succeed())
		Eventually(func() string {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(inv), inv)
			return inv.Status.TokenHash
		}).ShouldNot(BeEmpty())
		return inv
	}

	It("gives an invitation applied with kubectl its state, token and expiry, with the defaults", func() {
		inv := applied("acme-whatsapp", v1alpha1.InvitationSpec{ClientName: "Acme"})
		Expect(inv.Spec.ConnectionType).To(Equal(v1alpha1.ConnectionWhatsApp))
		Expect(inv.Spec.ExpiresInDays).To(BeEquivalentTo(7))
		Expect(inv.Status.State).To(Equal(v1alpha1.InvitationPending))
		Expect(inv.Status.ExpiresAt.Sub(inv.CreationTimestamp.Time)).To(Equal(7 * 24 * time.Hour))
		Expect(inv.Status.TokenHash).To(Equal(invitation.Hash(invitations.Token(inv))))
		// ByToken reads the manager's cache, which sees the status a moment after the API server.
		var found *v1alpha1.Invitation
		Eventually(func() error {
			var err error
			found, err = invitations.ByToken(ctx, invitations.Token(inv))
			return err
		}).Should(Succeed())
		Expect(found.Name).To(Equal(inv.Name))
		_, err := invitations.ByToken(ctx, "not-a-token")
		Expect(err).To(HaveOccurred())
		Consistently(func() []string { return invitationEvents(ctx, ns) }, "300ms").Should(BeEmpty())
	})

	It("refuses, for every writer, what the API refuses", func() {
		for name, spec := range map[string]v1alpha1.InvitationSpec{
			"whatsapp fields on messenger": {ConnectionType: v1alpha1.ConnectionMessenger, PhoneNumberID: "1065"},
			"countries on messenger":       {ConnectionType: v1alpha1.ConnectionMessenger, AllowedPhoneCountries: []string{"BR"}},
			"a long name":                  {ClientName: strings.Repeat("a", 101)},
			"a country of three letters":   {AllowedPhoneCountries: []string{"BRA"}},
			"31 days":                      {ExpiresInDays: 31},
			"a phone that is not E.164":    {ClientPhone: "5511999990000"},
			"an email that is not one":     {ClientEmail: "ana at bakery"},
		} {
			err := k8s.Create(ctx, &v1alpha1.Invitation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "bad-"}, Spec: spec})
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", name, err)
		}
		inv := applied("fixed-type", v1alpha1.InvitationSpec{})
		Expect(update(ctx, inv, func(i *v1alpha1.Invitation) { i.Spec.ConnectionType = v1alpha1.ConnectionMessenger })).
			To(MatchError(ContainSubstring("connectionType is immutable")))
	})

	It("moves through the state table with one event per stored change", func() {
		inv := applied("table", v1alpha1.InvitationSpec{ClientName: "Acme", ClientEmail: "ops@acme.test"})
		var err error
		// pending → in_progress → failed → (retry) in_progress → completed
		inv, err = invitations.Start(ctx, inv)
		Expect(err).NotTo(HaveOccurred())
		inv, err = invitations.Start(ctx, inv) // a restart: the same status, no event
		Expect(err).NotTo(HaveOccurred())
		inv, err = invitations.Fail(ctx, inv, v1alpha1.FailureSocialCancelled)
		Expect(err).NotTo(HaveOccurred())
		Expect(inv.Status.FailureReason).To(Equal(v1alpha1.FailureSocialCancelled))
		Expect(inv.ActiveAt(time.Now())).To(BeTrue(), "a failed invitation's link stays usable")
		inv, err = invitations.Start(ctx, inv)
		Expect(err).NotTo(HaveOccurred())
		Expect(inv.Status.FailureReason).To(BeEmpty())
		inv, err = invitations.Complete(ctx, inv, invitation.Connected{Sender: "acme-whatsapp", WABAAccountID: "102290129340398",
			Account: v1alpha1.InvitationAccount{Channel: "whatsapp", ID: "106540352242922", Name: "Acme"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(inv.Status.CompletedAt).NotTo(BeNil())
		// A completed invitation's link has nothing left to do.
		_, err = invitations.Start(ctx, inv)
		Expect(err).To(MatchError(invitation.ErrFinished))

		Eventually(func() []string { return invitationEvents(ctx, ns) }).Should(Equal([]string{
			"pending→in_progress", "in_progress→failed social_cancelled", "failed→in_progress", "in_progress→completed"}))
		rows, err := pool.Query(ctx, `SELECT data FROM webhook_deliveries WHERE project = $1 AND event = 'invitation.status_changed'
			ORDER BY created_at DESC, id DESC LIMIT 1`, ns)
		Expect(err).NotTo(HaveOccurred())
		var last map[string]any
		for rows.Next() {
			var data []byte
			Expect(rows.Scan(&data)).To(Succeed())
			Expect(json.Unmarshal(data, &last)).To(Succeed())
		}
		rows.Close()
		Expect(last).To(HaveKeyWithValue("senderId", "acme-whatsapp"))
		Expect(last).To(HaveKeyWithValue("wabaAccountId", "102290129340398"))
		Expect(last).To(HaveKeyWithValue("clientEmail", "ops@acme.test"))
		Expect(last["connectedAccount"]).To(Equal(map[string]any{"channel": "whatsapp", "id": "106540352242922", "name": "Acme"}))

		// A resend (the operator's, through the resource) goes back to pending with a new expiry.
		Expect(update(ctx, inv, func(i *v1alpha1.Invitation) {
			i.Spec.ResendRequestedAt = &metav1.Time{Time: time.Now().Add(time.Second)}
		})).To(Succeed())
		Eventually(func() v1alpha1.InvitationState {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(inv), inv)
			return inv.Stored()
		}).Should(Equal(v1alpha1.InvitationPending))
		Expect(inv.Status.ExpiresAt.After(time.Now().Add(6 * 24 * time.Hour))).To(BeTrue())
		Eventually(func() []string { return invitationEvents(ctx, ns) }).Should(HaveLen(5))
		Expect(invitationEvents(ctx, ns)[4]).To(Equal("completed→pending"))
	})

	It("cancels: the link stops working, and a cancelled invitation cannot be started", func() {
		inv := applied("cancelled", v1alpha1.InvitationSpec{ConnectionType: v1alpha1.ConnectionMessenger})
		inv, err := invitations.Cancel(ctx, ns, inv.Name)
		Expect(err).NotTo(HaveOccurred())
		_, err = invitations.Start(ctx, inv)
		Expect(err).To(MatchError(invitation.ErrGone))
		Eventually(func() []string { return invitationEvents(ctx, ns) }).Should(Equal([]string{"pending→cancelled"}))
	})

	It("fails a connection left unfinished with signup_abandoned", func() {
		inv := applied("abandoned", v1alpha1.InvitationSpec{})
		_, err := invitations.Start(ctx, inv)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(inv), inv)
			return inv.Status.FailureReason
		}, invitationAbandonAfter+5*time.Second).Should(Equal(v1alpha1.FailureSignupAbandoned))
		Expect(inv.Stored()).To(Equal(v1alpha1.InvitationFailed))
		Eventually(func() []string { return invitationEvents(ctx, ns) }).Should(Equal([]string{
			"pending→in_progress", "in_progress→failed signup_abandoned"}))
	})

	It("announces a change whose writer stopped before its event", func() {
		inv := applied("crashed-writer", v1alpha1.InvitationSpec{})
		// A writer that stored a cancel and died before announcing it: the controller announces it.
		inv.Status.PreviousState, inv.Status.State, inv.Status.ChangeID = v1alpha1.InvitationPending, v1alpha1.InvitationCancelled, "crashed1"
		inv.Status.CancelledAt = &metav1.Time{Time: time.Now()}
		Expect(k8s.Status().Update(ctx, inv)).To(Succeed())
		Eventually(func() []string { return invitationEvents(ctx, ns) }).Should(Equal([]string{"pending→cancelled"}))
		Consistently(func() []string { return invitationEvents(ctx, ns) }, "500ms").Should(HaveLen(1))
	})
})
