package controller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

var _ = Describe("Webhook", func() {
	ctx := context.Background()
	webhook := func(ns, name string, kind v1alpha1.WebhookKind) *v1alpha1.Webhook {
		return &v1alpha1.Webhook{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.WebhookSpec{Kind: kind, URL: "https://hooks.example.test/v2"},
		}
	}
	webhookReady := func(w *v1alpha1.Webhook) func() *metav1.Condition {
		return func() *metav1.Condition {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
				return nil
			}
			for i := range w.Status.Conditions {
				if w.Status.Conditions[i].Type == v1alpha1.ConditionReady {
					return &w.Status.Conditions[i]
				}
			}
			return nil
		}
	}

	It("gets a generated signing secret and is Ready in a project", func() {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, project(ns, "acme"))).To(Succeed())
		w := webhook(ns, "v2", v1alpha1.WebhookKindV2)
		Expect(k8s.Create(ctx, w)).To(Succeed())
		Eventually(webhookReady(w)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(w.Spec.SignatureVersion).To(Equal(v1alpha1.SignatureV2))
		Expect(w.Status.WebhookSecret).To(Equal(&v1alpha1.SecretKeyRef{Name: "webhook-v2", Key: "secret"}))
		var s corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "webhook-v2"}, &s)).To(Succeed())
		Expect(metav1.IsControlledBy(&s, w)).To(BeTrue())
	})

	It("is named after its kind: one of each per project", func() {
		ns := newNamespace(ctx)
		Expect(apierrors.IsInvalid(k8s.Create(ctx, webhook(ns, "second", v1alpha1.WebhookKindV2)))).To(BeTrue())
		Expect(apierrors.IsInvalid(k8s.Create(ctx, webhook(ns, "v2", v1alpha1.WebhookKindInvitations)))).To(BeTrue())
		Expect(k8s.Create(ctx, webhook(ns, "invitations", v1alpha1.WebhookKindInvitations))).To(Succeed())
	})

	It("refuses v2 straight to v1, and a change of kind", func() {
		ns := newNamespace(ctx)
		w := webhook(ns, "v2", v1alpha1.WebhookKindV2)
		Expect(k8s.Create(ctx, w)).To(Succeed())
		err := update(ctx, w, func(w *v1alpha1.Webhook) { w.Spec.SignatureVersion = v1alpha1.SignatureV1 })
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(update(ctx, w, func(w *v1alpha1.Webhook) { w.Spec.SignatureVersion = v1alpha1.SignatureV1V2 })).To(Succeed())
		Expect(update(ctx, w, func(w *v1alpha1.Webhook) { w.Spec.SignatureVersion = v1alpha1.SignatureV1 })).To(Succeed())
	})
})
