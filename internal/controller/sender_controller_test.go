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

func sender(ns, name string, channels ...v1alpha1.Channel) *v1alpha1.Sender {
	return &v1alpha1.Sender{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.SenderSpec{DisplayName: "Support", Channels: channels},
	}
}

var _ = Describe("Sender", func() {
	ctx := context.Background()

	It("waits for its namespace's Project, then turns its channels on", func() {
		ns := newNamespace(ctx)
		s := sender(ns, "support", v1alpha1.ChannelWhatsApp, v1alpha1.ChannelSMS)
		Expect(k8s.Create(ctx, s)).To(Succeed())
		Eventually(readyCondition(ctx, s)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonProjectNotFound))
		Expect(s.Spec.Transport).To(Equal(v1alpha1.TransportSandbox))
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

		Expect(update(ctx, s, func(s *v1alpha1.Sender) { s.Spec.Channels = []v1alpha1.Channel{v1alpha1.ChannelSMS} })).To(Succeed())
		Eventually(func() []v1alpha1.Channel {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
			return s.Status.Channels
		}).Should(Equal([]v1alpha1.Channel{v1alpha1.ChannelSMS}))
	})

	It("refuses an unknown channel and a malformed phone number", func() {
		ns := newNamespace(ctx)
		s := sender(ns, "bad", "fax")
		Expect(apierrors.IsInvalid(k8s.Create(ctx, s))).To(BeTrue())

		s = sender(ns, "bad")
		s.Spec.PhoneNumber = "555-1234"
		Expect(apierrors.IsInvalid(k8s.Create(ctx, s))).To(BeTrue())
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
