package controller_test

import (
	"context"
	"net/http"
	"net/http/httptest"

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

// providerReady fetches p and returns its Ready condition (nil while there is none).
func providerReady(ctx context.Context, p *v1alpha1.Provider) func() *metav1.Condition {
	return func() *metav1.Condition {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return nil
		}
		return meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
	}
}

func credentialsSecret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
		StringData: data,
	}
}

func twilioProvider(ns, name, baseURL, secret string) *v1alpha1.Provider {
	return &v1alpha1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ProviderSpec{Type: v1alpha1.ProviderTwilio, BaseURL: baseURL, Default: true,
			SecretRef: &v1alpha1.ProviderSecretRef{Name: secret}},
	}
}

// The account the twiliotest peer knows.
const (
	goodSID   = twiliotest.AccountSID
	goodToken = twiliotest.AuthToken
)

var _ = Describe("Provider", func() {
	ctx := context.Background()
	var twilio *twiliotest.Server
	BeforeEach(func() { twilio = twiliotest.NewServer(GinkgoTB()) })

	It("is Ready when the provider accepts the Secret's credentials", func() {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, credentialsSecret(ns, "twilio", map[string]string{"accountSid": goodSID, "authToken": goodToken}))).To(Succeed())
		p := twilioProvider(ns, "twilio", twilio.URL, "twilio")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(providerReady(ctx, p), "10s").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(p.Status.Account).To(Equal(twiliotest.FriendlyName + " (" + goodSID + ")"))
		Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
	})

	It("reports credentials the provider rejects, and is Ready once the Secret is corrected", func() {
		ns := newNamespace(ctx)
		s := credentialsSecret(ns, "twilio", map[string]string{"accountSid": goodSID, "authToken": "wrong"})
		Expect(k8s.Create(ctx, s)).To(Succeed())
		p := twilioProvider(ns, "twilio", twilio.URL, "twilio")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(providerReady(ctx, p), "10s").Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonCredentialsRejected))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		Expect(c.Message).To(And(
			ContainSubstring(`twilio rejected the credentials in Secret "twilio"`),
			ContainSubstring("the account SID or auth token was rejected"),
			ContainSubstring("correct accountSid and authToken in the Secret"),
			Not(ContainSubstring("wrong"))))
		Expect(p.Status.Account).To(BeEmpty())

		Expect(update(ctx, s, func(s *corev1.Secret) { s.StringData = map[string]string{"authToken": goodToken} })).To(Succeed())
		// The last check was moments ago: the new Secret waits its turn, visibly.
		Eventually(providerReady(ctx, p), "5s").Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonCheckPending))
		Eventually(providerReady(ctx, p), "30s").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
	})

	It("reports a provider it cannot reach", func() {
		ns := newNamespace(ctx)
		down := httptest.NewServer(http.NotFoundHandler())
		down.Close()
		Expect(k8s.Create(ctx, credentialsSecret(ns, "twilio", map[string]string{"accountSid": goodSID, "authToken": goodToken}))).To(Succeed())
		p := twilioProvider(ns, "twilio", down.URL, "twilio")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(providerReady(ctx, p), "10s").Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonProviderUnreachable))
		Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady).Message).To(ContainSubstring(down.URL))
	})

	It("reports a missing Secret, and is Ready once it is created with the label", func() {
		ns := newNamespace(ctx)
		p := twilioProvider(ns, "twilio", twilio.URL, "twilio-credentials")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(providerReady(ctx, p)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound))
		Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady).Message).To(And(
			ContainSubstring(`Secret "twilio-credentials" not found in namespace `+ns),
			ContainSubstring(`messaging.switchboard.io/secret: "true"`)))

		// Without the label Switchboard does not see it.
		unlabelled := credentialsSecret(ns, "twilio-credentials", map[string]string{"accountSid": goodSID, "authToken": goodToken})
		unlabelled.Labels = nil
		Expect(k8s.Create(ctx, unlabelled)).To(Succeed())
		Consistently(providerReady(ctx, p), "1s").Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound))

		Expect(update(ctx, unlabelled, func(s *corev1.Secret) { s.Labels = map[string]string{v1alpha1.SecretLabel: "true"} })).To(Succeed())
		Eventually(providerReady(ctx, p), "10s").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
	})

	It("names the key a Secret lacks", func() {
		ns := newNamespace(ctx)
		s := credentialsSecret(ns, "twilio", map[string]string{"accountSid": goodSID})
		Expect(k8s.Create(ctx, s)).To(Succeed())
		p := twilioProvider(ns, "twilio", twilio.URL, "twilio")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(providerReady(ctx, p)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonSecretIncomplete))
		Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady).Message).To(
			Equal(`Secret "twilio" has no key authToken: a twilio Provider needs accountSid and authToken`))

		Expect(update(ctx, s, func(s *corev1.Secret) { s.StringData = map[string]string{"authToken": goodToken} })).To(Succeed())
		Eventually(providerReady(ctx, p), "10s").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
	})

	It("is Ready without a check for types that have none", func() {
		ns := newNamespace(ctx)
		p := &v1alpha1.Provider{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "telegram"},
			Spec:       v1alpha1.ProviderSpec{Type: v1alpha1.ProviderTelegram},
		}
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(providerReady(ctx, p)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady).Message).To(
			Equal("credentials are not checked for telegram"))
	})

	It("keeps its type", func() {
		ns := newNamespace(ctx)
		p := twilioProvider(ns, "twilio", "", "twilio")
		Expect(k8s.Create(ctx, p)).To(Succeed())
		err := update(ctx, p, func(p *v1alpha1.Provider) { p.Spec.Type = v1alpha1.ProviderMeta })
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("type is immutable"))
		// Other fields still change.
		Expect(update(ctx, p, func(p *v1alpha1.Provider) { p.Spec.Default = false })).To(Succeed())
	})

	It("refuses what CEL and the schema refuse", func() {
		ns := newNamespace(ctx)
		invalid := func(p *v1alpha1.Provider, fragment string) {
			GinkgoHelper()
			err := k8s.Create(ctx, p)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(fragment))
		}
		noSecret := twilioProvider(ns, "no-secret", "", "x")
		noSecret.Spec.SecretRef = nil
		invalid(noSecret, "needs secretRef")

		unknown := twilioProvider(ns, "pigeon", "", "x")
		unknown.Spec.Type = "carrier-pigeon"
		invalid(unknown, `Unsupported value: "carrier-pigeon"`)

		relative := twilioProvider(ns, "relative", "/2010-04-01", "x")
		invalid(relative, "baseURL must be an absolute URL")

		ftp := twilioProvider(ns, "ftp", "ftp://twilio.example", "x")
		invalid(ftp, "baseURL must be an absolute URL")

		smtpOverHTTP := &v1alpha1.Provider{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "smtp-http"},
			Spec: v1alpha1.ProviderSpec{Type: v1alpha1.ProviderSMTP, BaseURL: "https://mail.example",
				SecretRef: &v1alpha1.ProviderSecretRef{Name: "smtp"}},
		}
		invalid(smtpOverHTTP, "baseURL of an smtp Provider is an smtp:// or smtps:// URL")

		smtp := smtpOverHTTP.DeepCopy()
		smtp.Name, smtp.Spec.BaseURL = "smtp", "smtp://mail.example:587"
		Expect(k8s.Create(ctx, smtp)).To(Succeed())
		regional := twilioProvider(ns, "regional", "https://api.dublin.ie1.twilio.com", "x")
		Expect(k8s.Create(ctx, regional)).To(Succeed())
	})
})
