package controller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// sender returns a Sender with the given channels configured and activated.
func sender(ns, name string, channels ...v1alpha1.Channel) *v1alpha1.Sender {
	s := &v1alpha1.Sender{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.SenderSpec{DisplayName: "Support"},
	}
	for _, c := range channels {
		switchOn(&s.Spec, c)
	}
	return s
}

func switchOn(spec *v1alpha1.SenderSpec, c v1alpha1.Channel) {
	account := func(id string) *v1alpha1.ConnectedAccount {
		return &v1alpha1.ConnectedAccount{AccountID: id, Active: true}
	}
	switch c {
	case v1alpha1.ChannelSMS:
		spec.PhoneNumber, spec.SMS = "+15005550006", &v1alpha1.Activation{Active: true}
	case v1alpha1.ChannelSMSOneway:
		spec.SMSOneway = &v1alpha1.Enablement{Enabled: true}
	case v1alpha1.ChannelVoice:
		spec.PhoneNumber, spec.Voice = "+15005550006", &v1alpha1.Enablement{Enabled: true}
	case v1alpha1.ChannelWhatsApp:
		spec.WhatsApp = account("wa-1")
	case v1alpha1.ChannelTelegram:
		spec.Telegram = account("tg-1")
	case v1alpha1.ChannelInstagram:
		spec.Instagram = account("ig-1")
	case v1alpha1.ChannelMessenger:
		spec.Messenger = account("page-1")
	case v1alpha1.ChannelEmail:
		spec.Email = &v1alpha1.EmailSettings{Address: "hello@acme.example"}
	}
}

var _ = Describe("Sender", func() {
	ctx := context.Background()

	It("waits for its namespace's Project, then turns its channels on", func() {
		ns := newNamespace(ctx)
		s := sender(ns, "support", v1alpha1.ChannelWhatsApp, v1alpha1.ChannelSMS)
		Expect(k8s.Create(ctx, s)).To(Succeed())
		Eventually(readyCondition(ctx, s)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonProjectNotFound))
		Expect(s.Spec.Transport).To(Equal(v1alpha1.TransportProviders)) // live messages go through Providers by default
		Expect(s.Status.Channels).To(BeEmpty())

		Expect(k8s.Create(ctx, project(ns, "acme"))).To(Succeed())
		Eventually(readyCondition(ctx, s)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		// The spec's channel order, whatever order they were asked in.
		Expect(s.Status.Channels).To(Equal([]v1alpha1.Channel{v1alpha1.ChannelSMS, v1alpha1.ChannelWhatsApp}))
		Expect(s.Status.ObservedGeneration).To(Equal(s.Generation))
	})

	It("follows a channel being switched off", func() {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, project(ns, "acme"))).To(Succeed())
		s := sender(ns, "support", v1alpha1.ChannelSMS, v1alpha1.ChannelSMSOneway)
		Expect(k8s.Create(ctx, s)).To(Succeed())
		Eventually(func() []v1alpha1.Channel {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
			return s.Status.Channels
		}).Should(HaveLen(2))

		Expect(update(ctx, s, func(s *v1alpha1.Sender) { s.Spec.SMSOneway.Enabled = false })).To(Succeed())
		Eventually(func() []v1alpha1.Channel {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
			return s.Status.Channels
		}).Should(Equal([]v1alpha1.Channel{v1alpha1.ChannelSMS}))
	})

	It("refuses voice without a phone number, a malformed number and a malformed email address", func() {
		ns := newNamespace(ctx)
		s := sender(ns, "bad")
		s.Spec.Voice = &v1alpha1.Enablement{Enabled: true}
		err := k8s.Create(ctx, s)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("voice needs a phone number"))

		s = sender(ns, "bad")
		s.Spec.PhoneNumber = "555-1234"
		Expect(apierrors.IsInvalid(k8s.Create(ctx, s))).To(BeTrue())

		s = sender(ns, "bad")
		s.Spec.Email = &v1alpha1.EmailSettings{Address: "not-an-address"}
		Expect(apierrors.IsInvalid(k8s.Create(ctx, s))).To(BeTrue())

		// Removing the number from a sender with voice on is refused too.
		s = sender(ns, "caller", v1alpha1.ChannelVoice)
		Expect(k8s.Create(ctx, s)).To(Succeed())
		Expect(apierrors.IsInvalid(update(ctx, s, func(s *v1alpha1.Sender) { s.Spec.PhoneNumber = "" }))).To(BeTrue())
	})

	It("turns on only what is configured and activated", func() {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, project(ns, "acme"))).To(Succeed())
		s := sender(ns, "partial")
		s.Spec.Transport = v1alpha1.TransportSandbox                    // it simulates inbound mail; a real domain needs its MX verified
		s.Spec.PhoneNumber = "+15005550006"                             // a number alone: no sms, no voice
		s.Spec.WhatsApp = &v1alpha1.ConnectedAccount{AccountID: "wa-1"} // connected, not activated
		s.Spec.Telegram = &v1alpha1.ConnectedAccount{AccountID: "tg-1", Active: true}
		s.Spec.Email = &v1alpha1.EmailSettings{Address: "hi@acme.example", CatchAllEnabled: true} // catch-all without receiving
		Expect(k8s.Create(ctx, s)).To(Succeed())
		Eventually(readyCondition(ctx, s)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(s.Status.Channels).To(Equal([]v1alpha1.Channel{v1alpha1.ChannelTelegram, v1alpha1.ChannelEmail}))
		Expect(s.Status.EmailReceivingEnabled).To(BeFalse())
		Expect(s.Status.EmailCatchAllEnabled).To(BeFalse())

		Expect(update(ctx, s, func(s *v1alpha1.Sender) {
			s.Spec.SMS = &v1alpha1.Activation{Active: true}
			s.Spec.WhatsApp.Active = true
			s.Spec.Email.ReceivingEnabled = true
		})).To(Succeed())
		Eventually(func() []v1alpha1.Channel {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
			return s.Status.Channels
		}).Should(Equal([]v1alpha1.Channel{v1alpha1.ChannelSMS, v1alpha1.ChannelWhatsApp, v1alpha1.ChannelTelegram, v1alpha1.ChannelEmail}))
		Expect(s.Status.EmailReceivingEnabled).To(BeTrue())
		Expect(s.Status.EmailCatchAllEnabled).To(BeTrue())
	})

	It("keeps one default per project: the oldest that asks", func() {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, project(ns, "acme"))).To(Succeed())
		first, second := sender(ns, "first", v1alpha1.ChannelSMSOneway), sender(ns, "second", v1alpha1.ChannelSMSOneway)
		first.Spec.Default, second.Spec.Default = true, true
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Expect(k8s.Create(ctx, second)).To(Succeed())
		isDefault := func(s *v1alpha1.Sender) func() bool {
			return func() bool { _ = k8s.Get(ctx, client.ObjectKeyFromObject(s), s); return s.Status.IsDefault }
		}
		Eventually(isDefault(first)).Should(BeTrue())
		Consistently(isDefault(second), "300ms").Should(BeFalse())

		Expect(update(ctx, first, func(s *v1alpha1.Sender) { s.Spec.Default = false })).To(Succeed())
		Eventually(isDefault(second)).Should(BeTrue())
		Eventually(isDefault(first)).Should(BeFalse())
	})

	Describe("webhook signature version", func() {
		withWebhook := func(ns string, version v1alpha1.SignatureVersion) *v1alpha1.Sender {
			s := sender(ns, "hooked", v1alpha1.ChannelSMS)
			s.Spec.Webhook = &v1alpha1.SenderWebhook{URL: "https://example.test/hook", SignatureVersion: version}
			Expect(k8s.Create(ctx, s)).To(Succeed())
			return s
		}
		setVersion := func(s *v1alpha1.Sender, version v1alpha1.SignatureVersion) error {
			return update(ctx, s, func(s *v1alpha1.Sender) { s.Spec.Webhook.SignatureVersion = version })
		}

		It("defaults a new webhook to v2", func() {
			s := sender(newNamespace(ctx), "hooked")
			s.Spec.Webhook = &v1alpha1.SenderWebhook{URL: "https://example.test/hook"}
			Expect(k8s.Create(ctx, s)).To(Succeed())
			Expect(s.Spec.Webhook.SignatureVersion).To(Equal(v1alpha1.SignatureV2))
			Expect(*s.Spec.Webhook.Active).To(BeTrue())
		})

		It("refuses v1 straight to v2, as kubectl would be refused", func() {
			s := withWebhook(newNamespace(ctx), v1alpha1.SignatureV1)
			err := setVersion(s, v1alpha1.SignatureV2)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring("only through v1+v2"))
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			Expect(s.Spec.Webhook.SignatureVersion).To(Equal(v1alpha1.SignatureV1))
		})

		It("refuses v2 straight back to v1", func() {
			s := withWebhook(newNamespace(ctx), v1alpha1.SignatureV2)
			Expect(apierrors.IsInvalid(setVersion(s, v1alpha1.SignatureV1))).To(BeTrue())
		})

		It("moves v1 → v1+v2 → v2 and rolls back to v1+v2", func() {
			s := withWebhook(newNamespace(ctx), v1alpha1.SignatureV1)
			Expect(setVersion(s, v1alpha1.SignatureV1V2)).To(Succeed())
			Expect(setVersion(s, v1alpha1.SignatureV2)).To(Succeed())
			Expect(setVersion(s, v1alpha1.SignatureV1V2)).To(Succeed())
		})

		It("refuses a webhook URL that is not an http(s) URL", func() {
			s := sender(newNamespace(ctx), "hooked")
			s.Spec.Webhook = &v1alpha1.SenderWebhook{URL: "ftp://example.test/hook"}
			Expect(apierrors.IsInvalid(k8s.Create(ctx, s))).To(BeTrue())
		})
	})
})
