package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
)

// agentSample reads the Agent sample: its Secret, then the Agent.
func agentSample() (corev1.Secret, v1alpha1.Agent) {
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_agent.yaml"))
	Expect(err).NotTo(HaveOccurred())
	docs := strings.Split(string(b), "\n---\n")
	Expect(docs).To(HaveLen(2))
	var secret corev1.Secret
	var agent v1alpha1.Agent
	Expect(yaml.UnmarshalStrict([]byte(docs[0]), &secret)).To(Succeed())
	Expect(yaml.UnmarshalStrict([]byte(docs[1]), &agent)).To(Succeed())
	return secret, agent
}

func agentStatus(ctx context.Context, a *v1alpha1.Agent) func() v1alpha1.AgentStatus {
	return func() v1alpha1.AgentStatus {
		_ = k8s.Get(ctx, client.ObjectKeyFromObject(a), a)
		return a.Status
	}
}

var _ = Describe("Agent", func() {
	ctx := context.Background()

	ensure := func(obj client.Object) {
		err := k8s.Create(ctx, obj)
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "got %v", err)
	}

	It("the sample applies as it is, resolves its models and answers on its sender; a second agent naming the sender does not take it", func() {
		secret, agent := agentSample()
		ensure(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agent.Namespace}})
		ensure(project(agent.Namespace, agent.Namespace))
		// The sample sender it answers on (the samples share the namespace acme: another spec may
		// have applied it already).
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_sender.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var sender v1alpha1.Sender
		Expect(yaml.UnmarshalStrict(b, &sender)).To(Succeed())
		Expect(sender.Name).To(Equal("support"))
		ensure(&sender)
		Expect(k8s.Create(ctx, &secret)).To(Succeed())
		Expect(k8s.Create(ctx, &agent)).To(Succeed())
		Eventually(readyCondition(ctx, &agent), "10s").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(agent.Status.Senders).To(Equal([]string{"support"}))
		Expect(agent.Status.Conflicts).To(BeEmpty())

		// A newer agent naming the same sender: the older keeps it. (Creation times are whole
		// seconds: within one, the name decides, and "tutor" comes after "support-agent".)
		second := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: agent.Namespace, Name: "tutor"},
			Spec: v1alpha1.AgentSpec{DisplayName: "Second", Provider: v1alpha1.ModelOpenAI, Model: "gpt-4o-mini",
				APIKeyRef: &v1alpha1.SecretKeyRef{Name: secret.Name, Key: "openai"}, SystemPrompt: "Be brief.",
				Senders: []string{"support", "nosuch"}}}
		Expect(k8s.Create(ctx, second)).To(Succeed())
		Eventually(agentStatus(ctx, second), "10s").Should(HaveField("Conflicts", Equal([]string{"support=support-agent"})))
		Expect(second.Status.Senders).To(BeEmpty())

		// The older one goes: the newer takes the sender.
		Expect(k8s.Delete(ctx, &agent)).To(Succeed())
		Eventually(agentStatus(ctx, second), "10s").Should(HaveField("Senders", Equal([]string{"support"})))
		Expect(second.Status.Conflicts).To(BeEmpty())

		// A key that goes missing makes it not Ready, naming what is missing and never the key.
		Expect(update(ctx, &secret, func(s *corev1.Secret) { delete(s.Data, "openai") })).To(Succeed())
		Eventually(readyCondition(ctx, second), "10s").Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonModelUnresolved))
		Expect(readyCondition(ctx, second)().Message).To(ContainSubstring("has no key openai"))
		Expect(k8s.Delete(ctx, second)).To(Succeed())
	})

	It("the voice agent sample applies as it is and holds the calls of the twilio sender sample", func() {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_agent_voice.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var agent v1alpha1.Agent
		Expect(yaml.UnmarshalStrict(b, &agent)).To(Succeed())
		ensure(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agent.Namespace}})
		ensure(project(agent.Namespace, agent.Namespace))
		b, err = os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_sender_twilio.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var sender v1alpha1.Sender
		Expect(yaml.UnmarshalStrict(b, &sender)).To(Succeed())
		Expect(agent.Spec.Senders).To(Equal([]string{sender.Name}))
		Expect(sender.Spec.Voice.Enabled).To(BeTrue())
		ensure(&sender)
		Expect(k8s.Create(ctx, &agent)).To(Succeed())
		Eventually(agentStatus(ctx, &agent), "30s").Should(HaveField("Senders", Equal([]string{sender.Name})))
		Expect(agent.Spec.Voice.Enabled).To(BeTrue())
		Expect(agent.Spec.Voice.VoicemailAction).To(Equal("leave_message"))
		Expect(k8s.Delete(ctx, &agent)).To(Succeed())
	})

	It("a zavu agent is Ready once the installation has a model Provider, which the sample is", func() {
		ns := "agents-zavu"
		ensure(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		ensure(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: installationNamespace}})
		a := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zavu"},
			Spec: v1alpha1.AgentSpec{DisplayName: "Zavu", Provider: v1alpha1.ModelZavu, Model: "llama3.2", SystemPrompt: "Be brief."}}
		Expect(k8s.Create(ctx, a)).To(Succeed())
		Eventually(readyCondition(ctx, a), "10s").Should(haveReady(metav1.ConditionFalse, v1alpha1.ReasonModelUnresolved))
		Expect(readyCondition(ctx, a)().Message).To(ContainSubstring("no model Provider"))

		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "messaging_v1alpha1_provider_openai.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var p v1alpha1.Provider
		Expect(yaml.UnmarshalStrict(b, &p)).To(Succeed())
		Expect(p.Namespace).To(Equal(installationNamespace))
		// A local peer stands in for the sample's Ollama, whose models list checks the account.
		peer := openaitest.New(openaitest.Options{})
		DeferCleanup(peer.Close)
		p.Spec.BaseURL = peer.URL()
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: installationNamespace, Name: "models-key",
			Labels: map[string]string{v1alpha1.SecretLabel: "true"}}, StringData: map[string]string{v1alpha1.ProviderKeyAPIKey: openaitest.DefaultAPIKey}})).To(Succeed())
		p.Spec.SecretRef = &v1alpha1.ProviderSecretRef{Name: "models-key"}
		Expect(k8s.Create(ctx, &p)).To(Succeed())
		DeferCleanup(func() { _ = k8s.Delete(ctx, &p) })
		Eventually(providerReady(ctx, &p), "10s").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Eventually(readyCondition(ctx, a), "10s").Should(haveReady(metav1.ConditionTrue, v1alpha1.ReasonReady))
		Expect(readyCondition(ctx, a)().Message).To(ContainSubstring("disabled"))
	})

	It("refuses what cannot run, whoever writes it", func() {
		ns := "agents-invalid"
		ensure(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		valid := func() *v1alpha1.Agent {
			return &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"},
				Spec: v1alpha1.AgentSpec{DisplayName: "A", Provider: v1alpha1.ModelOpenAI, Model: "gpt-4o-mini", SystemPrompt: "Hi.",
					APIKeyRef: &v1alpha1.SecretKeyRef{Name: "keys", Key: "openai"}}}
		}
		tool := func(url string) v1alpha1.AgentTool {
			return v1alpha1.AgentTool{ID: "t1", Name: "lookup", Description: "Look up.", WebhookURL: url,
				Parameters: apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{},"required":[]}`)}}
		}
		for name, mutate := range map[string]func(*v1alpha1.Agent){
			"no key and no provider": func(a *v1alpha1.Agent) { a.Spec.APIKeyRef = nil },
			"an unknown provider":    func(a *v1alpha1.Agent) { a.Spec.Provider = "cohere" },
			"a temperature above 2":  func(a *v1alpha1.Agent) { a.Spec.Temperature = "2.5" },
			"a tool over http":       func(a *v1alpha1.Agent) { a.Spec.Tools = []v1alpha1.AgentTool{tool("http://api.acme.example/t")} },
			"a tool name with spaces": func(a *v1alpha1.Agent) {
				t := tool("https://api.acme.example/t")
				t.Name = "look up"
				a.Spec.Tools = []v1alpha1.AgentTool{t}
			},
			"hours that end before they start": func(a *v1alpha1.Agent) {
				a.Spec.BusinessHours = &v1alpha1.BusinessHours{TimeZone: "UTC", Hours: []v1alpha1.OpenHours{{Day: "monday", From: "18:00", To: "09:00"}}}
			},
			"no system prompt": func(a *v1alpha1.Agent) { a.Spec.SystemPrompt = "" },
		} {
			a := valid()
			mutate(a)
			err := k8s.Create(ctx, a)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: got %v", name, err)
		}
		a := valid()
		a.Spec.Tools = []v1alpha1.AgentTool{tool("https://api.acme.example/t")}
		Expect(k8s.Create(ctx, a)).To(Succeed())
		Expect(k8s.Delete(ctx, a)).To(Succeed())
	})
})
