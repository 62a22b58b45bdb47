package vectorindex

import (
	"context"
	"math"
	"slices"
	"strings"
)

// Words are an item's terms and how often each occurs (an item's tsvector, read from Postgres).
type Words map[string]int32

// wordIndex ranks a graph's items by the words of a query with BM25 (k1 = 1.2, b = 0.75): a
// posting list a term, held beside the graph. Postgres full-text search ranks every match of a
// query on each call (ts_rank over tens of thousands of matching tsvectors is hundreds of
// milliseconds at 100,000 chunks); postings ranked here cost a few milliseconds.
type wordIndex struct {
	postings map[string][]posting
	lengths  []uint16 // each item's number of terms, capped
	avgLen   float64
}

type posting struct {
	item int32
	tf   uint16
}

// BM25's constants, the usual ones.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// postingBytes is what a posting costs, and termOverhead a term's entry (map slot, string header
// and its text, rounded); both for the memory estimate.
const (
	postingBytes = 8
	termOverhead = 64
)

// buildWords indexes the items' words; none has any: nil.
func buildWords(items []Item) (*wordIndex, int64) {
	if !slices.ContainsFunc(items, func(it Item) bool { return len(it.Words) > 0 }) {
		return nil, 0
	}
	w := &wordIndex{postings: map[string][]posting{}, lengths: make([]uint16, len(items))}
	var total float64
	for i, it := range items {
		n := 0
		for term, tf := range it.Words {
			w.postings[term] = append(w.postings[term], posting{item: int32(i), tf: uint16(min(tf, math.MaxUint16))})
			n += int(tf)
		}
		w.lengths[i] = uint16(min(n, math.MaxUint16))
		total += float64(n)
	}
	if len(items) > 0 {
		w.avgLen = total / float64(len(items))
	}
	bytes := int64(2 * len(items))
	for term, ps := range w.postings {
		// Each list exactly as long as it is: append's spare capacity would be held for good.
		w.postings[term] = slices.Clip(ps)
		bytes += termOverhead + int64(len(term)) + postingBytes*int64(len(ps))
	}
	return w, bytes
}

// search returns the k items with the highest BM25 score for terms.
func (w *wordIndex) search(terms []string, k int) []distID {
	if w == nil || len(w.lengths) == 0 {
		return nil
	}
	n := float64(len(w.lengths))
	scores := map[int32]float64{}
	for _, t := range terms {
		ps := w.postings[t]
		if len(ps) == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := bm25K1 * (1 - bm25B + bm25B*float64(w.lengths[p.item])/max(w.avgLen, 1))
			scores[p.item] += idf * tf * (bm25K1 + 1) / (tf + norm)
		}
	}
	out := make([]distID, 0, len(scores))
	for item, s := range scores {
		out = append(out, distID{d: float32(-s), id: item}) // lower is better, as distances
	}
	slices.SortFunc(out, func(a, b distID) int {
		if a.d != b.d {
			if a.d < b.d {
				return -1
			}
			return 1
		}
		return int(a.id - b.id)
	})
	return out[:min(k, len(out))]
}

// SearchWords returns the k items of key whose words match terms best (BM25; Score is the BM25
// score), loading the key's graph as Search does. terms are lexemes as the items' Words hold
// them (the same lower-casing); repeated terms count once.
func (x *Index) SearchWords(ctx context.Context, key string, terms []string, k int) ([]Hit, error) {
	if k <= 0 || len(terms) == 0 {
		return nil, nil
	}
	g, err := x.graph(ctx, key)
	if err != nil || g.n == 0 {
		return nil, err
	}
	found := g.words.search(uniq(terms), k)
	hits := make([]Hit, len(found))
	for i, f := range found {
		hits[i] = Hit{ID: strings.Clone(g.id(f.id)), Score: -f.d}
	}
	return hits, nil
}

func uniq(terms []string) []string {
	seen := make(map[string]bool, len(terms))
	out := terms[:0:0]
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
