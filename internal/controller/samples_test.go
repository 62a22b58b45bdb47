package controller_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
)

var _ = Describe("config/samples", func() {
	ctx := context.Background()

	It("apply as they are and become Ready", func() {
		read := func(name string, into any) {
			b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", name))
			Expect(err).NotTo(HaveOccurred())
			Expect(yaml.UnmarshalStrict(b, into)).To(Succeed())
		}
		var project v1alpha1.Project
		var sender v1alpha1.Sender
		read("messaging_v1alpha1_project.yaml", &project)
		read("messaging_v1alpha1_sender.yaml", &sender)

		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: project.Namespace}})).To(Succeed())
		Expect(k8s.Create(ctx, &project)).To(Succeed())
		Expect(k8s.Create(ctx, &sender)).To(Succeed())
		Eventually(readyCondition(ctx, &project)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Eventually(readyCondition(ctx, &sender)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(sender.Status.Channels).To(ConsistOf(v1alpha1.ChannelSMS, v1alpha1.ChannelWhatsApp, v1alpha1.ChannelEmail))
	})
})
