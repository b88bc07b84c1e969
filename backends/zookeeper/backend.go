// Package zookeeper is zkbench's ZooKeeper backend: backends.Backend,
// backends.Admin and backends.Scraper on github.com/go-zookeeper/zk.
//
// Each Session is its own zk.Conn and so its own ZooKeeper session, as a
// real client would be. Config.Conns > 0 multiplexes sessions over a few
// shared connections instead; that is an experiment, not a benchmark of the
// herd: the server keeps one watch per connection and path, so clients that
// share a connection share one notification and the herd is hidden.
//
// go-zookeeper's calls take no context. Every Session method runs the call
// on its own goroutine and returns when ctx is done; that goroutine ends
// when the reply or the connection's failure arrives.
//
// Memory. go-zookeeper gives every connection a fixed send buffer and a
// fixed receive buffer, allocated (and so zeroed and resident) whole. The
// receive buffer is also the largest reply the connection can read, so it
// bounds getChildren listings: see Config.RecvBufferSize and
// Config.MaxChildren. A reply too large fails the read with
// ErrReplyTooLarge, which says how to raise the bound. Measured with
// BenchmarkIdleSessions (1,000 idle sessions, one process): about 115 KB
// resident per session with the defaults (96 KiB + 8 KiB), about 370 KB
// with MaxChildren 10,000 (52-byte names); three goroutines per session.
// A queue of Session.Enqueue's 10-digit names needs 14 bytes a child, so
// MaxChildren 10,000 with MaxChildName 10 is a 141 KiB buffer.
package zookeeper

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
)

// Backend opens ZooKeeper sessions. Its methods may be called concurrently.
type Backend struct {
	cfg  Config
	opts options

	mu       sync.Mutex
	closed   bool
	sessions map[*Session]struct{}
	shared   []*link // Conns > 0: the shared connections, made on demand
	next     int     // round robin over shared
	admin    *Session
}

var (
	_ backends.Backend = (*Backend)(nil)
	_ backends.Admin   = (*Backend)(nil)
	_ backends.Scraper = (*Backend)(nil)

	_ backends.KeepAliveReporter = (*Backend)(nil)
	_ backends.Witnesser         = (*Backend)(nil)
)

// KeepAlives times the sessions' pings: how long after its tick each ping
// was sent (the client's lateness; go-zookeeper pings every negotiated
// session timeout / 3, busy or idle), and each ping's round trip to its
// reply (the server's and the network's). See pings.go.
func (b *Backend) KeepAlives() backends.KeepAliveCounts { return b.opts.pings.Counts() }

// Witness counts the writes the sessions caused beyond their calls: the
// creates EnsurePath sent, and each session's create and end (a close, or
// the server's expiry), which ZooKeeper counts as writes.
func (b *Backend) Witness() backends.Witness { return b.opts.witness.Witness() }

// New checks cfg and returns a Backend. It does not connect: Preflight
// checks the servers, NewSession connects.
func New(cfg Config, opts ...Option) (*Backend, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg, sessions: make(map[*Session]struct{})}
	b.opts.logger = log.New(io.Discard, "", 0)
	b.opts.pings = backends.NewKeepAliveRecorder(backends.KeepAlivePingSent)
	b.opts.witness = &backends.WitnessCounters{}
	for _, o := range opts {
		o(&b.opts)
	}
	return b, nil
}

// Kind is backends.ZooKeeper.
func (b *Backend) Kind() backends.Kind { return backends.ZooKeeper }

// NewSession opens a session and waits under ctx until the server has
// established it (and accepted the digest, if any). With Config.Conns > 0
// it returns a view of a shared connection instead. If ctx ends first, the
// half-open connection is closed in the background and ctx's error returned.
func (b *Backend) NewSession(ctx context.Context) (backends.Session, error) {
	return b.newSession(ctx)
}

func (b *Backend) newSession(ctx context.Context) (*Session, error) {
	if b.cfg.Conns > 0 {
		l, err := b.sharedLink(ctx)
		if err != nil {
			return nil, err
		}
		return b.track(newSession(l, true))
	}
	l, err := b.openLink(ctx, b.cfg.RecvBufferSize)
	if err != nil {
		return nil, err
	}
	return b.track(newSession(l, false))
}

// openLink connects and waits for the session and the digest.
func (b *Backend) openLink(ctx context.Context, recvBuf int) (*link, error) {
	if b.isClosed() {
		return nil, ErrClosed
	}
	l, err := dial(&b.cfg, &b.opts, recvBuf)
	if err != nil {
		return nil, err
	}
	if err := l.waitReady(ctx); err != nil {
		l.markLost(zk.ErrClosing)
		return nil, err
	}
	if b.cfg.Digest != "" {
		_, err := call(ctx, l.lost, func() (struct{}, error) {
			return struct{}{}, l.conn.AddAuth("digest", []byte(b.cfg.Digest))
		})
		if err != nil {
			l.markLost(zk.ErrClosing)
			return nil, fmt.Errorf("zookeeper: digest auth: %w", err)
		}
	}
	return l, nil
}

// sharedLink picks the next shared connection, opening it if needed.
func (b *Backend) sharedLink(ctx context.Context) (*link, error) {
	b.mu.Lock()
	if b.shared == nil {
		b.shared = make([]*link, b.cfg.Conns)
	}
	i := b.next % len(b.shared)
	b.next++
	l := b.shared[i]
	b.mu.Unlock()
	if l != nil && !l.isLost.Load() {
		return l, nil
	}
	// Two callers may both open slot i; the later one wins and the other
	// connection serves only its own caller's sessions.
	l, err := b.openLink(ctx, b.cfg.RecvBufferSize)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.shared[i] = l
	b.mu.Unlock()
	return l, nil
}

func (b *Backend) track(s *Session) (*Session, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		go s.Close()
		return nil, ErrClosed
	}
	b.sessions[s] = struct{}{}
	s.onClose = func() {
		b.mu.Lock()
		delete(b.sessions, s)
		b.mu.Unlock()
	}
	return s, nil
}

func (b *Backend) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Close closes every session the backend opened (their ephemeral nodes go
// with them), the shared and admin connections, and waits for the server to
// acknowledge each close (at most a few seconds each, in parallel).
func (b *Backend) Close() error {
	b.mu.Lock()
	b.closed = true
	var all []*Session
	for s := range b.sessions {
		all = append(all, s)
	}
	if b.admin != nil {
		all = append(all, b.admin)
	}
	shared := b.shared
	b.mu.Unlock()

	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.Close()
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, l := range shared {
		if l != nil {
			l.shutdown(ctx)
		}
	}
	return nil
}

// checkEndpoint rejects anything but "host:port" with a numeric port.
func checkEndpoint(ep string) error {
	host, port, err := net.SplitHostPort(ep)
	if err != nil || host == "" {
		return fmt.Errorf("%w: %q is not host:port (e.g. 127.0.0.1:2181)", ErrBadEndpoint, ep)
	}
	var n int
	if _, err := fmt.Sscanf(port, "%d", &n); err != nil || n < 1 || n > 65535 || fmt.Sprint(n) != port {
		return fmt.Errorf("%w: %q: port %q is not a number from 1 to 65535", ErrBadEndpoint, ep, port)
	}
	return nil
}
