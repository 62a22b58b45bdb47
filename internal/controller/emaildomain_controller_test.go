package controller_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/domainverify"
	"github.com/switchboard-io/switchboard/internal/domainverify/domainverifytest"
)

// domainEvents lists the domain events recorded for the project's v2 webhook, oldest first.
func domainEvents(ctx context.Context, project string) []string {
	rows, err := pool.Query(ctx, `SELECT event, data FROM webhook_deliveries WHERE project = $1 AND endpoint_kind = 'project_v2'
		ORDER BY created_at, id`, project)
	Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	var out []string
	for rows.Next() {
		var event string
		var data []byte
		Expect(rows.Scan(&event, &data)).To(Succeed())
		var d map[string]any
		Expect(json.Unmarshal(data, &d)).To(Succeed())
		out = append(out, event+" "+d["status"].(string))
	}
	return out
}

// verifyNow asks the controller to check at once, as `kubectl annotate` would.
func verifyNow(ctx context.Context, d *v1alpha1.EmailDomain) {
	Expect(update(ctx, d, func(d *v1alpha1.EmailDomain) {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[domainverify.VerifyRequestedAnnotation] = time.Now().Format(time.RFC3339Nano)
	})).To(Succeed())
}

func domainState(ctx context.Context, d *v1alpha1.EmailDomain) func() v1alpha1.EmailDomainState {
	return func() v1alpha1.EmailDomainState {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return ""
		}
		if d.Status.VerifyRequestedAt != d.Annotations[domainverify.VerifyRequestedAnnotation] {
			return "" // the last verify request is not taken in yet
		}
		return d.Status.State
	}
}

var _ = Describe("EmailDomain", func() {
	ctx := context.Background()

	It("generates its key, lists its records, verifies when they are published and announces each transition once", func() {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, &v1alpha1.Webhook{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "v2"},
			Spec: v1alpha1.WebhookSpec{Kind: v1alpha1.WebhookKindV2, URL: "https://hooks.example.test/in"}})).To(Succeed())
		d := &v1alpha1.EmailDomain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme"},
			Spec: v1alpha1.EmailDomainSpec{Domain: ns + ".acme.test", Receiving: true}}
		Expect(k8s.Create(ctx, d)).To(Succeed())

		Eventually(func() []v1alpha1.DNSRecord {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(d), d)
			return d.Status.Records
		}).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
		Expect(d.Status.State).To(Equal(v1alpha1.DomainPending))
		Expect(*d.Status.Verifiable).To(BeTrue())
		Expect(meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionReady)).To(haveReady(metav1.ConditionFalse, "VerificationPending"))

		// The key lives in a Secret the domain owns, labelled for Switchboard's cache; never in status.
		var secret corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "acme-dkim"}, &secret)).To(Succeed())
		Expect(metav1.IsControlledBy(&secret, d)).To(BeTrue())
		Expect(secret.Labels).To(HaveKeyWithValue(v1alpha1.SecretLabel, "true"))
		Expect(string(secret.Data[domainverify.SecretKeyPrivateKey])).To(HavePrefix("-----BEGIN PRIVATE KEY-----"))
		Expect(d.Status.DKIMSelector).To(Equal(string(secret.Data[domainverify.SecretKeySelector])))
		status, _ := json.Marshal(d.Status)
		Expect(string(status)).NotTo(ContainSubstring("PRIVATE KEY"))

		// Publishing the required records verifies the domain; the inbound MX is separate.
		domainverifytest.PublishRequired(dnsServer, d, false)
		verifyNow(ctx, d)
		Eventually(domainState(ctx, d)).Should(Equal(v1alpha1.DomainVerified))
		Expect(d.Status.Verified).To(BeTrue())
		Expect(meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionReady)).To(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(meta.IsStatusConditionTrue(d.Status.Conditions, "DKIMVerified")).To(BeTrue())
		Expect(meta.IsStatusConditionTrue(d.Status.Conditions, "InboundVerified")).To(BeFalse())
		Expect(d.Receives()).To(BeFalse())
		Eventually(func() []string { return domainEvents(ctx, ns) }).Should(Equal([]string{"domain.verified verified"}))

		// More checks of an unchanged domain announce nothing more.
		domainverifytest.PublishRequired(dnsServer, d, true)
		verifyNow(ctx, d)
		Eventually(func() bool {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(d), d)
			return d.Receives()
		}).Should(BeTrue())
		Expect(meta.IsStatusConditionTrue(d.Status.Conditions, "InboundVerified")).To(BeTrue())
		Consistently(func() []string { return domainEvents(ctx, ns) }, "500ms").Should(Equal([]string{"domain.verified verified"}))

		// The DKIM record removed: the domain fails at once (it was verified), announced once.
		dnsServer.RemoveAll(d.Status.Records[0].Name)
		verifyNow(ctx, d)
		Eventually(domainState(ctx, d)).Should(Equal(v1alpha1.DomainFailed))
		Expect(meta.FindStatusCondition(d.Status.Conditions, "DKIMVerified")).To(haveReady(metav1.ConditionFalse, "RecordNotFound"))
		verifyNow(ctx, d)
		Eventually(func() []string { return domainEvents(ctx, ns) }).Should(Equal([]string{"domain.verified verified", "domain.failed failed"}))
		Consistently(func() []string { return domainEvents(ctx, ns) }, "500ms").Should(HaveLen(2))

		// A deleted key is made again, with a record of its own to publish.
		oldValue := d.Status.Records[0].Value
		Expect(k8s.Delete(ctx, &secret)).To(Succeed())
		Eventually(func() string {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(d), d)
			return d.Status.Records[0].Value
		}).ShouldNot(Equal(oldValue))
	})

	It("is not verifiable when its key cannot be used, or when the project has the domain already", func() {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-key",
			Labels: map[string]string{v1alpha1.SecretLabel: "true"}}, StringData: map[string]string{"key.pem": "not a key"}})).To(Succeed())
		own := &v1alpha1.EmailDomain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own"},
			Spec: v1alpha1.EmailDomainSpec{Domain: "own.acme.test",
				DKIM: &v1alpha1.DKIMSettings{Selector: "s1", SecretRef: v1alpha1.SecretKeyRef{Name: "own-key", Key: "key.pem"}}}}
		Expect(k8s.Create(ctx, own)).To(Succeed())
		Eventually(func() *bool {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(own), own)
			return own.Status.Verifiable
		}).Should(HaveValue(BeFalse()))
		Expect(own.Status.SetupError).To(ContainSubstring("not PEM-encoded"))
		Expect(own.Status.Records).To(BeEmpty())
		Expect(meta.FindStatusCondition(own.Status.Conditions, v1alpha1.ConditionReady)).To(haveReady(metav1.ConditionFalse, "NotVerifiable"))

		first := &v1alpha1.EmailDomain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}, Spec: v1alpha1.EmailDomainSpec{Domain: "dup.acme.test"}}
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(func() []v1alpha1.DNSRecord {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(first), first)
			return first.Status.Records
		}).ShouldNot(BeEmpty())
		second := &v1alpha1.EmailDomain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}, Spec: v1alpha1.EmailDomainSpec{Domain: "dup.acme.test"}}
		Expect(k8s.Create(ctx, second)).To(Succeed())
		Eventually(func() string {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(second), second)
			return second.Status.SetupError
		}).Should(ContainSubstring("EmailDomain first of this project already has dup.acme.test"))
	})

	It("refuses what the schema refuses, for every writer", func() {
		ns := newNamespace(ctx)
		for _, domain := range []string{"not a domain", "Acme.Test", "localhost", "acme.123", "-acme.test"} {
			err := k8s.Create(ctx, &v1alpha1.EmailDomain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "d-"},
				Spec: v1alpha1.EmailDomainSpec{Domain: domain}})
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "domain %q: %v", domain, err)
		}
		d := &v1alpha1.EmailDomain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme"}, Spec: v1alpha1.EmailDomainSpec{Domain: "acme.test"}}
		Expect(k8s.Create(ctx, d)).To(Succeed())
		err := update(ctx, d, func(d *v1alpha1.EmailDomain) { d.Spec.Domain = "other.test" })
		Expect(err).To(MatchError(ContainSubstring("domain is immutable")))
	})
})
