package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkbench/zkbench/backends"
)

// Backend is the Backend a faulted run's clients use. It opens each
// client's session on that client's own backend if it has one (one whose
// connections run through proxies dedicated to the client, so a fault can
// cut or reset it alone), else on the shared one, and reports every opened
// session's id with its client index (from backends.ClientOf on the ctx) so
// that faults and the timeline can name clients.
//
// Admin goes to the shared backend; Scrape and ScrapeMembers to the
// scraper given WithScraper, else to the shared backend. Close closes every
// backend (not the scraper).
type Backend struct {
	shared    backends.Backend
	own       map[int]backends.Backend
	onSession func(client int, session int64)
	scraper   backends.Scraper
	expirer   Expirer
	conns     func(session int64, s SessionState)
}

var (
	_ backends.Backend       = (*Backend)(nil)
	_ backends.Admin         = (*Backend)(nil)
	_ backends.MemberScraper = (*Backend)(nil)
	_ backends.Witnesser     = (*Backend)(nil)
)

// Witness sums the witnesses of the shared backend and of the clients' own
// (each backend keeps its own counters; one that keeps none adds
// nothing), so that a faulted run's client|server cross-checks model the
// servers' counts from what its clients' calls cost, as an unfaulted run's
// do, not from the per-call ranges kept for files without a witness.
func (b *Backend) Witness() backends.Witness {
	var w backends.Witness
	add := func(be backends.Backend) {
		if x, ok := be.(backends.Witnesser); ok {
			w = w.Add(x.Witness())
		}
	}
	add(b.shared)
	for _, be := range b.own {
		add(be)
	}
	return w
}

// BackendOption configures a Backend.
type BackendOption func(*Backend)

// WithScraper reads the servers' counters through s instead of the shared
// backend: one that reaches the servers directly, not through the fault
// proxies (a cut or a delay must not hide the servers' counters), and knows
// their processes as they restart. Default: the shared backend.
func WithScraper(s backends.Scraper) BackendOption { return func(b *Backend) { b.scraper = s } }

// WithEtcdConnStates reports, for every etcd session opened, its
// connection's disconnects and reconnects (WatchEtcdConn) to obs, until the
// session is closed or lost. ZooKeeper sessions are watched on the wire
// instead (ZKSessions). Default none.
func WithEtcdConnStates(obs func(session int64, s SessionState)) BackendOption {
	return func(b *Backend) { b.conns = obs }
}

// WithSessionExpirer lets ExpireSession end the backend's sessions on the
// server (ZKExpirer over the ZKSessions that watches the shared backend's
// connections, or an EtcdExpirer). Default none.
func WithSessionExpirer(e Expirer) BackendOption { return func(b *Backend) { b.expirer = e } }

// ExpireSession makes the session with id session expire on the server now,
// with the expirer given WithSessionExpirer (ErrNoAbility without one): the
// workloads' ParamKill "expire" on ZooKeeper. ctx bounds the exchange.
func (b *Backend) ExpireSession(ctx context.Context, session int64) error {
	if b.expirer == nil {
		return fmt.Errorf("%w: expire a session", ErrNoAbility)
	}
	return b.expirer.Expire(ctx, session)
}

// ErrNoAbility: the shared backend lacks Admin or Scraper.
var ErrNoAbility = errors.New("faults: the backend cannot do that")

// NewBackend routes sessions of the clients in own to their backends and
// every other session to shared. onSession (nil: none) is called with each
// opened session's client index (-1 if the ctx named none) and id.
func NewBackend(shared backends.Backend, own map[int]backends.Backend, onSession func(client int, session int64), opts ...BackendOption) *Backend {
	b := &Backend{shared: shared, own: own, onSession: onSession}
	b.scraper, _ = shared.(backends.Scraper)
	for _, o := range opts {
		o(b)
	}
	return b
}

// Kind implements backends.Backend.
func (b *Backend) Kind() backends.Kind { return b.shared.Kind() }

// Preflight implements backends.Backend on the shared backend.
func (b *Backend) Preflight(ctx context.Context) (backends.ClusterInfo, error) {
	return b.shared.Preflight(ctx)
}

// NewSession implements backends.Backend.
func (b *Backend) NewSession(ctx context.Context) (backends.Session, error) {
	client, ok := backends.ClientOf(ctx)
	if !ok {
		client = -1
	}
	be := b.shared
	if o, ok := b.own[client]; ok {
		be = o
	}
	s, err := be.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	if b.onSession != nil {
		b.onSession(client, s.ID())
	}
	if b.conns != nil {
		id := s.ID()
		WatchEtcdConn(s, func(st SessionState) { b.conns(id, st) })
	}
	return s, nil
}

// Close implements backends.Backend: it closes the shared backend and every
// client's own.
func (b *Backend) Close() error {
	errs := []error{b.shared.Close()}
	for _, o := range b.own {
		errs = append(errs, o.Close())
	}
	return errors.Join(errs...)
}

// List implements backends.Admin.
func (b *Backend) List(ctx context.Context, path string) ([]string, error) {
	a, ok := b.shared.(backends.Admin)
	if !ok {
		return nil, fmt.Errorf("%w: list", ErrNoAbility)
	}
	return a.List(ctx, path)
}

// DeleteTree implements backends.Admin.
func (b *Backend) DeleteTree(ctx context.Context, path string) error {
	a, ok := b.shared.(backends.Admin)
	if !ok {
		return fmt.Errorf("%w: delete", ErrNoAbility)
	}
	return a.DeleteTree(ctx, path)
}

// Scrape implements backends.Scraper.
func (b *Backend) Scrape(ctx context.Context) (backends.Metrics, error) {
	if b.scraper == nil {
		return nil, fmt.Errorf("%w: scrape", ErrNoAbility)
	}
	return b.scraper.Scrape(ctx)
}

// ScrapeMembers implements backends.MemberScraper; ErrNoAbility if the
// scraper reads only sums.
func (b *Backend) ScrapeMembers(ctx context.Context) ([]backends.MemberMetrics, error) {
	s, ok := b.scraper.(backends.MemberScraper)
	if !ok {
		return nil, fmt.Errorf("%w: scrape members one by one", ErrNoAbility)
	}
	return s.ScrapeMembers(ctx)
}
