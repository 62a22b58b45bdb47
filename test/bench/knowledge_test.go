package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/knowledge"
	"github.com/switchboard-io/switchboard/internal/knowledge/vectorindex"
	"github.com/switchboard-io/switchboard/internal/llm/embedtest"
	"github.com/switchboard-io/switchboard/internal/llm/openai"
	"github.com/switchboard-io/switchboard/internal/llm/openai/openaitest"
	"github.com/switchboard-io/switchboard/test/cluster"
)

// The retrieval row's load: chunks of one agent in all, of which ingestChunks go through the
// API and the worker (documents of ingestDocChunks chunks each, embedded by the OpenAI peer),
// the rest written straight into Postgres; then retrievalQueries hybrid queries.
const (
	knowledgeChunks  = 100_000
	ingestChunks     = 10_000
	ingestDocChunks  = 500
	retrievalQueries = 1_000
	embedDims        = 256
)

// knowledgeFigures are the retrieval row.
type knowledgeFigures struct {
	ingestRate    float64       // chunks/s from documents posted to all of them ready
	coldLoad      time.Duration // the first query: the agent's graph built from Postgres
	bytesPerChunk float64       // the graph's estimated bytes per chunk
	p50, p99      time.Duration // hybrid queries once the graph is held
	retrieved     float64       // chunks a query was given, on average
}

// knowledgeRoute embeds through the OpenAI peer, as the installation's Provider does for the agent.
type knowledgeRoute struct{ route knowledge.Route }

func (k knowledgeRoute) EmbeddingRoute(context.Context, *v1alpha1.Agent) (knowledge.Route, error) {
	return k.route, nil
}

// ChargeEmbedding: retrieval embeds no document, so charges nothing.
func (knowledgeRoute) ChargeEmbedding(context.Context, pgx.Tx, string, string, string, int64) (bool, error) {
	return true, nil
}

// words is the vocabulary of the chunks and the queries: a few thousand made-up words, so that
// a query's words match some chunks and not most.
func words(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range 4 + r.IntN(6) {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		out[i] = b.String()
	}
	return out
}

func sentence(r *rand.Rand, vocab []string, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = vocab[r.IntN(len(vocab))]
	}
	return strings.Join(ws, " ") + "."
}

// runKnowledge measures ingest through the binary, then retrieval as the worker runs it (the
// knowledge package against the same Postgres, the query embedded by the peer).
func runKnowledge(b *testing.B, c *cluster.Cluster, url, project string) knowledgeFigures {
	ctx := context.Background()
	peer := openaitest.New(openaitest.Options{EmbeddingDimensions: 1536})
	b.Cleanup(peer.Close)
	key := c.Project(project, "")
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.InstallationNamespace, Name: "bench-embeddings",
			Labels: map[string]string{v1alpha1.SecretLabel: "true"}}, StringData: map[string]string{v1alpha1.ProviderKeyAPIKey: peer.APIKey()}},
		&v1alpha1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.InstallationNamespace, Name: "bench-embeddings"},
			Spec: v1alpha1.ProviderSpec{Type: v1alpha1.ProviderOpenAI, BaseURL: peer.URL(), SecretRef: &v1alpha1.ProviderSecretRef{Name: "bench-embeddings"}}},
		&v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "bench"}, Spec: v1alpha1.AgentSpec{
			DisplayName: "Bench", Enabled: true, Provider: v1alpha1.ModelZavu, Model: "gpt-4o-mini", SystemPrompt: "Answer.",
			Senders: []string{"main"}}},
	} {
		if err := c.K8s.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // the worker's cache sees the Provider and the Agent
	var f knowledgeFigures
	vocab := words(5000)
	r := rand.New(rand.NewPCG(3, 4))
	hc := &http.Client{}
	post := func(path, body string) map[string]any {
		req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := decodeJSON(resp.Body, &out); err != nil || resp.StatusCode != http.StatusCreated {
			b.Fatalf("POST %s = %d %v %v", path, resp.StatusCode, out, err)
		}
		return out
	}
	base := "/v1/senders/main/agent/knowledge-bases"
	kb := post(base, `{"name":"Bench"}`)["knowledgeBase"].(map[string]any)["id"].(string)

	// Ingest: documents of about ingestDocChunks chunks (a paragraph of ~450 words is one chunk).
	began := time.Now()
	for range ingestChunks / ingestDocChunks {
		paragraphs := make([]string, ingestDocChunks)
		for i := range paragraphs {
			paragraphs[i] = sentence(r, vocab, 450)
		}
		post(base+"/"+kb+"/documents", fmt.Sprintf(`{"title":"Doc","content":%q}`, strings.Join(paragraphs, "\n\n")))
	}
	var chunks int
	for deadline := time.Now().Add(10 * time.Minute); ; {
		var pending int
		if err := c.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status IN ('pending', 'processing')),
			coalesce(sum(chunk_count), 0) FROM knowledge_documents WHERE project = $1`, project).Scan(&pending, &chunks); err != nil {
			b.Fatal(err)
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d documents not processed within 10 minutes", pending)
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.ingestRate = float64(chunks) / time.Since(began).Seconds()
	var label, doc string
	if err := c.Pool.QueryRow(ctx, `SELECT embedding_model, id FROM knowledge_documents WHERE project = $1 AND status = 'ready' LIMIT 1`,
		project).Scan(&label, &doc); err != nil {
		b.Fatalf("no document ready: %v", err)
	}

	// The rest of the chunks, written straight, with the vectors the peer would have made.
	rows := make([][]any, 0, knowledgeChunks-chunks)
	for i := range knowledgeChunks - chunks {
		text := sentence(r, vocab, 120)
		rows = append(rows, []any{fmt.Sprintf("kch_bench%07d", i), project, "bench", kb, doc, int32(10_000 + i), text, int32(160), label,
			vectorBytes(embedtest.Vector(text, embedDims))})
	}
	if _, err := c.Pool.CopyFrom(ctx, pgx.Identifier{"knowledge_chunks"}, []string{"id", "project", "agent", "knowledge_base_id",
		"document_id", "ordinal", "body", "tokens", "embedding_model", "embedding"}, pgx.CopyFromRows(rows)); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Pool.Exec(ctx, `ANALYZE knowledge_chunks`); err != nil {
		b.Fatal(err)
	}

	// Retrieval as a worker runs it.
	embedder, err := openai.New(openai.Config{Flavor: openai.FlavorOpenAI, APIKey: peer.APIKey(), BaseURL: peer.URL()})
	if err != nil {
		b.Fatal(err)
	}
	svc := &knowledge.Service{Pool: c.Pool, Log: logr.Discard(), Routes: knowledgeRoute{route: knowledge.Route{
		Embedder: embedder, Model: "text-embedding-3-small", Dimensions: embedDims, Label: label}}}
	svc.Index = vectorindex.New(svc.LoadVectors, vectorindex.Options{})
	agent := &v1alpha1.Agent{ObjectMeta: metav1.ObjectMeta{Namespace: project, Name: "bench"}}
	query := func() (time.Duration, int) {
		q := sentence(r, vocab, 8)
		start := time.Now()
		got, err := svc.Retrieve(ctx, agent, false, q, knowledge.DefaultChunk)
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start), len(got)
	}
	f.coldLoad, _ = query()
	bytes, _ := svc.Index.Stats()
	f.bytesPerChunk = float64(bytes) / knowledgeChunks
	lat := make([]time.Duration, retrievalQueries)
	total := 0
	for i := range lat {
		var n int
		lat[i], n = query()
		total += n
	}
	f.retrieved = float64(total) / retrievalQueries
	f.p50, f.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
	return f
}

func decodeJSON(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// vectorBytes is a vector as chunks store it: little-endian float32s.
func vectorBytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
