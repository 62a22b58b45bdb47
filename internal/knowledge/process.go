package knowledge

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/knowledge/chunk"
	"github.com/switchboard-io/switchboard/internal/knowledge/extract"
	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
	"github.com/switchboard-io/switchboard/internal/randid"
)

// EmbedBatch is how many chunks one embedding request carries.
const EmbedBatch = 64

// ProcessArgs is the job that makes a document's chunks: of the document's version it was
// enqueued for (a newer version has its own job).
type ProcessArgs struct {
	DocumentID string `json:"documentId"`
	Version    int32  `json:"version"`
}

// Kind names the job kind.
func (ProcessArgs) Kind() string { return "knowledge.process" }

// InsertOpts: a model that is rate limited or down gets a few more tries over minutes.
func (ProcessArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 6} }

// Worker runs ProcessArgs jobs.
type Worker struct {
	river.WorkerDefaults[ProcessArgs]
	Service *Service
}

// ProcessTimeout bounds a run: a large PDF's extraction and a few hundred embedding requests.
// The run's lease on the document is as long.
const ProcessTimeout = 10 * time.Minute

// Timeout is ProcessTimeout.
func (w *Worker) Timeout(*river.Job[ProcessArgs]) time.Duration { return ProcessTimeout }

// Work processes the document; on its last attempt a failure the model caused fails it.
func (w *Worker) Work(ctx context.Context, job *river.Job[ProcessArgs]) error {
	return w.Service.process(ctx, job.Args, job.Attempt >= job.MaxAttempts)
}

// failure is what ends a document as failed, with the reason it shows.
type failure struct{ reason string }

func (f *failure) Error() string { return f.reason }

// process reads the document's text, splits it, embeds the chunks and stores them in place of
// the old ones. A document whose content changed meanwhile is left to its newer job.
func (s *Service) process(ctx context.Context, args ProcessArgs, last bool) error {
	q := db.Planned(s.Pool)
	now := s.clock().UTC()
	doc, err := q.StartKnowledgeDocument(ctx, db.StartKnowledgeDocumentParams{ID: args.DocumentID, Version: args.Version, Now: now,
		LeaseUntil: ptr(now.Add(ProcessTimeout))})
	if errors.Is(err, pgx.ErrNoRows) {
		// Deleted, superseded by new content, finished, or held by a run still going (this job
		// was rescued from a run that looked stuck): that one waits for the lease.
		st, err := q.KnowledgeDocumentLease(ctx, args.DocumentID)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && (st.Status != "processing" || st.Version != args.Version || st.LeaseUntil == nil)) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read document %s: %w", args.DocumentID, err)
		}
		return river.JobSnooze(time.Until(*st.LeaseUntil) + time.Second)
	}
	if err != nil {
		return fmt.Errorf("start document %s: %w", args.DocumentID, err)
	}
	err = s.build(ctx, doc)
	var f *failure
	var le *llm.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &f):
	case errors.As(err, &le) && llm.Retryable(err) && !last:
		return err // the model may answer later: River tries again
	case errors.As(err, &le):
		f = &failure{reason: "The embedding model did not answer: " + le.Error()}
	default:
		return err // Switchboard's own (the database): tried again
	}
	if _, err := q.FailKnowledgeDocument(ctx, db.FailKnowledgeDocumentParams{ID: doc.ID, Version: doc.Version, Reason: &f.reason,
		Now: s.clock().UTC()}); err != nil {
		return fmt.Errorf("fail document %s: %w", doc.ID, err)
	}
	return nil
}

func (s *Service) build(ctx context.Context, doc db.KnowledgeDocument) error {
	var a v1alpha1.Agent
	if err := s.Agents.Get(ctx, client.ObjectKey{Namespace: doc.Project, Name: doc.Agent}, &a); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return &failure{reason: "The agent is gone."}
		}
		return err
	}
	text, err := s.text(ctx, doc)
	if err != nil {
		return err
	}
	chunks := chunk.Split(text, chunk.Options{})
	if len(chunks) == 0 {
		return &failure{reason: "The document has no text."}
	}
	route, err := s.Routes.EmbeddingRoute(ctx, &a)
	if err != nil {
		return err
	}
	if route.Problem != "" {
		return &failure{reason: "No model can embed this agent's documents: " + route.Problem}
	}
	vectors, tokens, err := embedAll(ctx, route, chunks)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.Planned(tx)
		version, err := q.LockKnowledgeDocument(ctx, doc.ID)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && version != doc.Version) {
			return nil // deleted or changed while it was processed: the newer job stores its own
		}
		if err != nil {
			return err
		}
		if route.Installation {
			// Paid with the chunks, or neither is kept.
			paid, err := s.Routes.ChargeEmbedding(ctx, tx, doc.Project, fmt.Sprintf("%s@%d", doc.ID, doc.Version), route.Model, tokens)
			if err != nil {
				return err
			}
			if !paid {
				return errUnpaid
			}
		}
		if err := q.DeleteKnowledgeChunksOf(ctx, doc.ID); err != nil {
			return err
		}
		rows := make([][]any, len(chunks))
		for i, c := range chunks {
			id, err := randid.Prefixed("kch_", 20)
			if err != nil {
				return err
			}
			rows[i] = []any{id, doc.Project, doc.Agent, doc.KnowledgeBaseID, doc.ID, int32(c.Index), c.Text, int32(c.Tokens),
				route.Label, encodeVector(vectors[i])}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"knowledge_chunks"}, []string{"id", "project", "agent", "knowledge_base_id",
			"document_id", "ordinal", "body", "tokens", "embedding_model", "embedding"}, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("store the chunks of document %s: %w", doc.ID, err)
		}
		if _, err := q.FinishKnowledgeDocument(ctx, db.FinishKnowledgeDocumentParams{ID: doc.ID, Version: doc.Version, Body: &text,
			ContentLength: int32(len([]rune(text))), ChunkCount: int32(len(chunks)), EmbeddingModel: &route.Label,
			EmbeddingTokens: tokens, Now: s.clock().UTC()}); err != nil {
			return err
		}
		return q.NotifyKnowledge(ctx, IndexKey(doc.Project, doc.Agent, route.Label))
	})
	if errors.Is(err, errUnpaid) {
		return &failure{reason: "The project's balance cannot pay for embedding this document with the installation's model."}
	}
	return err
}

// errUnpaid rolls back a document's chunks that the project's balance could not pay for.
var errUnpaid = errors.New("the balance cannot pay for the embeddings")

// text is the document's readable text: given, or extracted from its file or URL.
func (s *Service) text(ctx context.Context, doc db.KnowledgeDocument) (string, error) {
	data, contentType, name := doc.Original, deref(doc.ContentType), deref(doc.Filename)
	switch doc.Source {
	case "text":
		return string(data), nil
	case "url":
		if data == nil {
			got, err := s.Fetch.get(ctx, deref(doc.SourceUrl))
			var ff *fetchFailure
			if errors.As(err, &ff) {
				return "", &failure{reason: ff.reason}
			}
			if err != nil {
				return "", err
			}
			data, contentType = got.data, got.contentType
			if _, err := db.Planned(s.Pool).SaveKnowledgeDocumentSource(ctx, db.SaveKnowledgeDocumentSourceParams{ID: doc.ID,
				Version: doc.Version, Original: data, ContentType: &contentType}); err != nil {
				return "", err
			}
		}
		if u, err := url.Parse(deref(doc.SourceUrl)); err == nil {
			name = path.Base(u.Path)
		}
	}
	kind, err := extract.KindOf(contentType, name, data)
	if err == nil {
		var text string
		if text, err = extract.Text(ctx, kind, data); err == nil {
			return text, nil
		}
	}
	var ee *extract.Error
	if errors.As(err, &ee) {
		return "", &failure{reason: ee.Message}
	}
	return "", err
}

// reembed processes again a's ready documents whose vectors another model made: retrieval by
// meaning finds them again once they are done (by words, it finds them meanwhile).
func (s *Service) reembed(ctx context.Context, a *v1alpha1.Agent) error {
	route, err := s.Routes.EmbeddingRoute(ctx, a)
	if err != nil || route.Problem != "" {
		return err
	}
	stale, err := db.Planned(s.Pool).StaleKnowledgeDocuments(ctx, db.StaleKnowledgeDocumentsParams{Project: a.Namespace, Agent: a.Name,
		EmbeddingModel: route.Label})
	if err != nil {
		return err
	}
	for _, d := range stale {
		err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
			version, err := db.Planned(tx).RequeueKnowledgeDocument(ctx, db.RequeueKnowledgeDocumentParams{ID: d.ID, Version: d.Version, Now: s.clock().UTC()})
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // changed meanwhile: its own job embeds it
			}
			if err != nil {
				return err
			}
			_, err = s.Queue.InsertTx(ctx, tx, ProcessArgs{DocumentID: d.ID, Version: version}, nil)
			return err
		})
		if err != nil {
			return fmt.Errorf("embed document %s again: %w", d.ID, err)
		}
		s.Log.Info("embedding a document again with the agent's model", "document", d.ID, "model", route.Label)
	}
	return nil
}

// embedAll embeds the chunks, EmbedBatch a request; tokens are what the model counted (or, where
// it counts none, the chunks' estimate).
func embedAll(ctx context.Context, route Route, chunks []chunk.Chunk) ([][]float32, int64, error) {
	out := make([][]float32, 0, len(chunks))
	var tokens int64
	for start := 0; start < len(chunks); start += EmbedBatch {
		batch := chunks[start:min(start+EmbedBatch, len(chunks))]
		inputs := make([]string, len(batch))
		var estimate int64
		for i, c := range batch {
			inputs[i] = c.Text
			estimate += int64(c.Tokens)
		}
		res, err := route.Embedder.Embed(ctx, llm.EmbedRequest{Model: route.Model, Inputs: inputs, Dimensions: route.Dimensions})
		if err != nil {
			return nil, 0, err
		}
		if len(res.Vectors) != len(inputs) {
			return nil, 0, &llm.Error{Kind: llm.KindUnavailable, Message: fmt.Sprintf("%d vectors for %d inputs", len(res.Vectors), len(inputs))}
		}
		for _, v := range res.Vectors {
			out = append(out, normalize(v))
		}
		if res.Usage.InputTokens > 0 {
			tokens += res.Usage.InputTokens
		} else {
			tokens += estimate
		}
	}
	return out, tokens, nil
}

// normalize scales v to unit length, so that cosine similarity is a dot product.
func normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return v
	}
	n := float32(1 / math.Sqrt(sum))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * n
	}
	return out
}

// encodeVector is v as stored: little-endian float32s.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// decodeVector reads a stored vector.
func decodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func ptr[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
