package vectorindex

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/viterin/vek/vek32"
)

// graph is a hierarchical navigable small world graph (Malkov & Yashunin, "Efficient and robust
// approximate nearest neighbor search using HNSW graphs", 2016): built once from all the items of a
// key, then only searched, so searches take no locks. It is written here rather than taken from
// github.com/coder/hnsw v0.6.1: that version's heap returns an arbitrary leaf as the "worst"
// candidate and its search stops at the first step that does not improve the best result, which on
// 20,000 random 256-dimension vectors gave a recall@10 of 0.01–0.06 whatever M and EfSearch
// (coder/hnsw pull requests #17, #20 and #22 describe the bugs; no release has the fixes).
//
// The layout is flat so that its memory is known to the byte (see BytesPerItem): one slab of
// vectors, one slab of layer-0 neighbour lists, one slab for the few nodes above layer 0, and the
// IDs as one string with end offsets.
type graph struct {
	n, dims int
	m, m0   int // neighbours kept per node on layers above 0, and on layer 0 (2M, as in the paper)
	vecs    []float32
	links0  []int32 // per node m0+1 slots: the count, then the neighbours
	upOff   []int32 // per node: where its first upper-layer list starts in up, or -1
	up      []int32 // per node and layer above 0: m+1 slots, the count then the neighbours
	entry   int32   // a node on the top layer
	top     int
	idText  string
	idEnd   []uint32
	bytes   int64
	// words ranks the items by the words of a query (SearchWords).
	words *wordIndex

	// locks guard the neighbour lists while workers insert in parallel; nil once built.
	locks   []sync.Mutex
	scratch sync.Pool
}

type distID struct {
	d  float32 // cosine distance, 1 − dot product
	id int32
}

// maxLevel bounds a node's level; with M ≥ 2 a node reaches it with probability at most 2⁻³⁰.
const maxLevel = 30

// graphOverhead is what a graph costs besides its items: its struct, slice headers and the entry
// in the index's map, rounded up.
const graphOverhead = 512

var errNoDims = errors.New("vectorindex: items have vectors of no dimension")

// build makes a graph of items. It copies and normalises the vectors (so the caller's slices can go
// and cosine is a dot product even if a vector was not quite of unit length) and the IDs.
func build(items []Item, o Options) (*graph, error) {
	n := len(items)
	g := &graph{n: n, m: o.M, m0: 2 * o.M, bytes: graphOverhead}
	if n == 0 {
		return g, nil
	}
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("vectorindex: %d items, more than a graph holds", n)
	}
	g.dims = len(items[0].Vector)
	if g.dims == 0 {
		return nil, errNoDims
	}
	g.vecs = make([]float32, n*g.dims)
	textLen := 0
	for i, it := range items {
		if len(it.Vector) != g.dims {
			return nil, fmt.Errorf("vectorindex: item %q has %d dimensions, the others %d", it.ID, len(it.Vector), g.dims)
		}
		v := g.vecs[i*g.dims : (i+1)*g.dims]
		copy(v, it.Vector)
		if norm := vek32.Norm(v); norm > 0 {
			vek32.MulNumber_Inplace(v, 1/norm)
		}
		textLen += len(it.ID)
	}
	var text strings.Builder
	text.Grow(textLen)
	g.idEnd = make([]uint32, n)
	for i, it := range items {
		text.WriteString(it.ID)
		g.idEnd[i] = uint32(text.Len())
	}
	if text.Len() > math.MaxUint32 {
		return nil, fmt.Errorf("vectorindex: %d bytes of IDs, more than a graph holds", text.Len())
	}
	g.idText = text.String()

	// Levels are drawn up front, so the upper-layer lists fit in one slab; a fixed seed keeps the
	// shape of a graph the same from one load to the next (levels do not depend on the data).
	levels := make([]uint8, n)
	rng := rand.New(rand.NewPCG(uint64(n), 0x9e3779b97f4a7c15))
	mL := 1 / math.Log(float64(o.M))
	g.upOff = make([]int32, n)
	upper := 0
	for i := range levels {
		l := min(int(-math.Log(1-rng.Float64())*mL), maxLevel)
		levels[i] = uint8(l)
		g.upOff[i] = -1
		if l > 0 {
			g.upOff[i] = int32(upper * (g.m + 1))
			upper += l
		}
	}
	g.up = make([]int32, upper*(g.m+1))
	g.links0 = make([]int32, n*(g.m0+1))
	g.entry, g.top = 0, int(levels[0])
	g.bytes += int64(n)*BytesPerItem(g.dims, o) + int64(textLen)
	g.scratch.New = func() any { return g.newScratch() }

	g.locks = make([]sync.Mutex, n)
	var (
		next  atomic.Int64
		topMu sync.Mutex // guards entry and top
		wg    sync.WaitGroup
	)
	next.Store(1) // node 0 is the first entry point
	workers := min(runtime.GOMAXPROCS(0), max(1, n/1000))
	for range workers {
		wg.Go(func() {
			s := g.newScratch()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				g.insert(s, int32(i), int(levels[i]), o.EfConstruction, &topMu)
			}
		})
	}
	wg.Wait()
	g.locks = nil
	var wordBytes int64
	g.words, wordBytes = buildWords(items)
	g.bytes += wordBytes
	return g, nil
}

func (g *graph) vec(i int32) []float32 {
	return g.vecs[int(i)*g.dims : (int(i)+1)*g.dims]
}

func (g *graph) id(i int32) string {
	start := uint32(0)
	if i > 0 {
		start = g.idEnd[i-1]
	}
	return g.idText[start:g.idEnd[i]]
}

func (g *graph) dist(q []float32, i int32) float32 {
	return 1 - vek32.Dot(q, g.vec(i))
}

// list is node i's neighbour list on layer l: the count, then room for the neighbours.
func (g *graph) list(i int32, l int) []int32 {
	if l == 0 {
		o := int(i) * (g.m0 + 1)
		return g.links0[o : o+g.m0+1]
	}
	o := int(g.upOff[i]) + (l-1)*(g.m+1)
	return g.up[o : o+g.m+1]
}

// neighbours returns node i's neighbours on layer l; while building, a copy taken under the node's
// lock, since another worker may be rewriting the list.
func (g *graph) neighbours(s *scratch, i int32, l int) []int32 {
	if g.locks == nil {
		ls := g.list(i, l)
		return ls[1 : 1+ls[0]]
	}
	g.locks[i].Lock()
	ls := g.list(i, l)
	s.buf = append(s.buf[:0], ls[1:1+ls[0]]...)
	g.locks[i].Unlock()
	return s.buf
}

// scratch is one search's working memory, pooled per graph: visit marks (2 bytes per item) and
// heaps. It is not part of BytesPerItem: it exists only while searches run.
type scratch struct {
	marks     []uint16
	epoch     uint16
	cand, res minHeap
	out, eps  []distID
	sel, sel2 []distID
	cands     []distID
	buf       []int32
}

func (g *graph) newScratch() *scratch {
	return &scratch{marks: make([]uint16, g.n)}
}

// visit marks i and reports whether it was unmarked. Marks are epochs, so a search starts by
// bumping the epoch instead of clearing n marks.
func (s *scratch) visit(i int32) bool {
	if s.marks[i] == s.epoch {
		return false
	}
	s.marks[i] = s.epoch
	return true
}

func (s *scratch) newEpoch() {
	s.epoch++
	if s.epoch == 0 {
		clear(s.marks)
		s.epoch = 1
	}
}

// insert links node i into layers level..0 (Algorithm 1 of the paper).
func (g *graph) insert(s *scratch, i int32, level, efc int, topMu *sync.Mutex) {
	q := g.vec(i)
	topMu.Lock()
	ep, top := g.entry, g.top
	if level > top {
		// A node that raises the top holds the lock until it is the entry point, so no other
		// node enters through layers it has not linked yet.
		defer topMu.Unlock()
	} else {
		topMu.Unlock()
	}
	cur := distID{g.dist(q, ep), ep}
	for l := top; l > level; l-- {
		cur = g.greedy(s, q, cur, l)
	}
	s.eps = append(s.eps[:0], cur)
	for l := min(level, top); l >= 0; l-- {
		w := g.searchLayer(s, q, s.eps, efc, l)
		s.sel = g.selectNeighbours(s.sel[:0], w, g.m, i)
		g.locks[i].Lock()
		ls := g.list(i, l)
		ls[0] = int32(len(s.sel))
		for j, c := range s.sel {
			ls[1+j] = c.id
		}
		g.locks[i].Unlock()
		mmax := g.m
		if l == 0 {
			mmax = g.m0
		}
		for _, c := range s.sel {
			g.connect(s, c.id, i, c.d, l, mmax)
		}
		s.eps = append(s.eps[:0], w...)
	}
	if level > top {
		g.entry, g.top = i, level
	}
}

// connect adds i to node nb's list on layer l; a full list keeps the best mmax of its neighbours
// and i by the same heuristic that chose them.
func (g *graph) connect(s *scratch, nb, i int32, d float32, l, mmax int) {
	g.locks[nb].Lock()
	defer g.locks[nb].Unlock()
	ls := g.list(nb, l)
	c := int(ls[0])
	if c < mmax {
		ls[1+c] = i
		ls[0]++
		return
	}
	v := g.vec(nb)
	s.cands = append(s.cands[:0], distID{d, i})
	for _, e := range ls[1 : 1+c] {
		s.cands = append(s.cands, distID{g.dist(v, e), e})
	}
	slices.SortFunc(s.cands, func(a, b distID) int { return cmp.Compare(a.d, b.d) })
	s.sel2 = g.selectNeighbours(s.sel2[:0], s.cands, mmax, nb)
	ls[0] = int32(len(s.sel2))
	for j, e := range s.sel2 {
		ls[1+j] = e.id
	}
}

// selectNeighbours appends to out up to m of cands (nearest first) by the paper's heuristic
// (Algorithm 4): a candidate is kept only if it is nearer to the base than to every one kept, so
// links spread in all directions instead of bunching in one cluster.
func (g *graph) selectNeighbours(out, cands []distID, m int, self int32) []distID {
	for _, c := range cands {
		if len(out) >= m {
			break
		}
		if c.id == self {
			continue
		}
		keep := true
		v := g.vec(c.id)
		for _, r := range out {
			if g.dist(v, r.id) < c.d {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}

// greedy walks layer l from cur to the nearest node it can reach one step at a time.
func (g *graph) greedy(s *scratch, q []float32, cur distID, l int) distID {
	for changed := true; changed; {
		changed = false
		for _, nb := range g.neighbours(s, cur.id, l) {
			if d := g.dist(q, nb); d < cur.d {
				cur, changed = distID{d, nb}, true
			}
		}
	}
	return cur
}

// searchLayer returns the ef nearest nodes of layer l it finds from eps, nearest first
// (Algorithm 2). The result is s.out, valid until the next call.
func (g *graph) searchLayer(s *scratch, q []float32, eps []distID, ef, l int) []distID {
	s.newEpoch()
	s.cand.a, s.res.a = s.cand.a[:0], s.res.a[:0]
	// res is a max-heap of the results, kept as a min-heap of negated distances.
	for _, e := range eps {
		s.visit(e.id)
		s.cand.push(e)
		s.res.push(distID{-e.d, e.id})
		if s.res.len() > ef {
			s.res.pop()
		}
	}
	for s.cand.len() > 0 {
		c := s.cand.pop()
		if c.d > -s.res.top().d {
			break // the nearest unexpanded node is farther than the farthest result
		}
		for _, nb := range g.neighbours(s, c.id, l) {
			if !s.visit(nb) {
				continue
			}
			d := g.dist(q, nb)
			if s.res.len() < ef || d < -s.res.top().d {
				s.cand.push(distID{d, nb})
				s.res.push(distID{-d, nb})
				if s.res.len() > ef {
					s.res.pop()
				}
			}
		}
	}
	s.out = slices.Grow(s.out[:0], s.res.len())[:s.res.len()]
	for j := len(s.out) - 1; j >= 0; j-- {
		r := s.res.pop()
		s.out[j] = distID{-r.d, r.id}
	}
	return s.out
}

// search returns the k nearest nodes to q, nearest first, looking at ef candidates. A graph of no
// more than ef items is scanned whole: as fast as the walk, and exact.
func (g *graph) search(q []float32, k, ef int) []distID {
	if g.n == 0 || k <= 0 {
		return nil
	}
	if g.n <= ef {
		all := make([]distID, g.n)
		for i := range all {
			all[i] = distID{g.dist(q, int32(i)), int32(i)}
		}
		slices.SortFunc(all, func(a, b distID) int { return cmp.Compare(a.d, b.d) })
		return all[:min(k, g.n)]
	}
	s := g.scratch.Get().(*scratch)
	defer g.scratch.Put(s)
	cur := distID{g.dist(q, g.entry), g.entry}
	for l := g.top; l > 0; l-- {
		cur = g.greedy(s, q, cur, l)
	}
	w := g.searchLayer(s, q, []distID{cur}, max(ef, k), 0)
	return slices.Clone(w[:min(k, len(w))])
}

// minHeap is a binary min-heap on d.
type minHeap struct{ a []distID }

func (h *minHeap) len() int      { return len(h.a) }
func (h *minHeap) top() distID   { return h.a[0] }
func (h *minHeap) push(x distID) { h.a = append(h.a, x); h.up(len(h.a) - 1) }

func (h *minHeap) pop() distID {
	x := h.a[0]
	last := len(h.a) - 1
	h.a[0] = h.a[last]
	h.a = h.a[:last]
	if last > 0 {
		h.down(0)
	}
	return x
}

func (h *minHeap) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if h.a[p].d <= h.a[j].d {
			return
		}
		h.a[p], h.a[j] = h.a[j], h.a[p]
		j = p
	}
}

func (h *minHeap) down(j int) {
	n := len(h.a)
	for {
		c := 2*j + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h.a[r].d < h.a[c].d {
			c = r
		}
		if h.a[j].d <= h.a[c].d {
			return
		}
		h.a[j], h.a[c] = h.a[c], h.a[j]
		j = c
	}
}
