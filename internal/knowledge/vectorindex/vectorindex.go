// Package vectorindex holds approximate-nearest-neighbour indexes of knowledge-base vectors in the
// memory of the process that serves agent executions: one HNSW graph per key (a string the caller
// makes, e.g. "project/agent/model"), built on first use from the vectors persisted in Postgres,
// kept within a memory budget (least recently used graphs go first), and dropped when another
// replica changes the data (Listen).
//
// # Memory
//
// A graph's size is estimated, not measured: items × BytesPerItem(dims) + the bytes of the IDs +
// 512 bytes. The layout is flat (one slab each for vectors, layer-0 links, upper-layer links, IDs),
// so the estimate is what the slabs take, to a few bytes per item: for 256 dimensions and M = 16,
// 1,169 bytes per item (1,024 of them the vector); runtime.MemStats agrees to 0.1% on 20,000 such
// items (TestBytesPerItemMatchesTheHeap). Not counted: the scratch a running search
// borrows (2 bytes per item of the graph per concurrent search, pooled), and, while a graph loads,
// the loader's items and the build's locks (8 bytes per item), which are garbage once it is built.
//
// A load that would pass the budget first evicts the least recently searched graphs. A graph
// larger than the whole budget is still built and kept (it is what was asked for), alone; the next
// load of another key evicts it first, since it is then the only graph held.
package vectorindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/viterin/vek/vek32"
)

// Item is one vector of a key, of unit length (cosine similarity is then the dot product; vectors
// are normalised when a graph is built all the same).
type Item struct {
	ID     string
	Vector []float32
	// Words, when given, are ranked by SearchWords.
	Words Words
}

// Hit is a search result. Score is the cosine similarity to the query: higher is nearer.
type Hit struct {
	ID    string
	Score float32
}

// Loader reads every item of a key from the store (Postgres); called on first use and after
// invalidation. All items of a key must have the same number of dimensions.
type Loader func(ctx context.Context, key string) ([]Item, error)

// Defaults of Options. M = 16 is the HNSW paper's usual choice. On 20,000 embedding-like vectors
// of 256 dimensions (a 32-dimensional latent plus noise, see the tests) EfSearch = 100 finds 98%
// of the true 10 nearest (64: 95%). Uniformly random vectors have no structure for a graph to
// exploit: there it finds 45%, and finding 95% takes EfSearch ≈ 1,000, which visits two thirds of
// the graph. EfConstruction = 200 built barely better graphs than 100 on either kind of data, in twice
// the time.
const (
	DefaultMemoryBudget   = 256 << 20
	DefaultM              = 16
	DefaultEfSearch       = 100
	DefaultEfConstruction = 100
)

// Options configure an Index; zero fields take the defaults above.
type Options struct {
	// MemoryBudget is the bytes for all graphs together; least recently used graphs are evicted
	// past it.
	MemoryBudget int64
	// M is the number of neighbours a node links to on each layer (2M on the bottom layer): more
	// is better recall and more memory (8 bytes per item per unit of M). Values below 2 mean the
	// default.
	M int
	// EfSearch is how many candidates a search keeps (at least k): more is better recall and
	// slower searches.
	EfSearch int
	// EfConstruction is EfSearch while building: more is a better graph and a slower load.
	EfConstruction int
	// Metrics, if set, gets gauges of the bytes and graphs held and counters of loads and
	// evictions (switchboard_knowledge_index_*). They are registered as with MustRegister: one
	// Index per Registerer.
	Metrics prometheus.Registerer
}

func (o Options) withDefaults() Options {
	if o.MemoryBudget <= 0 {
		o.MemoryBudget = DefaultMemoryBudget
	}
	if o.M < 2 {
		o.M = DefaultM
	}
	if o.EfSearch <= 0 {
		o.EfSearch = DefaultEfSearch
	}
	if o.EfConstruction <= 0 {
		o.EfConstruction = DefaultEfConstruction
	}
	return o
}

// BytesPerItem estimates what one item of dims dimensions costs in memory with these options,
// besides its ID's bytes: the vector (4 × dims), its layer-0 list (a count and 2M neighbours of
// 4 bytes), its offsets (upper lists, end of the ID: 8), and its share of upper-layer lists — a
// node reaches layer l with probability M⁻ˡ, so it has 1/(M−1) upper lists on average, each a
// count and M neighbours.
func BytesPerItem(dims int, o Options) int64 {
	o = o.withDefaults()
	m := int64(o.M)
	upper := (4*(m+1) + m - 2) / (m - 1) // 4(M+1)/(M−1), rounded up
	return 4*int64(dims) + 4*(2*m+1) + 8 + upper
}

// Index holds one graph per key. Its methods are safe for concurrent use.
type Index struct {
	load Loader
	o    Options

	mu      sync.RWMutex
	held    map[string]*entry
	loading map[string]*call
	bytes   int64
	clock   atomic.Int64 // ticks at every search: the recency of the LRU

	loads     *prometheus.CounterVec
	evictions prometheus.Counter
}

type entry struct {
	g        *graph
	lastUsed atomic.Int64
}

// call is a load in flight, shared by the searches that wait for it.
type call struct {
	done  chan struct{}
	g     *graph
	err   error
	stale bool // invalidated while loading: its result serves its waiters but is not kept
}

// New returns an Index that loads keys with load.
func New(load Loader, o Options) *Index {
	x := &Index{
		load:    load,
		o:       o.withDefaults(),
		held:    map[string]*entry{},
		loading: map[string]*call{},
	}
	if r := o.Metrics; r != nil {
		const ns, sub = "switchboard", "knowledge_index"
		x.loads = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "loads_total",
			Help: "Graphs loaded from the store and built, by result (ok, error).",
		}, []string{"result"})
		x.evictions = prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "evictions_total",
			Help: "Graphs evicted to stay within the memory budget.",
		})
		for _, c := range []prometheus.Collector{x.loads, x.evictions,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Namespace: ns, Subsystem: sub, Name: "bytes",
				Help: "Estimated bytes of the graphs held.",
			}, func() float64 { b, _ := x.Stats(); return float64(b) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Namespace: ns, Subsystem: sub, Name: "graphs",
				Help: "Graphs held.",
			}, func() float64 { _, n := x.Stats(); return float64(n) }),
		} {
			// A process has one Index; where a second shares the registry (tests running several
			// instances in one process), the first one's metrics stay.
			if err := r.Register(c); err != nil {
				var dup prometheus.AlreadyRegisteredError
				if !errors.As(err, &dup) {
					panic(err)
				}
			}
		}
	}
	return x
}

// Search returns the k nearest items of key to v, nearest first, loading the key's graph when it
// is not held (concurrent callers of one key share one load). A key with no items returns nothing.
//
// The load runs without ctx's cancellation, so that one caller giving up does not fail the others
// waiting for it (a caller whose ctx ends stops waiting and gets ctx's error); the loader gets
// loadTimeout instead, so that a hung read cannot hold the key's searches for good.
func (x *Index) Search(ctx context.Context, key string, v []float32, k int) ([]Hit, error) {
	if k <= 0 {
		return nil, nil
	}
	if len(v) == 0 {
		return nil, errors.New("vectorindex: empty query vector")
	}
	g, err := x.graph(ctx, key)
	if err != nil || g.n == 0 {
		return nil, err
	}
	if len(v) != g.dims {
		return nil, fmt.Errorf("vectorindex: query has %d dimensions, key %q has %d", len(v), key, g.dims)
	}
	// Distances use v as it is (scaling the query does not change the order); its norm turns the
	// dot products into cosines.
	norm := vek32.Norm(v)
	if norm == 0 || math.IsNaN(float64(norm)) || math.IsInf(float64(norm), 0) {
		return nil, errors.New("vectorindex: query vector of zero or non-finite length")
	}
	found := g.search(v, k, max(x.o.EfSearch, k))
	hits := make([]Hit, len(found))
	for i, f := range found {
		// A copy: a slice of the graph's ID text would keep all of it alive after eviction.
		hits[i] = Hit{ID: strings.Clone(g.id(f.id)), Score: (1 - f.d) / norm}
	}
	return hits, nil
}

// graph returns key's graph, loading it if it is not held.
func (x *Index) graph(ctx context.Context, key string) (*graph, error) {
	x.mu.RLock()
	e := x.held[key]
	x.mu.RUnlock()
	if e == nil {
		x.mu.Lock()
		e = x.held[key]
		if e == nil {
			c := x.loading[key]
			if c == nil {
				c = &call{done: make(chan struct{})}
				x.loading[key] = c
				go x.run(context.WithoutCancel(ctx), key, c)
			}
			x.mu.Unlock()
			select {
			case <-c.done:
				return c.g, c.err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		x.mu.Unlock()
	}
	e.lastUsed.Store(x.clock.Add(1))
	return e.g, nil
}

// run loads and builds key's graph for c and keeps it unless it was invalidated meanwhile.
func (x *Index) run(ctx context.Context, key string, c *call) {
	g, err := x.loadGraph(ctx, key)
	x.mu.Lock()
	if x.loading[key] == c {
		delete(x.loading, key)
	}
	if err == nil && !c.stale {
		x.keep(key, g)
	}
	x.mu.Unlock()
	if x.loads != nil {
		result := "ok"
		if err != nil {
			result = "error"
		}
		x.loads.WithLabelValues(result).Inc()
	}
	c.g, c.err = g, err
	close(c.done)
}

// loadTimeout bounds a Loader call. Reading is the quick part of a load: 100,000 items of 256
// dimensions are ~100 MB to read, then take tens of seconds of CPU to build.
const loadTimeout = 5 * time.Minute

func (x *Index) loadGraph(ctx context.Context, key string) (g *graph, err error) {
	// The load runs in its own goroutine: a panic there would take the process down rather than
	// the one request, so it becomes the waiters' error.
	defer func() {
		if r := recover(); r != nil {
			g, err = nil, fmt.Errorf("vectorindex: load %q panicked: %v", key, r)
		}
	}()
	loadCtx, cancel := context.WithTimeout(ctx, loadTimeout)
	items, err := x.load(loadCtx, key)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("vectorindex: load %q: %w", key, err)
	}
	g, err = build(items, x.o)
	if err != nil {
		return nil, fmt.Errorf("vectorindex: build %q: %w", key, err)
	}
	return g, nil
}

// keep holds g for key, first evicting least recently used graphs while the budget would be
// passed. x.mu is held.
func (x *Index) keep(key string, g *graph) {
	if old := x.held[key]; old != nil {
		x.drop(key, old)
	}
	for x.bytes+g.bytes > x.o.MemoryBudget && len(x.held) > 0 {
		var (
			lruKey string
			lru    *entry
		)
		for k, e := range x.held {
			if lru == nil || e.lastUsed.Load() < lru.lastUsed.Load() {
				lruKey, lru = k, e
			}
		}
		x.drop(lruKey, lru)
		if x.evictions != nil {
			x.evictions.Inc()
		}
	}
	e := &entry{g: g}
	e.lastUsed.Store(x.clock.Add(1))
	x.held[key] = e
	x.bytes += g.bytes
}

func (x *Index) drop(key string, e *entry) {
	delete(x.held, key)
	x.bytes -= e.g.bytes
}

// Invalidate drops key's graph; the next Search loads it again. A key that ends in "/" is a
// prefix: every key it begins is dropped (an agent's graphs of every embedding model). A load
// of key in flight still answers the searches waiting for it (they began before the change)
// but is not kept. Safe while searches run: they finish on the graph they hold.
func (x *Index) Invalidate(key string) {
	match := func(k string) bool { return k == key }
	if strings.HasSuffix(key, "/") {
		match = func(k string) bool { return strings.HasPrefix(k, key) }
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for k, c := range x.loading {
		if match(k) {
			c.stale = true
			delete(x.loading, k)
		}
	}
	for k, e := range x.held {
		if match(k) {
			x.drop(k, e)
		}
	}
}

// InvalidateAll drops every graph, and keeps none of the loads in flight.
func (x *Index) InvalidateAll() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for key, c := range x.loading {
		c.stale = true
		delete(x.loading, key)
	}
	clear(x.held)
	x.bytes = 0
}

// Stats returns the estimated bytes and the number of graphs held.
func (x *Index) Stats() (bytes int64, graphs int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.bytes, len(x.held)
}
