package app_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/llm/anthropic/anthropictest"
	"github.com/switchboard-io/switchboard/internal/llm/google/googletest"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
	"github.com/switchboard-io/switchboard/internal/transport/twilio/twiliotest"
)

// TestKnowledgeThroughModelPeers: for each model API, an agent on a live Twilio sender is given
// a PDF; its documents are embedded by its provider's peer (Anthropic's by the installation's
// OpenAI Provider, as Anthropic has no embeddings), and a contact's question reaches the model
// with the PDF's passage in its prompt; the execution names the PDF's chunk.
func TestKnowledgeThroughModelPeers(t *testing.T) {
	const system = "knowledge-peers-system"
	twilio := twiliotest.NewServer(t)
	rcv := newHookReceiver(t)
	in := start(t, publicAtListener, installationIn(system), rcv.trusted())
	ctx := context.Background()
	pdf, err := os.ReadFile("../knowledge/extract/testdata/prose.pdf")
	if err != nil {
		t.Fatal(err)
	}
	installation := openaitest.New(openaitest.Options{})
	t.Cleanup(installation.Close)
	in.createObjects(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: system}},
		labelledSecret(system, "embeddings", map[string]string{"apiKey": openaitest.DefaultAPIKey}),
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "embeddings"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderOpenAI, BaseURL: installation.URL(), SecretRef: &v1alpha1.ProviderSecretRef{Name: "embeddings"}}})

	openAI := openaitest.New(openaitest.Options{})
	mistral := openaitest.New(openaitest.Options{Flavor: openaitest.Mistral})
	gemini := googletest.New(googletest.Options{})
	claude := anthropictest.NewServer(t, anthropictest.Options{})
	for _, s := range []interface{ Close() }{openAI, mistral, gemini} {
		t.Cleanup(s.Close)
	}
	openAIChats := func(s *openaitest.Server) func() []string {
		return func() []string {
			var out []string
			for _, r := range s.Requests() {
				if r.Path == "/v1/chat/completions" {
					out = append(out, string(r.Body))
				}
			}
			return out
		}
	}
	for _, c := range []struct {
		provider v1alpha1.ModelProvider
		model    string
		url, key string
		label    string
		chats    func() []string
	}{
		{v1alpha1.ModelOpenAI, "gpt-4o-mini", openAI.URL(), openaitest.DefaultAPIKey, "openai/text-embedding-3-small@256", openAIChats(openAI)},
		{v1alpha1.ModelMistral, "mistral-small-latest", mistral.URL(), openaitest.DefaultAPIKey, "mistral/mistral-embed@1024", openAIChats(mistral)},
		{v1alpha1.ModelGoogle, "gemini-2.5-flash", gemini.URL(), googletest.Key, "google/gemini-embedding-001@256", func() []string {
			var out []string
			for _, r := range gemini.Requests() {
				if r.Generate != nil {
					out = append(out, string(r.Body))
				}
			}
			return out
		}},
		{v1alpha1.ModelAnthropic, "claude-haiku-4-5", claude.URL(), anthropictest.DefaultAPIKey, "openai/text-embedding-3-small@256", func() []string {
			var out []string
			for _, r := range claude.Requests() {
				if r.Path == "/v1/messages" {
					out = append(out, string(r.Raw))
				}
			}
			return out
		}},
	} {
		t.Run(string(c.provider), func(t *testing.T) {
			acme, key := twilioProject(t, in, twilio, rcv)
			in.createObjects(t, labelledSecret(acme, "model", map[string]string{"apiKey": c.key}),
				&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "model"}, Spec: v1alpha1.ProviderSpec{
					Type: v1alpha1.ProviderType(c.provider), BaseURL: c.url, SecretRef: &v1alpha1.ProviderSecretRef{Name: "model"}}},
				&v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "support"}, Spec: v1alpha1.AgentSpec{
					DisplayName: "Support", Enabled: true, Provider: c.provider, Model: c.model, ProviderRef: "model",
					SystemPrompt: "Help.", Senders: []string{"main"}}})
			waitFor(t, func() bool {
				var a v1alpha1.Agent
				_ = in.k8s.Get(ctx, client.ObjectKey{Namespace: acme, Name: "support"}, &a)
				return len(a.Status.Senders) == 1 && a.IsReady()
			})
			base := "/v1/senders/main/agent/knowledge-bases"
			kb := in.post(base, key, `{"name":"Harbour"}`).body["knowledgeBase"].(map[string]any)["id"].(string)
			r := in.post(base+"/"+kb+"/documents", key, fmt.Sprintf(`{"title":"Harbour rules","file":{"data":%q,"name":"rules.pdf"}}`,
				base64.StdEncoding.EncodeToString(pdf)))
			if r.status != http.StatusCreated {
				t.Fatalf("create document = %d %v", r.status, r.body)
			}
			doc := r.body["document"].(map[string]any)["id"].(string)
			if d := documentReady(t, in, key, kb, doc); d["status"] != "ready" || d["embeddingModel"] != c.label {
				t.Fatalf("document = %v", d)
			}

			before := len(c.chats())
			webhook := in.url + "/callbacks/twilio/" + acme + "/twilio/inbound"
			if status, body, err := twilio.SendInbound(ctx, webhook, "+15005550140", "+15005550006", "Where can fuel be taken on?"); err != nil || status != http.StatusOK {
				t.Fatalf("inbound = %d %q %v", status, body, err)
			}
			waitFor(t, func() bool {
				return in.count(`SELECT count(*) FROM agent_executions WHERE project = '`+acme+`' AND status NOT IN ('pending', 'running')`) == 1
			})
			chats := c.chats()[before:]
			if len(chats) != 1 || !strings.Contains(chats[0], "Fuel may be taken on only at berth four") || !strings.Contains(chats[0], "Harbour rules") {
				t.Fatalf("the model was asked %d times, without the PDF's passage: %v", len(chats), chats)
			}
			ex := in.get("/v1/senders/main/agent/executions", key).body["items"].([]any)[0].(map[string]any)
			used, _ := ex["knowledgeChunks"].([]any)
			if ex["status"] != "success" || len(used) == 0 || used[0].(map[string]any)["documentId"] != doc {
				t.Fatalf("execution = %v", ex)
			}
		})
	}
}
