package controller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

// readyCondition fetches obj and returns its Ready condition (nil while there is none).
func readyCondition(ctx context.Context, obj client.Object) func() *metav1.Condition {
	return func() *metav1.Condition {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil
		}
		switch o := obj.(type) {
		case *v1alpha1.Project:
			return meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionReady)
		case *v1alpha1.Sender:
			return meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionReady)
		case *v1alpha1.RiskPolicy:
			return meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionReady)
		case *v1alpha1.Agent:
			return meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionReady)
		case *v1alpha1.Function:
			return meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionReady)
		}
		return nil
	}
}

func haveReady(status metav1.ConditionStatus, reason string) OmegaMatcher {
	return And(Not(BeNil()), HaveField("Status", status), HaveField("Reason", reason))
}

func project(ns, name string) *v1alpha1.Project {
	return &v1alpha1.Project{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ProjectSpec{DisplayName: "Acme"},
	}
}

var _ = Describe("Project", func() {
	ctx := context.Background()

	It("becomes Ready with the generation it observed and the plan defaulted", func() {
		ns := newNamespace(ctx)
		p := project(ns, "acme")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(readyCondition(ctx, p)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(p.Spec.Plan).To(Equal(v1alpha1.PlanFree))
		Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
		Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady).ObservedGeneration).To(Equal(p.Generation))

		Expect(update(ctx, p, func(p *v1alpha1.Project) { p.Spec.Plan = v1alpha1.PlanPaid })).To(Succeed())
		Eventually(func() int64 {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(p), p)
			return p.Status.ObservedGeneration
		}).Should(Equal(int64(2)))
	})

	It("marks a second Project in the namespace as a duplicate, and lets it take over when the first goes", func() {
		ns := newNamespace(ctx)
		first := project(ns, "first")
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(readyCondition(ctx, first)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))

		second := project(ns, "second")
		Expect(k8s.Create(ctx, second)).To(Succeed())
		Eventually(readyCondition(ctx, second)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonDuplicateProject))
		Consistently(readyCondition(ctx, first), "500ms").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))

		Expect(k8s.Delete(ctx, first)).To(Succeed())
		Eventually(readyCondition(ctx, second)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
	})

	It("waits for a sub-account's parent to exist", func() {
		parentNS := newNamespace(ctx)
		ns := newNamespace(ctx)
		child := project(ns, "child")
		child.Spec.Parent = parentNS
		Expect(k8s.Create(ctx, child)).To(Succeed())
		Eventually(readyCondition(ctx, child)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonParentNotFound))

		Expect(k8s.Create(ctx, project(parentNS, "parent"))).To(Succeed())
		Eventually(readyCondition(ctx, child)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
	})

	It("refuses to change a sub-account's parent, as kubectl would be refused", func() {
		ns := newNamespace(ctx)
		child := project(ns, "child")
		child.Spec.Parent = "team-a"
		Expect(k8s.Create(ctx, child)).To(Succeed())

		err := update(ctx, child, func(p *v1alpha1.Project) { p.Spec.Parent = "team-b" })
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("parent is immutable"))

		err = update(ctx, child, func(p *v1alpha1.Project) { p.Spec.Parent = "" })
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "removing the parent must be refused too, got %v", err)

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(child), child)).To(Succeed())
		Expect(child.Spec.Parent).To(Equal("team-a"))
	})

	It("refuses to add a parent to a project that had none", func() {
		ns := newNamespace(ctx)
		p := project(ns, "solo")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Expect(apierrors.IsInvalid(update(ctx, p, func(p *v1alpha1.Project) { p.Spec.Parent = "team-a" }))).To(BeTrue())
	})
})

var _ = Describe("Project request rate", func() {
	ctx := context.Background()

	rate := func(p *v1alpha1.Project) func() int32 {
		return func() int32 {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(p), p)
			return p.Status.RequestRateLimit
		}
	}

	It("raises every project of a team when one is verified, and keeps a higher limit set by hand", func() {
		team := "team-" + newNamespace(ctx)
		a, b := project(newNamespace(ctx), "a"), project(newNamespace(ctx), "b")
		a.Spec.Team, b.Spec.Team = team, team
		manual := int32(5000)
		b.Spec.RequestRateLimit = &manual
		Expect(k8s.Create(ctx, a)).To(Succeed())
		Expect(k8s.Create(ctx, b)).To(Succeed())
		Eventually(rate(a)).Should(Equal(v1alpha1.RequestRateDefault))
		Eventually(rate(b)).Should(Equal(int32(5000)))

		Expect(update(ctx, b, func(p *v1alpha1.Project) { p.Spec.Verification = v1alpha1.VerificationBusinessApproved })).To(Succeed())
		Eventually(rate(a)).Should(Equal(v1alpha1.RequestRateBusinessApproved))
		Consistently(rate(b), "300ms").Should(Equal(int32(5000)))

		Expect(update(ctx, a, func(p *v1alpha1.Project) { p.Spec.Verification = v1alpha1.VerificationTenDLCBrand })).To(Succeed())
		Eventually(rate(a)).Should(Equal(v1alpha1.RequestRateTenDLCBrand))
		Consistently(rate(b), "300ms").Should(Equal(int32(5000)))

		// A project that leaves the team leaves its tier behind.
		Expect(update(ctx, a, func(p *v1alpha1.Project) { p.Spec.Team = "" })).To(Succeed())
		Expect(update(ctx, b, func(p *v1alpha1.Project) { p.Spec.RequestRateLimit = nil })).To(Succeed())
		Eventually(rate(b)).Should(Equal(v1alpha1.RequestRateBusinessApproved))
	})

	It("refuses a hand-set limit below 1", func() {
		p := project(newNamespace(ctx), "p")
		zero := int32(0)
		p.Spec.RequestRateLimit = &zero
		Expect(apierrors.IsInvalid(k8s.Create(ctx, p))).To(BeTrue())
	})
})

var _ = Describe("Project email settings", func() {
	ctx := context.Background()

	It("takes an unsubscribeScope of broadcasts or all, and refuses any other", func() {
		p := project(newNamespace(ctx), "p")
		p.Spec.Email = &v1alpha1.ProjectEmail{UnsubscribeScope: "everything"}
		err := k8s.Create(ctx, p)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.email.unsubscribeScope"))

		p.Spec.Email.UnsubscribeScope = v1alpha1.UnsubscribeScopeAll
		Expect(k8s.Create(ctx, p)).To(Succeed())
		err = update(ctx, p, func(p *v1alpha1.Project) { p.Spec.Email.UnsubscribeScope = "All" })
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(update(ctx, p, func(p *v1alpha1.Project) { p.Spec.Email.UnsubscribeScope = v1alpha1.UnsubscribeScopeBroadcasts })).To(Succeed())
	})
})
