package instrument

import (
	"context"
	"sync"

	"github.com/zkbench/zkbench/backends"
)

// Registry holds the Counters of every client of one run or case. It is
// safe for concurrent use; only NewClient takes its lock, never a request.
type Registry struct {
	mu      sync.Mutex
	clients []*Counters
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

// PerClient snapshots every client, in the order NewClient made them.
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

// Total sums every client's counts.
func (r *Registry) Total() Counts {
	var t Counters
	r.mu.Lock()
	cs := append([]*Counters(nil), r.clients...)
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
	return t.Snapshot()
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
