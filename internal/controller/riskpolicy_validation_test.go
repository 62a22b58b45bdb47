package controller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

var _ = Describe("RiskPolicy", func() {
	ctx := context.Background()

	// Holds are looked for among those of the last 30 days (their table is partitioned by day):
	// a review window is at most a week.
	It("refuses a review window longer than 7 days, as kubectl would be refused", func() {
		ns := newNamespace(ctx)
		rp := &v1alpha1.RiskPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rules"},
			Spec: v1alpha1.RiskPolicySpec{ReviewWindow: &metav1.Duration{Duration: 168*time.Hour + time.Second}}}
		err := k8s.Create(ctx, rp)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("reviewWindow is at most 168h"))

		rp.Spec.ReviewWindow = &metav1.Duration{Duration: 168 * time.Hour}
		Expect(k8s.Create(ctx, rp)).To(Succeed())
	})
})
