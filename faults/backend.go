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
// Admin and Scrape go to the shared backend. Close closes every backend.
type Backend struct {
	shared    backends.Backend
	own       map[int]backends.Backend
	onSession func(client int, session int64)
}

var (
	_ backends.Backend = (*Backend)(nil)
	_ backends.Admin   = (*Backend)(nil)
	_ backends.Scraper = (*Backend)(nil)
)

// ErrNoAbility: the shared backend lacks Admin or Scraper.
var ErrNoAbility = errors.New("faults: the backend cannot do that")

// NewBackend routes sessions of the clients in own to their backends and
// every other session to shared. onSession (nil: none) is called with each
// opened session's client index (-1 if the ctx named none) and id.
func NewBackend(shared backends.Backend, own map[int]backends.Backend, onSession func(client int, session int64)) *Backend {
	return &Backend{shared: shared, own: own, onSession: onSession}
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
	s, ok := b.shared.(backends.Scraper)
	if !ok {
		return nil, fmt.Errorf("%w: scrape", ErrNoAbility)
	}
	return s.Scrape(ctx)
}
