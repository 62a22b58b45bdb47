package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/transport/meta/metatest"
	"github.com/switchboard-io/switchboard/internal/transport/smtp/smtptest"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// providerSample reads a sample of two documents: a Provider's Secret, then the Provider.
func providerSample(name string) (corev1.Secret, v1alpha1.Provider) {
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", name))
	Expect(err).NotTo(HaveOccurred())
	docs := strings.Split(string(b), "\n---\n")
	Expect(docs).To(HaveLen(2))
	var secret corev1.Secret
	var provider v1alpha1.Provider
	Expect(yaml.UnmarshalStrict([]byte(docs[0]), &secret)).To(Succeed())
	Expect(yaml.UnmarshalStrict([]byte(docs[1]), &provider)).To(Succeed())
	return secret, provider
}

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

		err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: project.Namespace}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		err = k8s.Create(ctx, &project)
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		// The samples share the namespace acme, and another spec may have applied this sender.
		err = k8s.Create(ctx, &sender)
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		Eventually(readyCondition(ctx, &project)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Eventually(readyCondition(ctx, &sender)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(sender.Status.Channels).To(ConsistOf(v1alpha1.ChannelSMS, v1alpha1.ChannelWhatsApp, v1alpha1.ChannelEmail))
	})

	It("the twilio Provider and its Secret apply as they are and become Ready", func() {
		secret, provider := providerSample("messaging_v1alpha1_provider_twilio.yaml")

		// A local peer stands in for api.twilio.com. The sample's placeholders are refused, as
		// Twilio would refuse them; the peer's account, put in the Secret, is taken.
		twilio := twiliotest.NewServer(GinkgoTB())
		provider.Spec.BaseURL = twilio.URL

		err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: provider.Namespace}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		Expect(k8s.Create(ctx, &secret)).To(Succeed())
		Expect(k8s.Create(ctx, &provider)).To(Succeed())
		Eventually(providerReady(ctx, &provider), "10s").Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonCredentialsRejected))
		Expect(update(ctx, &secret, func(s *corev1.Secret) {
			s.StringData = map[string]string{v1alpha1.ProviderKeyAccountSID: twiliotest.AccountSID, v1alpha1.ProviderKeyAuthToken: twiliotest.AuthToken}
		})).To(Succeed())
		Eventually(providerReady(ctx, &provider), "30s").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(provider.Spec.Type.Channels()).To(ContainElement(v1alpha1.ChannelSMS))
		Expect(provider.Spec.Default).To(BeTrue())

		// The sender that sends through it.
		var sender v1alpha1.Sender
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_sender_twilio.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.UnmarshalStrict(b, &sender)).To(Succeed())
		err = k8s.Create(ctx, project(sender.Namespace, sender.Namespace))
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		// The spec that applies every sample may have applied this sender already (specs run in
		// random order): it is the same object.
		if err := k8s.Create(ctx, &sender); apierrors.IsAlreadyExists(err) {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&sender), &sender)).To(Succeed())
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(readyCondition(ctx, &sender)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(sender.Status.Channels).To(Equal([]v1alpha1.Channel{v1alpha1.ChannelSMS, v1alpha1.ChannelSMSOneway, v1alpha1.ChannelVoice}))
		for _, ch := range sender.Status.Channels {
			p, reason := v1alpha1.ResolveProvider(ch, sender.ProviderName(ch), []v1alpha1.Provider{provider}, nil)
			Expect(p).NotTo(BeNil(), reason)
			Expect(p.Name).To(Equal(provider.Name))
		}
	})
})

var _ = Describe("config/samples for routes", func() {
	ctx := context.Background()

	It("the sender with two SMS Providers applies as it is and shows its routes", func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_sender_routes.yaml"))
		Expect(err).NotTo(HaveOccurred())
		docs := strings.Split(string(b), "\n---\n")
		Expect(docs).To(HaveLen(3))
		var secret corev1.Secret
		var backup v1alpha1.Provider
		var sender v1alpha1.Sender
		Expect(yaml.UnmarshalStrict([]byte(docs[0]), &secret)).To(Succeed())
		Expect(yaml.UnmarshalStrict([]byte(docs[1]), &backup)).To(Succeed())
		Expect(yaml.UnmarshalStrict([]byte(docs[2]), &sender)).To(Succeed())
		_, primary := providerSample("messaging_v1alpha1_provider_twilio.yaml")
		primary.Spec.BaseURL = "" // the spec does not call it
		// A namespace of its own: another spec applies the twilio Provider's sample in acme.
		const ns = "acme-routes"
		for _, o := range []client.Object{&secret, &backup, &sender, &primary} {
			o.SetNamespace(ns)
		}
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(k8s.Create(ctx, project(ns, ns))).To(Succeed())
		for _, o := range []client.Object{&primary, &secret, &backup, &sender} {
			Expect(k8s.Create(ctx, o)).To(Succeed())
		}
		Eventually(func() []string {
			var got []string
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(&sender), &sender); err != nil {
				return nil
			}
			for _, r := range sender.Status.Routes {
				got = append(got, fmt.Sprintf("%s %v %s %s %s", r.Channel, r.Prefixes, r.Strategy, strings.Join(r.Providers, ","), r.Error))
			}
			return got
		}, "30s").Should(Equal([]string{
			"sms [] failover acme-routes/twilio,acme-routes/twilio-backup ",
			"sms [+44] leastCost acme-routes/twilio,acme-routes/twilio-backup ",
		}))

		// The installation's RoutingPolicy applies as it is.
		b, err = os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_routingpolicy.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var policy v1alpha1.RoutingPolicy
		Expect(yaml.UnmarshalStrict(b, &policy)).To(Succeed())
		err = k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policy.Namespace}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		Expect(k8s.Create(ctx, &policy)).To(Succeed())
		Expect(policy.Spec.Routes).To(HaveLen(2))
	})
})

var _ = Describe("config/samples for email", func() {
	ctx := context.Background()

	It("the smtp Provider applies as it is, refuses the placeholders, and is Ready with the relay's credentials", func() {
		secret, provider := providerSample("messaging_v1alpha1_provider_smtp.yaml")

		// A local relay stands in for the sample's: it refuses the placeholders, as a relay would.
		relay, err := smtptest.New(smtptest.Options{Username: "switchboard", Password: "relay-password"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(relay.Close)
		provider.Spec.BaseURL = relay.URL()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: provider.Namespace}}
		err = k8s.Create(ctx, ns)
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		Expect(k8s.Create(ctx, &secret)).To(Succeed())
		Expect(k8s.Create(ctx, &provider)).To(Succeed())
		Eventually(providerReady(ctx, &provider), "10s").Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonCredentialsRejected))
		Expect(update(ctx, &secret, func(s *corev1.Secret) {
			s.StringData = map[string]string{v1alpha1.ProviderKeyUsername: "switchboard", v1alpha1.ProviderKeyPassword: "relay-password"}
		})).To(Succeed())
		Eventually(providerReady(ctx, &provider), "30s").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(provider.Spec.Type.Channels()).To(Equal([]v1alpha1.Channel{v1alpha1.ChannelEmail}))
	})

	It("the EmailDomain applies as it is and lists its records", func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_emaildomain.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var d v1alpha1.EmailDomain
		Expect(yaml.UnmarshalStrict(b, &d)).To(Succeed())
		err = k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.Namespace}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		Expect(k8s.Create(ctx, &d)).To(Succeed())
		Eventually(func() []v1alpha1.DNSRecord {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(&d), &d)
			return d.Status.Records
		}, "10s").ShouldNot(BeEmpty())
		Expect(d.Status.State).To(Equal(v1alpha1.DomainPending))
		Expect(d.Status.Records[0].Name).To(HaveSuffix("._domainkey.acme.example"))
	})
})

var _ = Describe("config/samples for templates", func() {
	ctx := context.Background()

	It("the Invitation applies as it is and gets its link's token and expiry", func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_invitation.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var inv v1alpha1.Invitation
		Expect(yaml.UnmarshalStrict(b, &inv)).To(Succeed())
		err = k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: inv.Namespace}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		Expect(k8s.Create(ctx, &inv)).To(Succeed())
		Eventually(func() v1alpha1.InvitationState {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(&inv), &inv)
			return inv.Status.State
		}).Should(Equal(v1alpha1.InvitationPending))
		Expect(inv.Status.TokenHash).NotTo(BeEmpty())
		Expect(inv.Status.ExpiresAt.Sub(inv.CreationTimestamp.Time)).To(Equal(14 * 24 * time.Hour))
	})

	It("the Template applies as it is and the sandbox approves its submission", func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_template.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var t v1alpha1.Template
		Expect(yaml.UnmarshalStrict(b, &t)).To(Succeed())
		b, err = os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_sender.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var sender v1alpha1.Sender
		Expect(yaml.UnmarshalStrict(b, &sender)).To(Succeed())
		err = k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.Namespace}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		err = k8s.Create(ctx, &sender)
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		Expect(k8s.Create(ctx, &t)).To(Succeed())
		Eventually(func() v1alpha1.TemplateState {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(&t), &t)
			return t.Status.State
		}, "15s").Should(Equal(v1alpha1.TemplateApproved))
		Expect(t.Status.Category).To(Equal(v1alpha1.CategoryUtility))
		Expect(meta.IsStatusConditionTrue(t.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())

		// A second template of the same name and language cannot be made, whatever its name.
		dup := t.DeepCopy()
		dup.ObjectMeta = metav1.ObjectMeta{Namespace: t.Namespace, Name: "order-update-copy.en-us"}
		Expect(k8s.Create(ctx, dup)).To(MatchError(ContainSubstring("name and language identify it")))
	})
})

var _ = Describe("config/samples for WhatsApp", func() {
	ctx := context.Background()

	It("the meta Provider refuses the placeholder token, is Ready with a real one, and the WhatsApp sender sends through it", func() {
		secret, provider := providerSample("messaging_v1alpha1_provider_meta.yaml")
		// A loopback Graph API stands in for Meta: it refuses the placeholders, as Meta would.
		graph := metatest.NewServer(GinkgoTB(), metatest.Options{})
		provider.Spec.BaseURL = graph.URL
		err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: provider.Namespace}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		err = k8s.Create(ctx, project(provider.Namespace, provider.Namespace))
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		Expect(k8s.Create(ctx, &secret)).To(Succeed())
		Expect(k8s.Create(ctx, &provider)).To(Succeed())
		Eventually(providerReady(ctx, &provider), "10s").Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonCredentialsRejected))
		Expect(update(ctx, &secret, func(s *corev1.Secret) {
			s.StringData = map[string]string{v1alpha1.ProviderKeyAccessToken: metatest.Token, v1alpha1.ProviderKeyAppSecret: metatest.AppSecret}
		})).To(Succeed())
		Eventually(providerReady(ctx, &provider), "30s").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))

		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_sender_whatsapp.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var sender v1alpha1.Sender
		Expect(yaml.UnmarshalStrict(b, &sender)).To(Succeed())
		// The spec that applies every sample may have applied this sender already (specs run in
		// random order): it is the same object.
		if err := k8s.Create(ctx, &sender); apierrors.IsAlreadyExists(err) {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&sender), &sender)).To(Succeed())
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(readyCondition(ctx, &sender)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(sender.Status.Channels).To(Equal([]v1alpha1.Channel{v1alpha1.ChannelWhatsApp}))
		p, reason := v1alpha1.ResolveProvider(v1alpha1.ChannelWhatsApp, sender.ProviderName(v1alpha1.ChannelWhatsApp), []v1alpha1.Provider{provider}, nil)
		Expect(p).NotTo(BeNil(), reason)
	})
})

var _ = Describe("the PriceList sample", func() {
	ctx := context.Background()

	It("applies as it is, and the API server refuses a second price for one channel and prefix", func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_pricelist.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var list v1alpha1.PriceList
		Expect(yaml.UnmarshalStrict(b, &list)).To(Succeed())
		err = k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: list.Namespace}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		Expect(k8s.Create(ctx, &list)).To(Succeed())

		dup := list.DeepCopy()
		dup.ObjectMeta = metav1.ObjectMeta{Namespace: list.Namespace, Name: "overlapping"}
		dup.Spec.Prices = append(dup.Spec.Prices, v1alpha1.Price{Channel: "sms", Prefix: "+1", Price: "0.01"})
		err = k8s.Create(ctx, dup)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("Duplicate value"))

		bad := list.DeepCopy()
		bad.ObjectMeta = metav1.ObjectMeta{Namespace: list.Namespace, Name: "negative"}
		bad.Spec.Prices = []v1alpha1.Price{{Channel: "sms", Prefix: "+1", Price: "-0.01"}}
		Expect(apierrors.IsInvalid(k8s.Create(ctx, bad))).To(BeTrue())
	})
})

var _ = Describe("the RiskPolicy sample", func() {
	ctx := context.Background()

	It("applies and is Ready; the API server refuses a rule that does not compile, with CEL's reason", func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_riskpolicy.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var rp v1alpha1.RiskPolicy
		Expect(yaml.UnmarshalStrict(b, &rp)).To(Succeed())
		err = k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rp.Namespace}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		Expect(k8s.Create(ctx, &rp)).To(Succeed())
		Eventually(readyCondition(ctx, &rp)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))

		generation := rp.Generation
		err = update(ctx, &rp, func(p *v1alpha1.RiskPolicy) {
			p.Spec.Rules = append(p.Spec.Rules, v1alpha1.RiskRule{Name: "broken", Expression: "message.words.exists(w,", Outcome: "hold"},
				v1alpha1.RiskRule{Name: "not-a-bool", Expression: `size(message.text) + 1`, Outcome: "hold"})
		})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		n := len(rp.Spec.Rules) - 2
		Expect(err.Error()).To(SatisfyAll(ContainSubstring(fmt.Sprintf("spec.rules[%d].expression", n)), ContainSubstring("Syntax error"),
			ContainSubstring(fmt.Sprintf("spec.rules[%d].expression", n+1)), ContainSubstring("not a bool")))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&rp), &rp)).To(Succeed())
		Expect(rp.Generation).To(Equal(generation), "a refused update changed the policy")

		// One stored while the webhook could not be reached is InvalidRules, with CEL's reason.
		stored := rp.DeepCopy()
		stored.ObjectMeta = metav1.ObjectMeta{Namespace: rp.Namespace, Name: "stored-broken", Labels: map[string]string{skipAdmission: "true"}}
		stored.Spec.Rules = []v1alpha1.RiskRule{{Name: "broken", Expression: "message.words.exists(w,", Outcome: "hold"}}
		Expect(k8s.Create(ctx, stored)).To(Succeed())
		Eventually(readyCondition(ctx, stored)).Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonInvalidRules))
		c := meta.FindStatusCondition(stored.Status.Conditions, "Ready")
		Expect(c.Message).To(ContainSubstring("rule broken"))

		// An outcome that is not one of hold, refuse and block is refused by the API server.
		bad := rp.DeepCopy()
		bad.ObjectMeta = metav1.ObjectMeta{Namespace: rp.Namespace, Name: "bad-outcome"}
		bad.Spec.Rules = []v1alpha1.RiskRule{{Name: "x", Expression: "true", Outcome: "approve"}}
		Expect(apierrors.IsInvalid(k8s.Create(ctx, bad))).To(BeTrue())
	})
})

var _ = Describe("the PhoneNumber sample", func() {
	ctx := context.Background()

	It("assigns its number to the project, whose sender then owns it, and no other project's", func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_phonenumber.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var pn v1alpha1.PhoneNumber
		Expect(yaml.UnmarshalStrict(b, &pn)).To(Succeed())
		for _, ns := range []string{pn.Namespace, pn.Spec.Project} {
			err = k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		}
		Expect(k8s.Create(ctx, &pn)).To(Succeed())
		Eventually(func() *metav1.Condition {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(&pn), &pn)
			return meta.FindStatusCondition(pn.Status.Conditions, v1alpha1.ConditionReady)
		}).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(pn.Status.Project).To(Equal("acme"))
		Expect(pn.Status.Ownership).To(Equal(v1alpha1.OwnershipAssigned))
		Expect(pn.Status.Capabilities).To(Equal([]v1alpha1.PhoneCapability{v1alpha1.CapabilitySMS, v1alpha1.CapabilityMMS, v1alpha1.CapabilityVoice}))

		mine := sender(pn.Spec.Project, "sample-line", v1alpha1.ChannelSMS)
		mine.Spec.PhoneNumber = pn.Spec.Number
		Expect(k8s.Create(ctx, mine)).To(Succeed())
		Eventually(func() *metav1.Condition {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(mine), mine)
			return meta.FindStatusCondition(mine.Status.Conditions, v1alpha1.ConditionNumberOwned)
		}).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonNumberOwned))
		Eventually(func() []string {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(&pn), &pn)
			return pn.Status.Senders
		}).Should(ContainElement("sample-line"))
	})
})

var _ = Describe("the Function sample", func() {
	ctx := context.Background()

	It("applies as it is, gets its key and URL, its triggers' schedule, and is deployed", func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_function.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var f v1alpha1.Function
		Expect(yaml.UnmarshalStrict(b, &f)).To(Succeed())
		err = k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.Namespace}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
		Expect(k8s.Create(ctx, &f)).To(Succeed())
		DeferCleanup(func() { _ = k8s.Delete(ctx, &f) })

		Eventually(readyCondition(ctx, &f)).Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(f.Status.Phase).To(Equal(v1alpha1.FunctionActive))
		Expect(f.Status.ActiveVersion).To(BeEquivalentTo(1))
		Expect(f.Status.PublicURL).To(HavePrefix(functionsPublicURL + "/fn/"))
		Expect(f.Finalizers).To(ContainElement(v1alpha1.FunctionFinalizer))

		var secret corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: f.Name + "-env"}, &secret)).To(Succeed())
		Expect(string(secret.Data["ZAVU_API_KEY"])).To(HavePrefix("svc_live_"))
		var next *time.Time
		Expect(pool.QueryRow(ctx, `SELECT next_run_at FROM function_triggers WHERE function_uid = $1 AND cron IS NOT NULL`, string(f.UID)).Scan(&next)).To(Succeed())
		Expect(next).NotTo(BeNil())
		Expect(next.UTC().Hour()).To(Equal(8))

		// A change of its source is a new version; the same source again is not.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&f), &f)).To(Succeed())
		f.Spec.Source.Files["lib/orders.ts"] = "export function lookup(id: string): string { return 'delivered'; }\n"
		Expect(k8s.Update(ctx, &f)).To(Succeed())
		Eventually(func() int32 {
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(&f), &f)
			return f.Status.ActiveVersion
		}).Should(BeEquivalentTo(2))
		f.Spec.Description = "unchanged code"
		Expect(k8s.Update(ctx, &f)).To(Succeed())
		Consistently(func() int {
			var n int
			_ = pool.QueryRow(ctx, `SELECT count(*) FROM function_deployments WHERE function_uid = $1`, string(f.UID)).Scan(&n)
			return n
		}, "1s").Should(Equal(2))
	})
})
