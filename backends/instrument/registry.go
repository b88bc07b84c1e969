package instrument

import (
	"context"
	"sync"

	"github.com/zkbench/zkbench/backends"
)

// Registry holds the Counters of every client of one run or case. It is
// safe for concurrent use; its lock is taken to add a client and to read
// them, never by a request.
type Registry struct {
	mu      sync.Mutex
	clients []*Counters
	remotes []*Remote
}

// Remote is a client counted in another process (a worker process that
// runs one client): its Counts, and its backend's Witness, arrive as
// reports of their totals so far. Safe for concurrent use.
type Remote struct {
	mu      sync.Mutex
	counts  Counts
	witness backends.Witness
	// unseen bounds, by request type, the calls made after the last
	// report by a process that will send none again (Lost).
	unseen map[string]int64
}

// NewRemote adds a client counted elsewhere, with nothing counted yet.
func (r *Registry) NewRemote() *Remote {
	m := &Remote{}
	r.mu.Lock()
	r.remotes = append(r.remotes, m)
	r.mu.Unlock()
	return m
}

// Report replaces the remote client's totals with newer ones.
func (m *Remote) Report(c Counts, w backends.Witness) {
	m.mu.Lock()
	m.counts, m.witness = c, w
	m.mu.Unlock()
}

// Lost says the remote client will report no more (its process was
// killed) and that it may have made up to unseen calls of each type since
// its last report: they are added to its InFlight, the bound on how far
// its counts may be off the servers'.
func (m *Remote) Lost(unseen map[string]int64) {
	m.mu.Lock()
	m.unseen = unseen
	m.mu.Unlock()
}

// last returns the remote client's latest totals, its unseen calls as
// calls in flight.
func (m *Remote) last() (Counts, backends.Witness) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.counts
	if len(m.unseen) > 0 {
		c = c.Add(Counts{InFlight: m.unseen})
	}
	return c, m.witness
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{} }

// NewClient adds one client and returns its Counters.
func (r *Registry) NewClient() *Counters {
	c := new(Counters)
	r.mu.Lock()
	r.clients = append(r.clients, c)
	r.mu.Unlock()
	return c
}

// Len returns the number of clients added.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.clients)
}

// PerClient snapshots every client NewClient made, in that order (not
// the remote ones).
func (r *Registry) PerClient() []Counts {
	r.mu.Lock()
	cs := append([]*Counters(nil), r.clients...)
	r.mu.Unlock()
	out := make([]Counts, len(cs))
	for i, c := range cs {
		out[i] = c.Snapshot()
	}
	return out
}

// Total sums every client's counts, the remote clients' last reports
// included.
func (r *Registry) Total() Counts {
	var t Counters
	r.mu.Lock()
	cs := append([]*Counters(nil), r.clients...)
	remotes := append([]*Remote(nil), r.remotes...)
	r.mu.Unlock()
	var late int64
	for _, c := range cs {
		late += c.lateWatchEvents()
		for op := range numOps {
			t.requests[op].Add(c.requests[op].Load())
			t.failures[op].Add(c.failures[op].Load())
			t.inFlight[op].Add(c.inFlight[op].Load())
		}
		t.watchesArmed.Add(c.watchesArmed.Load())
		t.watchEvents.Add(c.watchEvents.Load())
		t.sessionLostEvents.Add(c.sessionLostEvents.Load())
		t.wastedWakeups.Add(c.wastedWakeups.Load())
		t.bytesSent.Add(c.bytesSent.Load())
		t.bytesReceived.Add(c.bytesReceived.Load())
	}
	t.lateClosed = late
	total := t.Snapshot()
	for _, m := range remotes {
		c, _ := m.last()
		total = total.Add(c)
	}
	return total
}

// RemoteWitness sums the remote clients' backend witnesses (the server
// work their backends counted that their Counts do not show): a meter adds
// it to its own backend's.
func (r *Registry) RemoteWitness() backends.Witness {
	r.mu.Lock()
	remotes := append([]*Remote(nil), r.remotes...)
	r.mu.Unlock()
	var w backends.Witness
	for _, m := range remotes {
		_, mw := m.last()
		w = w.Add(mw)
	}
	return w
}

// Backend is a backends.Backend whose sessions are instrumented: each
// NewSession adds a client to the Registry and wraps the session with its
// Counters. Admin and Scraper calls pass through uncounted.
type Backend struct {
	inner backends.Backend
	reg   *Registry
}

// WrapBackend returns b with every new session counted in r. The result
// implements backends.Admin and backends.Scraper exactly when b does; any
// other optional interface is reached through Unwrap.
func WrapBackend(b backends.Backend, r *Registry) backends.Backend {
	w := &Backend{inner: b, reg: r}
	a, isAdmin := b.(backends.Admin)
	sc, isScraper := b.(backends.Scraper)
	switch {
	case isAdmin && isScraper:
		return &adminScraperBackend{w, a, sc}
	case isAdmin:
		return &adminBackend{w, a}
	case isScraper:
		return &scraperBackend{w, sc}
	}
	return w
}

type adminBackend struct {
	*Backend
	backends.Admin
}

type scraperBackend struct {
	*Backend
	backends.Scraper
}

type adminScraperBackend struct {
	*Backend
	backends.Admin
	backends.Scraper
}

var (
	_ backends.Backend = (*Backend)(nil)
	_ backends.Admin   = (*adminBackend)(nil)
	_ backends.Scraper = (*scraperBackend)(nil)
	_ backends.Admin   = (*adminScraperBackend)(nil)
	_ backends.Scraper = (*adminScraperBackend)(nil)
)

// Kind returns the inner backend's Kind.
func (b *Backend) Kind() backends.Kind { return b.inner.Kind() }

// Preflight calls the inner backend's Preflight.
func (b *Backend) Preflight(ctx context.Context) (backends.ClusterInfo, error) {
	return b.inner.Preflight(ctx)
}

// NewSession opens a session on the inner backend and wraps it with a new
// client's Counters. A failed open adds no client.
func (b *Backend) NewSession(ctx context.Context) (backends.Session, error) {
	s, err := b.inner.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	return Wrap(s, b.reg.NewClient()), nil
}

// Close closes the inner backend.
func (b *Backend) Close() error { return b.inner.Close() }

// Unwrap returns the backend this one wraps.
func (b *Backend) Unwrap() backends.Backend { return b.inner }

// Registry returns the registry sessions are counted in.
func (b *Backend) Registry() *Registry { return b.reg }

// UnwrapBackend peels every decorator (any backend with an
// Unwrap() backends.Backend method) off b and returns the innermost backend.
func UnwrapBackend(b backends.Backend) backends.Backend {
	for {
		u, ok := b.(interface{ Unwrap() backends.Backend })
		if !ok {
			return b
		}
		b = u.Unwrap()
	}
}
