// Package proxy is an in-process TCP proxy that sits between clients and one
// server endpoint and injects network faults at run time: added latency with
// jitter, a blackhole cut (bytes stop flowing, nothing is closed), and
// connection resets. It exists because the machines zkbench runs on often
// have no netem: the proxy needs no privileges and works on loopback.
//
// A client connects to Addr() instead of the server. Each accepted connection
// gets its own upstream connection to the target and two pumps, one per
// direction. Connections are numbered in accept order (ConnInfo.ID) and may
// be tagged with the simulated client that opened them (see Tags), so that
// faults can target one client.
//
// Cut is blackhole semantics: the proxy stops forwarding in both directions
// but keeps both TCP connections open and reports nothing to either side. A
// ZooKeeper client behind a cut proxy keeps running and only learns that its
// session expired on the server once the cut is restored and it reconnects.
// Bytes read while cut are held (bounded by the pump queue and the kernel's
// socket buffers) and delivered in order on Restore, as TCP retransmission
// would after a partition heals.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by operations on a closed Proxy.
var ErrClosed = errors.New("proxy: closed")

// Direction names one half of a proxied connection.
type Direction int

// The two directions of a connection.
const (
	// ClientToServer carries requests from the client to the target.
	ClientToServer Direction = iota
	// ServerToClient carries replies and notifications back.
	ServerToClient
)

func (d Direction) String() string {
	if d == ClientToServer {
		return "client->server"
	}
	return "server->client"
}

// Option configures a Proxy.
type Option func(*config)

type config struct {
	listen      string
	dialTimeout time.Duration
	seed        uint64
	seeded      bool
	tags        *Tags
	chunkSize   int
	queue       int
}

// WithListenAddr sets the address to listen on. Default "127.0.0.1:0" (a free
// loopback port).
func WithListenAddr(addr string) Option { return func(c *config) { c.listen = addr } }

// WithDialTimeout bounds each upstream dial. Default 5s.
func WithDialTimeout(d time.Duration) Option { return func(c *config) { c.dialTimeout = d } }

// WithSeed seeds the jitter generator so runs are repeatable. Default: a
// random seed.
func WithSeed(seed uint64) Option { return func(c *config) { c.seed, c.seeded = seed, true } }

// WithTags makes the proxy resolve which simulated client opened each
// connection from t (see Tags.Dialer). Several proxies may share one Tags.
// Default: connections are untagged (Client -1).
func WithTags(t *Tags) Option { return func(c *config) { c.tags = t } }

// WithChunkSize sets the largest read forwarded as one chunk. Latency is
// applied per chunk. Default 32 KiB.
func WithChunkSize(n int) Option { return func(c *config) { c.chunkSize = n } }

type latency struct {
	base, jitter time.Duration
}

// Stats are the proxy's counters since New.
type Stats struct {
	Accepted     int64 `json:"accepted"`
	Active       int   `json:"active"`
	Resets       int64 `json:"resets"`
	DialFailures int64 `json:"dial_failures"`
	// Bytes forwarded by direction.
	BytesToServer int64 `json:"bytes_to_server"`
	BytesToClient int64 `json:"bytes_to_client"`
}

// ConnInfo describes one proxied connection.
type ConnInfo struct {
	// ID numbers connections in accept order, from 1.
	ID uint64
	// Client is the simulated client that opened the connection, or -1 if
	// unknown (no Tags, or not dialed through Tags.Dialer).
	Client int
	// Remote is the client's address as the proxy sees it.
	Remote string
	Opened time.Time
	// Cut reports whether forwarding is stopped for this connection now.
	Cut bool
}

// Proxy forwards TCP connections from Addr() to one target. All methods are
// safe for concurrent use.
type Proxy struct {
	target string
	cfg    config
	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	lat        [2]latency
	rng        *rand.Rand
	cutAll     bool
	cutClients map[int]bool
	changed    chan struct{} // closed and replaced whenever a cut changes
	cutTimer   *time.Timer
	conns      map[uint64]*conn
	nextID     uint64
	closed     bool

	accepted, resets, dialFailures atomic.Int64
	bytesUp, bytesDown             atomic.Int64
}

// New starts a proxy to target ("host:port") listening on a free loopback
// port. It does not block: connections are served by goroutines that end
// when Close is called or ctx is done, whichever comes first.
func New(ctx context.Context, target string, opts ...Option) (*Proxy, error) {
	cfg := config{listen: "127.0.0.1:0", dialTimeout: 5 * time.Second, chunkSize: 32 << 10, queue: 64}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.chunkSize <= 0 {
		return nil, fmt.Errorf("proxy: chunk size %d must be positive", cfg.chunkSize)
	}
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("proxy: target %q: %w", target, err)
	}
	if !cfg.seeded {
		cfg.seed = rand.Uint64()
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.listen)
	if err != nil {
		return nil, fmt.Errorf("proxy: listen %s: %w", cfg.listen, err)
	}
	pctx, cancel := context.WithCancel(ctx)
	p := &Proxy{
		target:     target,
		cfg:        cfg,
		ln:         ln,
		ctx:        pctx,
		cancel:     cancel,
		rng:        rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15)),
		cutClients: map[int]bool{},
		changed:    make(chan struct{}),
		conns:      map[uint64]*conn{},
	}
	p.wg.Add(2)
	go p.acceptLoop()
	go func() {
		defer p.wg.Done()
		<-pctx.Done()
		p.shutdown()
	}()
	return p, nil
}

// Addr is the address clients connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the server endpoint the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// SetLatency delays every chunk in both directions by base plus a uniform
// random offset in [-jitter, +jitter] (never below zero), so a round trip
// grows by about 2*base. Chunks never overtake each other: a chunk whose
// delay would end before its predecessor's waits for it. Zero base and
// jitter turn latency off. Chunks already queued keep their delay.
func (p *Proxy) SetLatency(base, jitter time.Duration) {
	p.SetDirectionLatency(ClientToServer, base, jitter)
	p.SetDirectionLatency(ServerToClient, base, jitter)
}

// SetDirectionLatency is SetLatency for one direction only.
func (p *Proxy) SetDirectionLatency(d Direction, base, jitter time.Duration) {
	if base < 0 {
		base = 0
	}
	if jitter < 0 {
		jitter = 0
	}
	p.mu.Lock()
	p.lat[d] = latency{base: base, jitter: jitter}
	p.mu.Unlock()
}

// Latency returns the configured base and jitter of one direction.
func (p *Proxy) Latency(d Direction) (base, jitter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lat[d].base, p.lat[d].jitter
}

// delay draws one chunk's delay for direction d.
func (p *Proxy) delay(d Direction) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lat[d]
	if l.base == 0 && l.jitter == 0 {
		return 0
	}
	v := l.base
	if l.jitter > 0 {
		v += time.Duration(p.rng.Int64N(int64(2*l.jitter)+1)) - l.jitter
	}
	return max(v, 0)
}

// Cut stops forwarding on every connection, present and future, until
// Restore: nothing is closed and neither side is told (blackhole). It cancels
// a pending CutFor restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutAllLocked(true)
}

// CutFor cuts like Cut and restores after d, without blocking. A later Cut,
// CutFor or Restore replaces the pending restore.
func (p *Proxy) CutFor(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutAllLocked(true)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.cutTimer != t { // replaced meanwhile
			return
		}
		p.cutTimer = nil
		p.cutAll = false
		p.notifyLocked()
	})
	p.cutTimer = t
}

// Restore lifts Cut (and cancels a pending CutFor restore). Cuts of single
// clients or connections stay in force. Held bytes are delivered in order.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutAllLocked(false)
}

// Heal lifts every cut: Cut, every CutClient and every CutConn.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.cutClients)
	for _, c := range p.conns {
		c.cut = false
	}
	p.cutAllLocked(false)
}

// cutAllLocked sets or lifts the cut of every connection, replacing a
// pending CutFor restore, and wakes the pumps.
func (p *Proxy) cutAllLocked(cut bool) {
	p.stopTimerLocked()
	p.cutAll = cut
	p.notifyLocked()
}

// CutClient stops forwarding on every connection, present and future, of
// simulated client id (see Tags) until RestoreClient or Restore.
func (p *Proxy) CutClient(client int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutClients[client] = true
	p.notifyLocked()
}

// RestoreClient lifts CutClient(client). Cut stays in force.
func (p *Proxy) RestoreClient(client int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.cutClients, client)
	p.notifyLocked()
}

// CutConn stops forwarding on one connection (by ConnInfo.ID). It reports
// whether the connection was found.
func (p *Proxy) CutConn(id uint64) bool { return p.cutConn(id, true) }

// RestoreConn lifts CutConn(id).
func (p *Proxy) RestoreConn(id uint64) bool { return p.cutConn(id, false) }

// cutConn sets or lifts the cut of connection id; it reports whether the
// connection was found.
func (p *Proxy) cutConn(id uint64, cut bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.conns[id]
	if ok {
		c.cut = cut
		p.notifyLocked()
	}
	return ok
}

// ResetAll resets every open connection: both sides are closed with
// SO_LINGER 0, so the client and the server each see a connection reset
// (ECONNRESET), as if a middlebox dropped the flow mid-request. It returns
// how many connections were reset. New connections are accepted as usual.
func (p *Proxy) ResetAll() int {
	return p.resetWhere(func(*conn) bool { return true })
}

// ResetClient resets the open connections of one simulated client.
func (p *Proxy) ResetClient(client int) int {
	return p.resetWhere(func(c *conn) bool { return c.client() == client })
}

// ResetConn resets one connection by ConnInfo.ID.
func (p *Proxy) ResetConn(id uint64) bool {
	return p.resetWhere(func(c *conn) bool { return c.id == id }) == 1
}

func (p *Proxy) resetWhere(match func(*conn) bool) int {
	p.mu.Lock()
	var victims []*conn
	for _, c := range p.conns {
		if match(c) {
			victims = append(victims, c)
		}
	}
	p.mu.Unlock()
	for _, c := range victims {
		c.reset()
	}
	p.resets.Add(int64(len(victims)))
	return len(victims)
}

// Conns lists the open connections in accept order.
func (p *Proxy) Conns() []ConnInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ConnInfo, 0, len(p.conns))
	for _, c := range p.conns {
		out = append(out, ConnInfo{ID: c.id, Client: c.client(), Remote: c.remote, Opened: c.opened, Cut: p.isCutLocked(c)})
	}
	sortByID(out)
	return out
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	active := len(p.conns)
	p.mu.Unlock()
	return Stats{
		Accepted:      p.accepted.Load(),
		Active:        active,
		Resets:        p.resets.Load(),
		DialFailures:  p.dialFailures.Load(),
		BytesToServer: p.bytesUp.Load(),
		BytesToClient: p.bytesDown.Load(),
	}
}

// Close stops listening, closes every connection and waits for every
// goroutine of the proxy to end. Safe to call more than once.
func (p *Proxy) Close() error {
	p.cancel()
	p.wg.Wait()
	return nil
}

func (p *Proxy) shutdown() {
	p.mu.Lock()
	p.closed = true
	p.stopTimerLocked()
	conns := make([]*conn, 0, len(p.conns))
	for _, c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, c := range conns {
		c.close()
	}
}

func (p *Proxy) stopTimerLocked() {
	if p.cutTimer != nil {
		p.cutTimer.Stop()
		p.cutTimer = nil
	}
}

// notifyLocked wakes every pump waiting on a cut.
func (p *Proxy) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *Proxy) isCutLocked(c *conn) bool {
	if p.cutAll || c.cut {
		return true
	}
	if len(p.cutClients) == 0 {
		return false
	}
	return p.cutClients[c.client()]
}

// waitOpen blocks while c is cut. It returns false if c or the proxy closed.
func (p *Proxy) waitOpen(c *conn) bool {
	for {
		p.mu.Lock()
		cut := p.isCutLocked(c)
		ch := p.changed
		p.mu.Unlock()
		if !cut {
			return true
		}
		select {
		case <-ch:
		case <-c.done:
			return false
		case <-p.ctx.Done():
			return false
		}
	}
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// The listener is broken: nothing more can be accepted.
			return
		}
		p.accepted.Add(1)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = nc.Close()
			return
		}
		p.nextID++
		c := newConn(p, p.nextID, nc)
		p.conns[c.id] = c
		p.wg.Add(1)
		p.mu.Unlock()
		go c.serve()
	}
}

func (p *Proxy) forget(c *conn) {
	p.mu.Lock()
	delete(p.conns, c.id)
	p.mu.Unlock()
}
