package controller_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
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

		// The DKIM record removed: the domain fails at once (it was verified; its ownership record
		// is still there), announced once.
		dnsServer.RemoveAll(d.Status.Records[0].Name)
		verifyNow(ctx, d)
		Eventually(domainState(ctx, d)).Should(Equal(v1alpha1.DomainPartiallyVerified))
		Expect(meta.FindStatusCondition(d.Status.Conditions, "DKIMVerified")).To(haveReady(metav1.ConditionFalse, "RecordNotFound"))
		Expect(d.Receives()).To(BeTrue()) // receiving needs the ownership record, not DKIM
		verifyNow(ctx, d)
		Eventually(func() []string { return domainEvents(ctx, ns) }).Should(Equal([]string{"domain.verified verified", "domain.failed partially_verified"}))
		Consistently(func() []string { return domainEvents(ctx, ns) }, "500ms").Should(HaveLen(2))

		// A deleted key is made again, with a record of its own to publish.
		oldValue := d.Status.Records[0].Value
		Expect(k8s.Delete(ctx, &secret)).To(Succeed())
		Eventually(func() string {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(d), d)
			return d.Status.Records[0].Value
		}).ShouldNot(Equal(oldValue))
	})

	It("adds an Ed25519 key on request: its own Secret and selector, a recommended record whose condition follows DNS, gone when no longer asked for", func() {
		ns := newNamespace(ctx)
		d := &v1alpha1.EmailDomain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme"},
			Spec: v1alpha1.EmailDomainSpec{Domain: ns + ".acme.test", DKIMEd25519: true}}
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Eventually(func() string {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(d), d)
			return d.Status.DKIMEd25519Selector
		}).WithTimeout(10 * time.Second).Should(HavePrefix("ed"))

		// Its key lives in a Secret of its own, owned by the domain; the RSA key is still there.
		var secret corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "acme-dkim-ed25519"}, &secret)).To(Succeed())
		Expect(metav1.IsControlledBy(&secret, d)).To(BeTrue())
		Expect(secret.Labels).To(HaveKeyWithValue(v1alpha1.SecretLabel, "true"))
		key, err := domainverify.ParseKey(secret.Data[domainverify.SecretKeyPrivateKey])
		Expect(err).NotTo(HaveOccurred())
		Expect(key.Public()).To(BeAssignableToTypeOf(ed25519.PublicKey{}))
		Expect(d.Status.DKIMEd25519Selector).To(Equal(string(secret.Data[domainverify.SecretKeySelector])))
		Expect(d.Status.DKIMEd25519Secret).To(Equal(&v1alpha1.SecretKeyRef{Name: "acme-dkim-ed25519", Key: domainverify.SecretKeyPrivateKey}))
		Expect(d.Status.DKIMSelector).To(HavePrefix("sb"))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "acme-dkim"}, &corev1.Secret{})).To(Succeed())

		// Its record: the public key under its selector, recommended, not required.
		want, err := domainverify.DKIMValue(key)
		Expect(err).NotTo(HaveOccurred())
		Expect(want).To(HavePrefix("v=DKIM1; k=ed25519; p="))
		var ed v1alpha1.DNSRecord
		for _, rec := range d.Status.Records {
			if rec.Purpose == v1alpha1.PurposeDKIMEd25519 {
				ed = rec
			}
		}
		Expect(ed).To(MatchFields(IgnoreExtras, Fields{"Name": Equal(d.Status.DKIMEd25519Selector + "._domainkey." + d.Spec.Domain),
			"Type": Equal("TXT"), "Value": Equal(want), "Required": BeFalse()}))

		// The required records verify the domain without it; its condition says it is missing.
		domainverifytest.PublishRequired(dnsServer, d, false)
		verifyNow(ctx, d)
		Eventually(domainState(ctx, d)).Should(Equal(v1alpha1.DomainVerified))
		Expect(meta.IsStatusConditionTrue(d.Status.Conditions, domainverify.ConditionDKIMEd25519)).To(BeFalse())
		Expect(d.RecordVerified(v1alpha1.PurposeDKIMEd25519)).To(BeFalse())

		// Published, it is found.
		domainverifytest.Publish(dnsServer, ed)
		verifyNow(ctx, d)
		Eventually(func() bool {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(d), d)
			return meta.IsStatusConditionTrue(d.Status.Conditions, domainverify.ConditionDKIMEd25519)
		}).Should(BeTrue())
		Expect(d.RecordVerified(v1alpha1.PurposeDKIMEd25519)).To(BeTrue())
		Expect(d.Status.State).To(Equal(v1alpha1.DomainVerified))

		// No longer asked for: no record, no condition, no key in status; the domain stays verified.
		Expect(update(ctx, d, func(d *v1alpha1.EmailDomain) { d.Spec.DKIMEd25519 = false })).To(Succeed())
		Eventually(func() string {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(d), d)
			return d.Status.DKIMEd25519Selector
		}).Should(BeEmpty())
		Expect(d.Status.DKIMEd25519Secret).To(BeNil())
		Expect(d.RecordVerified(v1alpha1.PurposeDKIMEd25519)).To(BeFalse())
		Expect(meta.FindStatusCondition(d.Status.Conditions, domainverify.ConditionDKIMEd25519)).To(BeNil())
		Expect(d.Status.State).To(Equal(v1alpha1.DomainVerified))
	})

	It("keeps a domain verified before ownership records verified and receiving through its grace period, and no other", func() {
		// legacy makes d look as it did before ownership records: verified on its DKIM record (or
		// not), its inbound MX published, no ownership record, no hold.
		legacy := func(d *v1alpha1.EmailDomain, verified bool) {
			Eventually(func() []v1alpha1.DNSRecord {
				_ = k8s.Get(ctx, client.ObjectKeyFromObject(d), d)
				return d.Status.Records
			}).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
			for _, rec := range d.Status.Records {
				if rec.Purpose == v1alpha1.PurposeInbound || (verified && rec.Purpose == v1alpha1.PurposeDKIM) {
					domainverifytest.Publish(dnsServer, rec)
				}
			}
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
					return err
				}
				var records []v1alpha1.DNSRecord
				for _, rec := range d.Status.Records {
					switch {
					case rec.Purpose == v1alpha1.PurposeOwnership:
						continue
					case rec.Purpose == v1alpha1.PurposeInbound || (verified && rec.Purpose == v1alpha1.PurposeDKIM):
						rec.State = v1alpha1.RecordVerified
					default:
						rec.State = v1alpha1.RecordFailed
					}
					records = append(records, rec)
				}
				later := metav1.NewTime(time.Now().Add(6 * time.Hour))
				d.Status.Records, d.Status.Held, d.Status.OwnershipGraceUntil, d.Status.NextCheckAt = records, false, nil, &later
				d.Status.State, d.Status.Verified, d.Status.EverVerified = v1alpha1.DomainFailed, false, false
				if verified {
					d.Status.State, d.Status.Verified, d.Status.EverVerified = v1alpha1.DomainVerified, true, true
				}
				return k8s.Status().Update(ctx, d)
			})).To(Succeed())
		}
		ns := newNamespace(ctx)
		d := &v1alpha1.EmailDomain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"},
			Spec: v1alpha1.EmailDomainSpec{Domain: ns + ".old.acme.test", Receiving: true}}
		Expect(k8s.Create(ctx, d)).To(Succeed())
		legacy(d, true)

		// Checked at once (its next check was hours away): held on its DKIM record, still
		// verified and receiving, the condition saying what to publish and until when.
		Eventually(func() bool {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(d), d)
			return d.Status.Held && d.Receives()
		}).WithTimeout(10 * time.Second).Should(BeTrue())
		Expect(d.Status.State).To(Equal(v1alpha1.DomainVerified))
		Expect(d.Status.OwnershipGraceUntil).NotTo(BeNil())
		Expect(d.Status.OwnershipGraceUntil.Time).To(BeTemporally("~", time.Now().Add(domainverify.OwnershipGrace), time.Minute))
		Expect(meta.FindStatusCondition(d.Status.Conditions, domainverify.ConditionOwnership)).To(haveReady(metav1.ConditionFalse, domainverify.ReasonOwnershipGrace))
		Expect(meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionReady)).To(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(d.Status.NextCheckAt.Time).To(BeTemporally("<=", d.Status.OwnershipGraceUntil.Time))

		// Its ownership record published: the grace period ends, the record proves it.
		domainverifytest.PublishRequired(dnsServer, d, false)
		verifyNow(ctx, d)
		Eventually(func() *metav1.Time {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(d), d)
			return d.Status.OwnershipGraceUntil
		}).Should(BeNil())
		Expect(d.Status.Held).To(BeTrue())
		Expect(meta.FindStatusCondition(d.Status.Conditions, domainverify.ConditionOwnership)).To(haveReady(metav1.ConditionTrue, "RecordPublished"))

		// One that received on the shared MX without ever being verified gets no grace: it stops.
		other := &v1alpha1.EmailDomain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "claimed"},
			Spec: v1alpha1.EmailDomainSpec{Domain: ns + ".claimed.acme.test", Receiving: true}}
		Expect(k8s.Create(ctx, other)).To(Succeed())
		legacy(other, false)
		Eventually(func() bool {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(other), other)
			return domainverify.OwnershipUnchecked(&other.Status)
		}).WithTimeout(10 * time.Second).Should(BeFalse())
		Expect(other.Status.OwnershipGraceUntil).To(BeNil())
		Expect(other.Status.Held).To(BeFalse())
		Expect(other.Receives()).To(BeFalse())
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
