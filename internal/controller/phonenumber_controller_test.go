package controller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// installationNamespace is where the suite's operator assigns numbers (controller.Options).
const installationNamespace = "switchboard-system"

func phoneNumber(ns, name, number, project string) *v1alpha1.PhoneNumber {
	return &v1alpha1.PhoneNumber{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PhoneNumberSpec{Number: number, Project: project}}
}

func numberReady(ctx context.Context, p *v1alpha1.PhoneNumber) func() *metav1.Condition {
	return func() *metav1.Condition {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return nil
		}
		return meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
	}
}

func numberOwned(ctx context.Context, s *v1alpha1.Sender) func() *metav1.Condition {
	return func() *metav1.Condition {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return nil
		}
		return meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionNumberOwned)
	}
}

// liveSender is a kubectl-applied Sender on providers with sms and email on, at number.
func liveSender(ns, name, number string) *v1alpha1.Sender {
	s := sender(ns, name, v1alpha1.ChannelSMS, v1alpha1.ChannelEmail)
	s.Spec.PhoneNumber = number
	return s
}

var _ = Describe("PhoneNumber", func() {
	ctx := context.Background()

	BeforeEach(func() {
		err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: installationNamespace}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
	})

	It("has one owner at a time: of two assignments, the oldest holds the number, then the other once it is gone", func() {
		alpha, bravo := newNamespace(ctx), newNamespace(ctx)
		first := phoneNumber(installationNamespace, "first-"+alpha, "+14155550201", alpha)
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(numberReady(ctx, first)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(first.Status.Project).To(Equal(alpha))
		Expect(first.Status.Ownership).To(Equal(v1alpha1.OwnershipAssigned))

		second := phoneNumber(installationNamespace, "second-"+bravo, "+14155550201", bravo)
		Expect(k8s.Create(ctx, second)).To(Succeed())
		Eventually(numberReady(ctx, second)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonNumberConflict))
		Expect(meta.FindStatusCondition(second.Status.Conditions, v1alpha1.ConditionReady).Message).To(And(
			ContainSubstring("another project holds +14155550201"), Not(ContainSubstring(alpha))))
		Consistently(numberReady(ctx, first), "1s").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))

		// A second claim of the same project conflicts too, and says which one holds.
		again := phoneNumber(installationNamespace, "again-"+alpha, "+14155550201", alpha)
		Expect(k8s.Create(ctx, again)).To(Succeed())
		Eventually(numberReady(ctx, again)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonNumberConflict))
		Expect(meta.FindStatusCondition(again.Status.Conditions, v1alpha1.ConditionReady).Message).To(ContainSubstring(first.Name))

		// The holder deleted, the oldest of the others holds the number.
		Expect(k8s.Delete(ctx, first)).To(Succeed())
		Eventually(numberReady(ctx, second)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Eventually(numberReady(ctx, again)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonNumberConflict))
	})

	It("refuses a change of number or provider, and a number that is not E.164", func() {
		pn := phoneNumber(installationNamespace, "immutable-"+newNamespace(ctx), "+14155550202", "acme")
		pn.Spec.Provider = "twilio"
		Expect(k8s.Create(ctx, pn)).To(Succeed())
		err := update(ctx, pn, func(p *v1alpha1.PhoneNumber) { p.Spec.Number = "+14155550203" })
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("number is immutable"))
		err = update(ctx, pn, func(p *v1alpha1.PhoneNumber) { p.Spec.Provider = "" })
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(apierrors.IsInvalid(k8s.Create(ctx, phoneNumber(installationNamespace, "bad", "555-0100", "acme")))).To(BeTrue())
	})

	It("names no project it may claim for: without spec.project in the installation's namespace, another project in a project's", func() {
		ns := newNamespace(ctx)
		unassigned := phoneNumber(installationNamespace, "unassigned-"+ns, "+14155550204", "")
		Expect(k8s.Create(ctx, unassigned)).To(Succeed())
		Eventually(numberReady(ctx, unassigned)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonNumberInvalidProject))

		// A project cannot assign itself a number for another project, nor take one by naming itself.
		other := phoneNumber(ns, "for-another", "+14155550204", "someone-else")
		Expect(k8s.Create(ctx, other)).To(Succeed())
		Eventually(numberReady(ctx, other)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonNumberInvalidProject))
		mine := phoneNumber(ns, "mine", "+14155550204", ns)
		Expect(k8s.Create(ctx, mine)).To(Succeed())
		Eventually(numberReady(ctx, mine)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonNumberNotOwned))
	})

	It("makes a kubectl-applied Sender with another project's number unusable for sms, and lists the owner's Sender", func() {
		alpha, bravo := newNamespace(ctx), newNamespace(ctx)
		Expect(k8s.Create(ctx, project(alpha, "alpha"))).To(Succeed())
		Expect(k8s.Create(ctx, project(bravo, "bravo"))).To(Succeed())
		assigned := phoneNumber(installationNamespace, "alpha-"+alpha, "+14155550205", alpha)
		Expect(k8s.Create(ctx, assigned)).To(Succeed())
		Eventually(numberReady(ctx, assigned)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))

		owner := liveSender(alpha, "owner", "+14155550205")
		Expect(k8s.Create(ctx, owner)).To(Succeed())
		Eventually(numberOwned(ctx, owner)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonNumberOwned))
		Eventually(readyCondition(ctx, owner)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(owner.Status.Channels).To(Equal([]v1alpha1.Channel{v1alpha1.ChannelSMS, v1alpha1.ChannelEmail}))

		thief := liveSender(bravo, "thief", "+14155550205")
		Expect(k8s.Create(ctx, thief)).To(Succeed())
		Eventually(numberOwned(ctx, thief)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonNumberConflict))
		Expect(meta.FindStatusCondition(thief.Status.Conditions, v1alpha1.ConditionNumberOwned).Message).To(And(
			ContainSubstring("another project owns +14155550205"), Not(ContainSubstring(alpha))))
		// Its email goes on; the number's channels do not.
		Eventually(func() []v1alpha1.Channel {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(thief), thief)
			return thief.Status.Channels
		}).Should(Equal([]v1alpha1.Channel{v1alpha1.ChannelEmail}))
		// No claim of bravo's was made: it has no account of its own that could prove it.
		var claims v1alpha1.PhoneNumberList
		Expect(k8s.List(ctx, &claims, client.InNamespace(bravo))).To(Succeed())
		Expect(claims.Items).To(BeEmpty())

		Eventually(func() []string {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(assigned), assigned)
			return assigned.Status.Senders
		}).Should(Equal([]string{"owner"}))

		// The assignment moved to bravo, the number follows: bravo's sender sends, alpha's no more.
		Expect(update(ctx, assigned, func(p *v1alpha1.PhoneNumber) { p.Spec.Project = bravo })).To(Succeed())
		Eventually(numberOwned(ctx, thief)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonNumberOwned))
		Eventually(numberOwned(ctx, owner)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonNumberConflict))
		Eventually(func() []v1alpha1.Channel {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(owner), owner)
			return owner.Status.Channels
		}).Should(Equal([]v1alpha1.Channel{v1alpha1.ChannelEmail}))
	})

	It("proves a number of the project's own twilio account, and not one its account lacks", func() {
		peer := twiliotest.NewServer(GinkgoTB())
		pnSid := peer.AddIncomingNumber("+14155550206")
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, project(ns, "acme"))).To(Succeed())
		Expect(k8s.Create(ctx, credentialsSecret(ns, "twilio", map[string]string{"accountSid": goodSID, "authToken": goodToken}))).To(Succeed())
		Expect(k8s.Create(ctx, twilioProvider(ns, "twilio", peer.URL, "twilio"))).To(Succeed())

		s := liveSender(ns, "own", "+14155550206")
		Expect(k8s.Create(ctx, s)).To(Succeed())
		Eventually(numberOwned(ctx, s), "15s").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonNumberOwned))
		claim := &v1alpha1.PhoneNumber{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1alpha1.PhoneNumberName("+14155550206")}}
		Eventually(numberReady(ctx, claim)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(claim.Status.Ownership).To(Equal(v1alpha1.OwnershipProviderAccount))
		Expect(claim.Status.Account).NotTo(BeNil())
		Expect(claim.Status.Account.Provider).To(Equal("twilio"))
		Expect(claim.Status.Account.NumberSID).To(Equal(pnSid))
		Expect(claim.Status.Capabilities).To(Equal([]v1alpha1.PhoneCapability{v1alpha1.CapabilitySMS, v1alpha1.CapabilityMMS, v1alpha1.CapabilityVoice}))
		Expect(claim.Annotations[v1alpha1.PhoneNumberForSenderAnnotation]).To(Equal(ns + "/own"))
		Eventually(func() []v1alpha1.Channel {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
			return s.Status.Channels
		}).Should(ContainElement(v1alpha1.ChannelSMS))

		// A number the account does not hold stays unowned, and says why.
		lacking := liveSender(ns, "lacking", "+14155550207")
		Expect(k8s.Create(ctx, lacking)).To(Succeed())
		Eventually(numberOwned(ctx, lacking), "15s").Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonNumberNotOwned))
		Expect(meta.FindStatusCondition(lacking.Status.Conditions, v1alpha1.ConditionNumberOwned).Message).To(
			ContainSubstring("+14155550207 is not a number of the account of twilio Provider twilio"))
		Expect(lacking.Status.Channels).NotTo(ContainElement(v1alpha1.ChannelSMS))
	})

	It("lets every project use the sandbox's test numbers, and asks nothing of a sandbox sender", func() {
		alpha, bravo := newNamespace(ctx), newNamespace(ctx)
		for _, ns := range []string{alpha, bravo} {
			Expect(k8s.Create(ctx, project(ns, "p"))).To(Succeed())
			s := liveSender(ns, "test", "+15005550006")
			Expect(k8s.Create(ctx, s)).To(Succeed())
			Eventually(numberOwned(ctx, s)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonSandboxNumber))
			Eventually(readyCondition(ctx, s)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
			Expect(s.Status.Channels).To(ContainElement(v1alpha1.ChannelSMS))
		}
		demo := liveSender(alpha, "demo", "+14155550208")
		demo.Spec.Transport = v1alpha1.TransportSandbox
		Expect(k8s.Create(ctx, demo)).To(Succeed())
		Eventually(readyCondition(ctx, demo)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(meta.FindStatusCondition(demo.Status.Conditions, v1alpha1.ConditionNumberOwned)).To(BeNil())
		Expect(demo.Status.Channels).To(ContainElement(v1alpha1.ChannelSMS))
	})
})
