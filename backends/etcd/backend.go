// Package etcd is zkbench's etcd backend: backends.Session on
// go.etcd.io/etcd/client/v3.
//
// A session is one lease kept alive, by default on its own clientv3.Client
// (one gRPC connection per simulated client). Ephemeral nodes are keys put
// with that lease; a sequential node's order is its create revision; a
// watch is registered before the read it goes with and forwards only what
// the read did not see, so nothing between the read and the watch is missed.
package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/zkbench/zkbench/backends"
)

// Compile-time checks.
var (
	_ backends.Backend = (*Backend)(nil)
	_ backends.Admin   = (*Backend)(nil)
	_ backends.Scraper = (*Backend)(nil)
	_ backends.Session = (*Session)(nil)
)

// Backend opens sessions on one etcd cluster. Safe for concurrent use.
type Backend struct {
	cfg  Config
	opts options
	eps  []endpoint
	tls  *tls.Config

	mu       sync.Mutex
	closed   bool
	sessions map[*Session]struct{}
	shared   []*clientv3.Client // Conns > 0: made on first use
	next     int
	admin    *clientv3.Client
	http     *http.Client // Scrape's, made on first use

	keepAlives *backends.KeepAliveRecorder
	gauges     map[string]bool // gauge families seen in scrapes (IsGauge), under mu
	// witness counts what the sessions' calls cost the servers beyond
	// what the instrument counts (witness.go).
	witness backends.WitnessCounters
}

var _ backends.KeepAliveReporter = (*Backend)(nil)

// KeepAlives times the sessions' lease keep-alives, which zkbench sends
// itself (keeper): how long after it was due each left the client, and
// each answer's round trip.
func (b *Backend) KeepAlives() backends.KeepAliveCounts { return b.keepAlives.Counts() }

// New validates cfg and returns a Backend. It dials nothing: clientv3 does
// not fail on unreachable endpoints, so call Preflight to check them.
func New(cfg Config, opts ...Option) (*Backend, error) {
	eps, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	t, err := cfg.tlsConfig(eps)
	if err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return &Backend{cfg: cfg, opts: o, eps: eps, tls: t, sessions: make(map[*Session]struct{}),
		keepAlives: backends.NewKeepAliveRecorder(backends.KeepAlivePingSent)}, nil
}

// Kind returns backends.Etcd.
func (b *Backend) Kind() backends.Kind { return backends.Etcd }

// Config returns the validated config, defaults filled in.
func (b *Backend) Config() Config { return b.cfg }

// Embedded reports whether the servers share this process (Config.Embedded):
// their CPU and memory cannot be told apart from zkbench's own.
func (b *Backend) Embedded() bool { return b.cfg.Embedded }

// hosts returns endpoints as host:port, so TLS follows the Config.
func (b *Backend) hosts() []string {
	h := make([]string, len(b.eps))
	for i, e := range b.eps {
		h[i] = e.host
	}
	return h
}

// newClient makes one clientv3.Client on the given endpoints. It does not
// block on the network unless authentication is configured.
func (b *Backend) newClient(endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: b.cfg.DialTimeout,
		TLS:         b.tls,
		Username:    b.cfg.Username,
		Password:    b.cfg.Password,
		Logger:      b.opts.logger,
		DialOptions: append(append(slices.Clone(b.opts.dialOptions), b.flowDialOptions()...), b.witnessDialOptions()...),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: client for %v: %w", endpoints, err)
	}
	return cli, nil
}

// flowDialOptions set Config.FlowWindow's static windows, if any.
func (b *Backend) flowDialOptions() []grpc.DialOption {
	if b.cfg.FlowWindow == 0 {
		return nil
	}
	w := int32(b.cfg.FlowWindow)
	return []grpc.DialOption{grpc.WithStaticStreamWindowSize(w), grpc.WithStaticConnWindowSize(w)}
}

// sessionClient returns the client a new session uses and whether the
// session owns it (closes it on Close).
func (b *Backend) sessionClient() (*clientv3.Client, bool, error) {
	if b.cfg.Conns == 0 {
		cli, err := b.newClient(b.hosts())
		return cli, true, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, false, ErrClosed
	}
	i := b.next % b.cfg.Conns
	b.next++
	if i >= len(b.shared) {
		cli, err := b.newClient(b.hosts())
		if err != nil {
			return nil, false, err
		}
		b.shared = append(b.shared, cli)
		i = len(b.shared) - 1
	}
	return b.shared[i], false, nil
}

// adminClient is the one client used by Admin, Scrape and Preflight helpers.
func (b *Backend) adminClient() (*clientv3.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if b.admin == nil {
		cli, err := b.newClient(b.hosts())
		if err != nil {
			return nil, err
		}
		b.admin = cli
	}
	return b.admin, nil
}

// NewSession grants a lease, starts keeping it alive and returns the
// session. It blocks until the grant is answered or ctx is done; on error
// nothing is left behind.
func (b *Backend) NewSession(ctx context.Context) (backends.Session, error) {
	return b.OpenSession(ctx)
}

// OpenSession is NewSession returning the concrete type, whose Client and
// Lease recipes/native builds on.
func (b *Backend) OpenSession(ctx context.Context) (*Session, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	cli, owns, err := b.sessionClient()
	if err != nil {
		return nil, err
	}
	s, err := openSession(ctx, b, cli, owns)
	if err != nil {
		if owns {
			cli.Close()
		}
		return nil, err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		s.Close()
		return nil, ErrClosed
	}
	b.sessions[s] = struct{}{}
	b.mu.Unlock()
	return s, nil
}

func (b *Backend) forget(s *Session) {
	b.mu.Lock()
	delete(b.sessions, s)
	b.mu.Unlock()
}

// Close closes every open session (revoking its lease) and every client.
// Safe to call more than once.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	ss := make([]*Session, 0, len(b.sessions))
	for s := range b.sessions {
		ss = append(ss, s)
	}
	b.mu.Unlock()

	var errs []error
	var wg sync.WaitGroup
	var emu sync.Mutex
	sem := make(chan struct{}, 64) // bound concurrent revokes
	for _, s := range ss {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.Close(); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		}()
	}
	wg.Wait()

	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.shared {
		errs = append(errs, c.Close())
	}
	if b.admin != nil {
		errs = append(errs, b.admin.Close())
	}
	b.shared, b.admin = nil, nil
	return errors.Join(errs...)
}
