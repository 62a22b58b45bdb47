package controller_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

var _ = Describe("Sender webhook secret", func() {
	ctx := context.Background()

	secretOf := func(ns, name string) func() []byte {
		return func() []byte {
			var s corev1.Secret
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
				return nil
			}
			return s.Data["secret"]
		}
	}

	It("generates an owned, labelled secret, makes it again when deleted, and keeps it when the webhook goes", func() {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, project(ns, "acme"))).To(Succeed())
		s := sender(ns, "hooked", v1alpha1.ChannelSMS)
		s.Spec.Webhook = &v1alpha1.SenderWebhook{URL: "https://example.test/hook"}
		Expect(k8s.Create(ctx, s)).To(Succeed())

		Eventually(secretOf(ns, "hooked-webhook")).Should(WithTransform(func(b []byte) bool {
			return strings.HasPrefix(string(b), "whsec_") && len(b) == 38
		}, BeTrue()))
		var generated corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hooked-webhook"}, &generated)).To(Succeed())
		Expect(generated.Labels).To(HaveKeyWithValue(v1alpha1.SecretLabel, "true"))
		Expect(metav1.IsControlledBy(&generated, s)).To(BeTrue())
		Eventually(func() *v1alpha1.SecretKeyRef {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
			return s.Status.WebhookSecret
		}).Should(Equal(&v1alpha1.SecretKeyRef{Name: "hooked-webhook", Key: "secret"}))
		Eventually(readyCondition(ctx, s)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))

		first := generated.Data["secret"]
		Expect(k8s.Delete(ctx, &generated)).To(Succeed())
		Eventually(secretOf(ns, "hooked-webhook")).ShouldNot(Or(BeNil(), Equal(first)))

		// Without a webhook the status names no secret; the Secret stays with the Sender (a REST
		// PATCH that removes the webhook deletes it at once).
		Expect(update(ctx, s, func(s *v1alpha1.Sender) { s.Spec.Webhook = nil })).To(Succeed())
		Eventually(func() *v1alpha1.SecretKeyRef {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
			return s.Status.WebhookSecret
		}).Should(BeNil())
		Consistently(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hooked-webhook"}, &corev1.Secret{})
		}, "300ms").Should(Succeed())
	})

	It("uses a referenced secret only when it carries the label", func() {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, project(ns, "acme"))).To(Succeed())
		own := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-vault"},
			Data:       map[string][]byte{"signing": []byte("whsec_mine")},
		}
		Expect(k8s.Create(ctx, own)).To(Succeed())
		s := sender(ns, "hooked", v1alpha1.ChannelSMS)
		s.Spec.Webhook = &v1alpha1.SenderWebhook{URL: "https://example.test/hook",
			SecretRef: &v1alpha1.SecretKeyRef{Name: "from-vault", Key: "signing"}}
		Expect(k8s.Create(ctx, s)).To(Succeed())
		Eventually(readyCondition(ctx, s)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonWebhookSecretNotFound))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hooked-webhook"}, &corev1.Secret{})).NotTo(Succeed())

		own.Labels = map[string]string{v1alpha1.SecretLabel: "true"}
		Expect(k8s.Update(ctx, own)).To(Succeed())
		Eventually(readyCondition(ctx, s)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(s.Status.WebhookSecret).To(Equal(&v1alpha1.SecretKeyRef{Name: "from-vault", Key: "signing"}))
	})
})
