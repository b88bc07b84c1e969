package proxy

import (
	"context"
	"errors"
	"time"
)

// Group is one proxy per server endpoint of a cluster, driven together.
type Group []*Proxy

// NewGroup starts one proxy per target with the same options. Each proxy's
// jitter is seeded differently (WithSeed's seed plus the proxy's index). On
// error, the proxies already started are closed.
func NewGroup(ctx context.Context, targets []string, opts ...Option) (Group, error) {
	var base config
	for _, o := range opts {
		o(&base)
	}
	g := make(Group, 0, len(targets))
	for i, t := range targets {
		o := opts
		if base.seeded {
			o = append(append([]Option(nil), opts...), WithSeed(base.seed+uint64(i)))
		}
		p, err := New(ctx, t, o...)
		if err != nil {
			_ = g.Close()
			return nil, err
		}
		g = append(g, p)
	}
	return g, nil
}

// Addrs are the proxies' listen addresses, in target order: give them to
// clients as the cluster's endpoints.
func (g Group) Addrs() []string {
	out := make([]string, len(g))
	for i, p := range g {
		out[i] = p.Addr()
	}
	return out
}

// SetLatency sets every proxy's latency (see Proxy.SetLatency).
func (g Group) SetLatency(base, jitter time.Duration) {
	for _, p := range g {
		p.SetLatency(base, jitter)
	}
}

// Cut cuts every proxy (see Proxy.Cut).
func (g Group) Cut() {
	for _, p := range g {
		p.Cut()
	}
}

// CutFor cuts every proxy and restores each after d.
func (g Group) CutFor(d time.Duration) {
	for _, p := range g {
		p.CutFor(d)
	}
}

// Restore lifts Cut on every proxy; client cuts stay.
func (g Group) Restore() {
	for _, p := range g {
		p.Restore()
	}
}

// Heal lifts every cut on every proxy.
func (g Group) Heal() {
	for _, p := range g {
		p.Heal()
	}
}

// CutClient cuts one simulated client from every server.
func (g Group) CutClient(client int) {
	for _, p := range g {
		p.CutClient(client)
	}
}

// RestoreClient lifts CutClient on every proxy.
func (g Group) RestoreClient(client int) {
	for _, p := range g {
		p.RestoreClient(client)
	}
}

// ResetAll resets every connection of every proxy and returns how many.
func (g Group) ResetAll() int {
	n := 0
	for _, p := range g {
		n += p.ResetAll()
	}
	return n
}

// ResetClient resets one client's connections on every proxy.
func (g Group) ResetClient(client int) int {
	n := 0
	for _, p := range g {
		n += p.ResetClient(client)
	}
	return n
}

// Stats sums the proxies' counters.
func (g Group) Stats() Stats {
	var s Stats
	for _, p := range g {
		ps := p.Stats()
		s.Accepted += ps.Accepted
		s.Active += ps.Active
		s.Resets += ps.Resets
		s.DialFailures += ps.DialFailures
		s.BytesToServer += ps.BytesToServer
		s.BytesToClient += ps.BytesToClient
	}
	return s
}

// Close closes every proxy.
func (g Group) Close() error {
	var errs []error
	for _, p := range g {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
