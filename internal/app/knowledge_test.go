package app_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/apikey"
	"github.com/switchboard-io/switchboard/internal/app"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
)

// knowledgeAgent makes an enabled zavu agent "support" on project's sender main (no model
// Provider in the installation: its documents are embedded locally) and waits until it answers.
func knowledgeAgent(t *testing.T, in *instance, project string) {
	t.Helper()
	in.createObjects(t, &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "support"}, Spec: v1alpha1.AgentSpec{
		DisplayName: "Support", Enabled: true, Provider: v1alpha1.ModelZavu, Model: "sandbox", SystemPrompt: "Help.",
		Senders: []string{"main"}}})
	waitFor(t, func() bool {
		var a v1alpha1.Agent
		_ = in.k8s.Get(context.Background(), client.ObjectKey{Namespace: project, Name: "support"}, &a)
		return len(a.Status.Senders) == 1
	})
}

// documentReady waits for a document to end processing and returns it.
func documentReady(t *testing.T, in *instance, key, kb, id string) map[string]any {
	t.Helper()
	var doc map[string]any
	waitFor(t, func() bool {
		r := in.get("/v1/senders/main/agent/knowledge-bases/"+kb+"/documents/"+id, key)
		doc, _ = r.body["document"].(map[string]any)
		return doc != nil && (doc["status"] == "ready" || doc["status"] == "failed")
	})
	return doc
}

// TestKnowledgeBaseAnswersFromDocuments: documents given as text, as a PDF file and as a URL
// of an HTML page are processed into chunks; the agent's answer comes from them (the sandbox
// model answers with the sentence nearest the question) and its execution names the chunks;
// another project's agent of the same name knows none of them; deleting a document and a
// knowledge base deletes their chunks.
func TestKnowledgeBaseAnswersFromDocuments(t *testing.T) {
	page := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hours":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, `<html><head><title>Hours</title><script>var x = "opening";</script></head>
<body><nav>Home | Shop</nav><h1>Store hours</h1><p>The store opens at nine in the morning on weekdays.</p></body></html>`)
		case "/metadata":
			// A redirect to an address the deliveries' guard refuses (link-local).
			http.Redirect(w, r, "https://169.254.169.254/latest/meta-data", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(page.Close)
	in := start(t, fastSandbox, deliveringTo(page.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs))
	acme, key := sendingProject(t, in, nil, apikey.Test)
	knowledgeAgent(t, in, acme)
	base := "/v1/senders/main/agent/knowledge-bases"

	r := in.post(base, key, `{"name":"Help centre","description":"What customers ask"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create knowledge base = %d %v", r.status, r.body)
	}
	kb := r.body["knowledgeBase"].(map[string]any)
	kbID := kb["id"].(string)
	if kb["agentId"] != "support" || kb["documentCount"] != 0.0 || kb["totalChunks"] != 0.0 {
		t.Fatalf("knowledge base = %v", kb)
	}

	docs := base + "/" + kbID + "/documents"
	text := in.post(docs, key, `{"title":"Returns policy","content":"Shipping takes three days.\n\nItems may be returned within 30 days for a full refund. Refunds go back to the card that paid."}`)
	if text.status != http.StatusCreated || text.body["document"].(map[string]any)["isProcessed"] != false {
		t.Fatalf("create text document = %d %v", text.status, text.body)
	}
	pdf, err := os.ReadFile("../knowledge/extract/testdata/prose.pdf")
	if err != nil {
		t.Fatal(err)
	}
	file := in.post(docs, key, fmt.Sprintf(`{"title":"Warranty","file":{"data":%q,"contentType":"application/pdf","name":"warranty.pdf"}}`,
		base64.StdEncoding.EncodeToString(pdf)))
	url := in.post(docs, key, fmt.Sprintf(`{"title":"Hours","url":%q}`, page.URL+"/hours"))
	refused := in.post(docs, key, fmt.Sprintf(`{"title":"Metadata","url":%q}`, page.URL+"/metadata"))
	for _, c := range []response{file, url, refused} {
		if c.status != http.StatusCreated {
			t.Fatalf("create document = %d %v", c.status, c.body)
		}
	}
	id := func(r response) string { return r.body["document"].(map[string]any)["id"].(string) }
	for _, c := range []response{text, file, url} {
		d := documentReady(t, in, key, kbID, id(c))
		if d["status"] != "ready" || d["isProcessed"] != true || d["chunkCount"].(float64) < 1 || d["embeddingModel"] != "switchboard/hashing@256" {
			t.Fatalf("document = %v", d)
		}
	}
	if d := documentReady(t, in, key, kbID, id(refused)); d["status"] != "failed" || !strings.Contains(d["failureReason"].(string), "could not be fetched") {
		t.Fatalf("a URL redirecting to a refused address: %v", d)
	}
	// A PDF of a scanned page has no text: it fails, saying so, and makes no chunk.
	scan, err := os.ReadFile("../knowledge/extract/testdata/scan.pdf")
	if err != nil {
		t.Fatal(err)
	}
	scanned := in.post(docs, key, fmt.Sprintf(`{"title":"Scan","file":{"data":%q,"name":"scan.pdf"}}`, base64.StdEncoding.EncodeToString(scan)))
	if d := documentReady(t, in, key, kbID, id(scanned)); d["status"] != "failed" || !strings.Contains(strings.ToLower(d["failureReason"].(string)), "text") ||
		d["chunkCount"] != 0.0 {
		t.Fatalf("a PDF with no text: %v", d)
	}
	if r := in.delete(docs+"/"+id(scanned), key); r.status != http.StatusNoContent {
		t.Fatalf("delete the scan = %d", r.status)
	}
	if n := in.count(`SELECT count(*) FROM knowledge_chunks WHERE body LIKE '%opening%' OR body LIKE '%Home | Shop%'`); n != 0 {
		t.Errorf("%d chunks hold the page's script or navigation", n)
	}
	kb = in.get(base+"/"+kbID, key).body["knowledgeBase"].(map[string]any)
	if kb["documentCount"] != 4.0 || kb["totalChunks"].(float64) < 3 {
		t.Fatalf("knowledge base after processing = %v", kb)
	}

	// The answer comes from the documents, and the execution names the chunks it was given.
	replies := func(conversation string) []string {
		var out []string
		for _, it := range in.get("/v1/conversations/"+conversation+"/messages", key).body["items"].([]any) {
			if m := it.(map[string]any); m["direction"] == "outbound" {
				out = append(out, m["text"].(string))
			}
		}
		return out
	}
	ask := func(from, question string) string {
		t.Helper()
		conv := receive(t, in, key, fmt.Sprintf(`{"from":%q,"text":%q}`, from, question))["conversationId"].(string)
		waitFor(t, func() bool { return len(replies(conv)) == 1 })
		return replies(conv)[0]
	}
	if got := ask("+15005550101", "Can I return an item for a refund?"); got != "[sandbox] From Returns policy: Items may be returned within 30 days for a full refund." {
		t.Fatalf("answer = %q", got)
	}
	if got := ask("+15005550103", "Where can fuel be taken on?"); got != "[sandbox] From Warranty: Fuel may be taken on only at berth four, and only while the fire watch is present." {
		t.Fatalf("answer from the PDF = %q", got)
	}
	if got := ask("+15005550102", "When does the store open?"); !strings.HasPrefix(got, "[sandbox] From Hours: The store opens at nine") {
		t.Fatalf("answer from the URL's page = %q", got)
	}
	ex := in.get("/v1/senders/main/agent/executions", key).body["items"].([]any)
	last := ex[0].(map[string]any)
	used := last["knowledgeChunks"].([]any)
	if last["knowledgeChunksUsed"].(float64) < 1 || len(used) != int(last["knowledgeChunksUsed"].(float64)) ||
		used[0].(map[string]any)["documentId"] != id(url) {
		t.Fatalf("execution = %v", last)
	}

	// Another project's agent of the same name knows nothing of it.
	other, otherKey := sendingProject(t, in, nil, apikey.Test)
	knowledgeAgent(t, in, other)
	if r := in.get(base+"/"+kbID, otherKey); r.status != http.StatusNotFound {
		t.Fatalf("another project reads the knowledge base: %d", r.status)
	}
	conv := receive(t, in, otherKey, `{"from":"+15005550101","text":"Can I return an item for a refund?"}`)["conversationId"].(string)
	waitFor(t, func() bool {
		for _, it := range in.get("/v1/conversations/"+conv+"/messages", otherKey).body["items"].([]any) {
			if m := it.(map[string]any); m["direction"] == "outbound" {
				if m["text"] != "[sandbox] You said: Can I return an item for a refund?" {
					t.Fatalf("another project's agent answered %q", m["text"])
				}
				return true
			}
		}
		return false
	})

	// New content is processed again; deleting a document, then the base, deletes the chunks.
	r = in.patch(docs+"/"+id(text), key, `{"content":"Exchanges only, within 14 days."}`)
	if r.status != http.StatusOK || r.body["document"].(map[string]any)["status"] != "pending" {
		t.Fatalf("new content = %d %v", r.status, r.body)
	}
	if d := documentReady(t, in, key, kbID, id(text)); d["status"] != "ready" || d["chunkCount"] != 1.0 {
		t.Fatalf("document after new content = %v", d)
	}
	if n := in.count(`SELECT count(*) FROM knowledge_chunks WHERE body LIKE '%refund%'`); n != 0 {
		t.Errorf("%d chunks of the old content", n)
	}
	if r := in.delete(docs+"/"+id(file), key); r.status != http.StatusNoContent {
		t.Fatalf("delete document = %d", r.status)
	}
	if n := in.count(`SELECT count(*) FROM knowledge_chunks WHERE document_id = '` + id(file) + `'`); n != 0 {
		t.Errorf("%d chunks of a deleted document", n)
	}
	if r := in.delete(base+"/"+kbID, key); r.status != http.StatusNoContent {
		t.Fatalf("delete knowledge base = %d", r.status)
	}
	if n := in.count(`SELECT count(*) FROM knowledge_chunks`); n != 0 {
		t.Errorf("%d chunks after the knowledge base was deleted", n)
	}
	if r := in.get(docs+"/"+id(url), key); r.status != http.StatusNotFound {
		t.Errorf("a document of a deleted knowledge base = %d", r.status)
	}
}

// TestKnowledgeBadInput: each refused body answers the spec's error and creates nothing.
func TestKnowledgeBadInput(t *testing.T) {
	in := start(t, fastSandbox)
	acme, key := sendingProject(t, in, nil, apikey.Test)
	knowledgeAgent(t, in, acme)
	base := "/v1/senders/main/agent/knowledge-bases"
	for _, body := range []string{`{}`, `{"name":""}`, `{"name":"` + strings.Repeat("n", 201) + `"}`, `{"name":"x","description":7}`} {
		if r := in.post(base, key, body); r.status != http.StatusBadRequest {
			t.Errorf("create knowledge base %s = %d %v", body, r.status, r.body)
		}
	}
	if n := in.count(`SELECT count(*) FROM knowledge_bases`); n != 0 {
		t.Fatalf("%d knowledge bases after refused bodies", n)
	}
	kbID := in.post(base, key, `{"name":"Help"}`).body["knowledgeBase"].(map[string]any)["id"].(string)
	docs := base + "/" + kbID + "/documents"
	notPDF := base64.StdEncoding.EncodeToString([]byte("<html><body>not a pdf</body></html>"))
	for _, body := range []string{
		`{"content":"x"}`, // no title
		`{"title":"t"}`,   // no content
		`{"title":"t","content":""}`,
		`{"title":"t","content":"x","url":"https://example.com/"}`,
		`{"title":"t","url":"ftp://example.com/x"}`,
		`{"title":"t","file":{"data":"%%%"}}`,
		`{"title":"t","file":{"data":"` + notPDF + `","contentType":"application/pdf"}}`,
		`{"title":"t","file":{"data":"` + notPDF + `","contentType":"image/png"}}`,
	} {
		if r := in.post(docs, key, body); r.status != http.StatusBadRequest {
			t.Errorf("create document %s = %d %v", body, r.status, r.body)
		}
	}
	if n := in.count(`SELECT count(*) FROM knowledge_documents`); n != 0 {
		t.Fatalf("%d documents after refused bodies", n)
	}
	// The agent's own routes (the mirror of the sender's) reach the same knowledge base.
	if page := in.get("/v1/agents/support/knowledge-bases", key).body["items"].([]any); len(page) != 1 ||
		page[0].(map[string]any)["id"] != kbID {
		t.Fatalf("the agent's knowledge bases = %v", page)
	}
	r := in.post("/v1/agents/support/knowledge-bases/"+kbID+"/documents", key, `{"title":"t","content":"Opening hours."}`)
	if r.status != http.StatusCreated {
		t.Fatalf("a document through the agent's route = %d %v", r.status, r.body)
	}
	// New content of another kind replaces the source whole.
	doc := r.body["document"].(map[string]any)["id"].(string)
	r = in.patch(docs+"/"+doc, key, `{"url":"https://docs.invalid/hours"}`)
	if d := r.body["document"].(map[string]any); r.status != http.StatusOK || d["source"] != "url" || d["url"] != "https://docs.invalid/hours" ||
		d["status"] != "pending" {
		t.Fatalf("a document given a URL = %d %v", r.status, r.body)
	}
	if r := in.delete(docs+"/"+doc, key); r.status != http.StatusNoContent {
		t.Fatalf("delete = %d", r.status)
	}
	if r := in.post(base+"/kb_missing/documents", key, `{"title":"t","content":"x"}`); r.status != http.StatusNotFound {
		t.Errorf("a document of a missing knowledge base = %d", r.status)
	}
	if r := in.post("/v1/senders/nope/agent/knowledge-bases", key, `{"name":"x"}`); r.status != http.StatusNotFound {
		t.Errorf("a knowledge base of a sender without an agent = %d", r.status)
	}
}

func sweepingKnowledgeEvery(d time.Duration) option {
	return func(c *app.Config) { c.KnowledgeSweepEvery = d }
}

// TestKnowledgeEmbedsAgainWhenTheModelChanges: an agent's documents are embedded locally while
// the installation has no embedding Provider; once it has one (the OpenAI peer), they are
// embedded again by it, 256 dimensions asked for. A test key's execution then retrieves by
// words alone: the question is not sent to the provider.
func TestKnowledgeEmbedsAgainWhenTheModelChanges(t *testing.T) {
	const system = "knowledge-system"
	in := start(t, fastSandbox, installationIn(system), sweepingKnowledgeEvery(200*time.Millisecond))
	acme, key := sendingProject(t, in, nil, apikey.Test)
	knowledgeAgent(t, in, acme)
	base := "/v1/senders/main/agent/knowledge-bases"
	kb := in.post(base, key, `{"name":"Help"}`).body["knowledgeBase"].(map[string]any)["id"].(string)
	doc := in.post(base+"/"+kb+"/documents", key, `{"title":"Returns policy","content":"Items may be returned within 30 days for a full refund."}`).
		body["document"].(map[string]any)["id"].(string)
	if d := documentReady(t, in, key, kb, doc); d["embeddingModel"] != "switchboard/hashing@256" {
		t.Fatalf("document = %v", d)
	}

	peer := openaitest.New(openaitest.Options{})
	t.Cleanup(peer.Close)
	in.createObjects(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: system}},
		labelledSecret(system, "models", map[string]string{"apiKey": openaitest.DefaultAPIKey}),
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "models"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderOpenAI, BaseURL: peer.URL(), SecretRef: &v1alpha1.ProviderSecretRef{Name: "models"}}})
	embeddings := func() []openaitest.Request {
		var out []openaitest.Request
		for _, r := range peer.Requests() {
			if r.Path == "/v1/embeddings" {
				out = append(out, r)
			}
		}
		return out
	}
	waitFor(t, func() bool {
		d := in.get(base+"/"+kb+"/documents/"+doc, key).body["document"].(map[string]any)
		return d["embeddingModel"] == "openai/text-embedding-3-small@256" && d["status"] == "ready"
	})
	sent := embeddings()
	if len(sent) != 1 || string(sent[0].Fields["dimensions"]) != "256" || string(sent[0].Fields["model"]) != `"text-embedding-3-small"` {
		t.Fatalf("embedding requests = %v", sent)
	}
	if n := in.count(`SELECT count(*) FROM knowledge_chunks WHERE embedding_model = 'switchboard/hashing@256'`); n != 0 {
		t.Errorf("%d chunks of the old model", n)
	}

	conv := receive(t, in, key, `{"from":"+15005550111","text":"Can I get a refund?"}`)["conversationId"].(string)
	waitFor(t, func() bool {
		for _, it := range in.get("/v1/conversations/"+conv+"/messages", key).body["items"].([]any) {
			if m := it.(map[string]any); m["direction"] == "outbound" {
				if m["text"] != "[sandbox] From Returns policy: Items may be returned within 30 days for a full refund." {
					t.Fatalf("answer = %q", m["text"])
				}
				return true
			}
		}
		return false
	})
	if n := len(embeddings()); n != 1 {
		t.Errorf("a test key's question was embedded by the provider (%d requests)", n)
	}
}

// TestKnowledgeOnTheInstallationModelIsCharged: documents embedded by the installation's
// Provider are paid from the project's balance at its PriceList's model prices, with their
// chunks: a project that cannot pay gets a failed document and no chunk; credited, the same
// document (its content given again) is embedded and charged once.
func TestKnowledgeOnTheInstallationModelIsCharged(t *testing.T) {
	const system = "knowledge-money-system"
	in := start(t, fastSandbox, installationIn(system))
	acme, key := sendingProject(t, in, nil, apikey.Test)
	peer := openaitest.New(openaitest.Options{})
	t.Cleanup(peer.Close)
	in.createObjects(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: system}},
		labelledSecret(system, "models", map[string]string{"apiKey": openaitest.DefaultAPIKey}),
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "models"}, Spec: v1alpha1.ProviderSpec{
			Type: v1alpha1.ProviderOpenAI, BaseURL: peer.URL(), SecretRef: &v1alpha1.ProviderSecretRef{Name: "models"}}},
		&v1alpha1.PriceList{ObjectMeta: metav1.ObjectMeta{Namespace: acme, Name: "prices"}, Spec: v1alpha1.PriceListSpec{
			FreeCredit: "0", Prices: []v1alpha1.Price{{Channel: "sms", Prefix: "+1", Price: "0.01"}},
			ModelPrices: []v1alpha1.ModelPrice{{Model: "text-embedding-3-small", InputPerMillion: "1000", OutputPerMillion: "0"}}}})
	knowledgeAgent(t, in, acme)
	base := "/v1/senders/main/agent/knowledge-bases"
	kb := in.post(base, key, `{"name":"Help"}`).body["knowledgeBase"].(map[string]any)["id"].(string)
	content := `{"content":"Items may be returned within 30 days for a full refund."}`
	doc := in.post(base+"/"+kb+"/documents", key, `{"title":"Returns",`+content[1:]).body["document"].(map[string]any)["id"].(string)
	if d := documentReady(t, in, key, kb, doc); d["status"] != "failed" || !strings.Contains(d["failureReason"].(string), "balance") {
		t.Fatalf("an unpaid document = %v", d)
	}
	if n := in.count(`SELECT count(*) FROM knowledge_chunks`); n != 0 {
		t.Fatalf("%d chunks of an unpaid document", n)
	}

	credit(t, in, acme, "1.00")
	if r := in.patch(base+"/"+kb+"/documents/"+doc, key, content); r.status != http.StatusOK {
		t.Fatalf("new content = %d %v", r.status, r.body)
	}
	if d := documentReady(t, in, key, kb, doc); d["status"] != "ready" || d["embeddingModel"] != "openai/text-embedding-3-small@256" {
		t.Fatalf("a paid document = %v", d)
	}
	var charged int64
	if err := in.db.QueryRow(context.Background(), `SELECT coalesce(sum(amount_micros), 0)::bigint FROM ledger_entries WHERE project = $1 AND kind = 'charge'
		AND message_id = $2`, acme, doc+"@2").Scan(&charged); err != nil {
		t.Fatal(err)
	}
	if charged <= 0 {
		t.Fatalf("the embeddings were charged %d micros", charged)
	}
}
