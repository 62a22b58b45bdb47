package knowledge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard-io/switchboard/api/v1alpha1"
	"github.com/switchboard-io/switchboard/internal/knowledge/vectorindex"
	"github.com/switchboard-io/switchboard/internal/llm"
	"github.com/switchboard-io/switchboard/internal/postgres/db"
)

// Route is the model that embeds an agent's chunks and the queries against them.
type Route struct {
	Embedder   llm.Embedder
	Model      string
	Dimensions int // 0: the model's own
	// Label names the model and dimensions, as chunks record it: "openai/text-embedding-3-small@256".
	Label string
	// Local: Switchboard's own embedder (no provider is called, nothing is paid), which test
	// executions may use too.
	Local bool
	// Problem, when set, is why nothing can embed for the agent.
	Problem string
	// Installation: the installation's own Provider embeds (its account pays the provider), so
	// the project pays the tokens at its PriceList's model prices.
	Installation bool
}

// Routes says which model embeds an agent's documents, and charges what the installation's
// model costs (the agent runtime, which knows the agent's keys, the installation's Providers
// and the prices).
type Routes interface {
	EmbeddingRoute(ctx context.Context, a *v1alpha1.Agent) (Route, error)
	// ChargeEmbedding takes what tokens of model cost from the project's balance, inside tx (as
	// chargeID in its ledger); false: the balance cannot pay, and the caller rolls tx back.
	ChargeEmbedding(ctx context.Context, tx pgx.Tx, project, chargeID, model string, tokens int64) (bool, error)
}

// Retrieval: the nearest chunks by meaning and the best by words, each candidates deep,
// merged by reciprocal rank fusion (k = rrfK, as in Cormack et al.).
const (
	candidates   = 20
	rrfK         = 60
	DefaultChunk = 5
)

// Passage is a chunk given to the model.
type Passage struct {
	ChunkID, DocumentID, KnowledgeBaseID, Title, Text string
	Score                                             float64
}

// Retrieve returns the k chunks of a's knowledge that answer query best. A test execution
// does not call a provider: where the agent's vectors are a provider's, it searches by words
// alone. An agent without a ready document costs one query.
func (s *Service) Retrieve(ctx context.Context, a *v1alpha1.Agent, testMode bool, query string, k int) ([]Passage, error) {
	q := db.Planned(s.Pool)
	has, err := q.HasKnowledge(ctx, db.HasKnowledgeParams{Project: a.Namespace, Agent: a.Name})
	if err != nil || !has || strings.TrimSpace(query) == "" {
		return nil, err
	}
	var byMeaning []vectorindex.Hit
	route, err := s.Routes.EmbeddingRoute(ctx, a)
	if err != nil {
		return nil, err
	}
	if route.Problem == "" && (route.Local || !testMode) {
		res, err := route.Embedder.Embed(ctx, llm.EmbedRequest{Model: route.Model, Inputs: []string{query}, Dimensions: route.Dimensions})
		if err != nil {
			// The answer is still given, from words alone.
			s.Log.Info("embed a query for retrieval", "agent", a.Namespace+"/"+a.Name, "error", err.Error())
		} else if len(res.Vectors) == 1 {
			if byMeaning, err = s.Index.Search(ctx, IndexKey(a.Namespace, a.Name, route.Label), normalize(res.Vectors[0]), candidates); err != nil {
				return nil, fmt.Errorf("search the vectors of %s/%s: %w", a.Namespace, a.Name, err)
			}
		}
	}
	byWords, err := s.searchWords(ctx, q, a, route, query)
	if err != nil {
		return nil, err
	}
	scores := map[string]float64{}
	for i, h := range byMeaning {
		scores[h.ID] += 1 / float64(rrfK+i+1)
	}
	for i, id := range byWords {
		scores[id] += 1 / float64(rrfK+i+1)
	}
	ids := make([]string, 0, len(scores))
	for id := range scores {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y string) int {
		if scores[x] != scores[y] {
			if scores[x] > scores[y] {
				return -1
			}
			return 1
		}
		return strings.Compare(x, y)
	})
	if len(ids) > k {
		ids = ids[:k]
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := q.KnowledgeChunksByID(ctx, db.KnowledgeChunksByIDParams{Ids: ids, Project: a.Namespace, Agent: a.Name})
	if err != nil {
		return nil, err
	}
	byID := map[string]db.KnowledgeChunksByIDRow{}
	for _, r := range rows {
		byID[r.ID] = r
	}
	out := make([]Passage, 0, len(ids))
	for _, id := range ids {
		if r, ok := byID[id]; ok { // a chunk deleted since the index was loaded is skipped
			out = append(out, Passage{ChunkID: id, DocumentID: r.DocumentID, KnowledgeBaseID: r.KnowledgeBaseID, Title: r.Title,
				Text: r.Body, Score: scores[id]})
		}
	}
	return out, nil
}

// searchWords returns the ids of the chunks whose words match the query best: ranked by BM25
// in the agent's in-process index (the query's words as to_tsvector makes them), or, where that
// index holds nothing (no model embeds for the agent, or its documents are being embedded
// again by a new one), by Postgres full-text search over the chunks' tsvectors.
func (s *Service) searchWords(ctx context.Context, q *db.Queries, a *v1alpha1.Agent, route Route, query string) ([]string, error) {
	if route.Problem == "" {
		terms, err := q.QueryLexemes(ctx, query)
		if err != nil {
			return nil, err
		}
		hits, err := s.Index.SearchWords(ctx, IndexKey(a.Namespace, a.Name, route.Label), terms, candidates)
		if err != nil {
			return nil, fmt.Errorf("search the words of %s/%s: %w", a.Namespace, a.Name, err)
		}
		if len(hits) > 0 {
			ids := make([]string, len(hits))
			for i, h := range hits {
				ids[i] = h.ID
			}
			return ids, nil
		}
	}
	tsq := orQuery(query)
	if tsq == "" {
		return nil, nil
	}
	rows, err := q.KnowledgeKeywordSearch(ctx, db.KnowledgeKeywordSearchParams{Project: a.Namespace, Agent: a.Name,
		Query: tsq, MaxRows: candidates})
	if err != nil {
		return nil, fmt.Errorf("search the words of %s/%s: %w", a.Namespace, a.Name, err)
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, nil
}

// LoadVectors is the vector index's loader: an index key's vectors from Postgres.
func (s *Service) LoadVectors(ctx context.Context, key string) ([]vectorindex.Item, error) {
	project, rest, _ := strings.Cut(key, "/")
	agent, model, _ := strings.Cut(rest, "/")
	rows, err := db.Planned(s.Pool).KnowledgeVectors(ctx, db.KnowledgeVectorsParams{Project: project, Agent: agent, EmbeddingModel: model})
	if err != nil {
		return nil, err
	}
	out := make([]vectorindex.Item, len(rows))
	for i, r := range rows {
		out[i] = vectorindex.Item{ID: r.ID, Vector: decodeVector(r.Embedding), Words: parseTSVector(r.Words)}
	}
	return out, nil
}

// parseTSVector reads a tsvector's text form ('lexeme':1,4 'other':2) into its lexemes and how
// often each occurs (a lexeme without positions once). A quote inside a lexeme is doubled.
func parseTSVector(s string) vectorindex.Words {
	out := vectorindex.Words{}
	for i := 0; i < len(s); {
		if s[i] != '\'' {
			i++
			continue
		}
		var lex strings.Builder
		j := i + 1
		for ; j < len(s); j++ {
			if s[j] == '\'' {
				if j+1 < len(s) && s[j+1] == '\'' {
					lex.WriteByte('\'')
					j++
					continue
				}
				break
			}
			if s[j] == '\\' && j+1 < len(s) {
				j++
			}
			lex.WriteByte(s[j])
		}
		n := int32(1)
		if j+1 < len(s) && s[j+1] == ':' {
			end := strings.IndexByte(s[j+1:], ' ')
			if end < 0 {
				end = len(s) - j - 1
			}
			n = int32(strings.Count(s[j+1:j+1+end], ",") + 1)
			j += end
		}
		out[lex.String()] += n
		i = j + 1
	}
	return out
}

// orQuery makes a tsquery that matches any word of text: words of letters and digits only, so
// nothing in text is taken for tsquery syntax.
func orQuery(text string) string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	seen := map[string]bool{}
	var out []string
	for _, w := range words {
		if len([]rune(w)) < 2 || seen[w] || len(out) == 64 {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return strings.Join(out, " | ")
}
