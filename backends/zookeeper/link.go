package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
)

// errLinkLost is what the dialer answers once the session is lost, so that
// go-zookeeper cannot open a fresh session behind our back.
var errLinkLost = errors.New("zookeeper: session lost, not reconnecting")

// link is one zk.Conn and the one ZooKeeper session it carries.
//
// go-zookeeper reconnects within a session on its own (keeping watches), but
// after the session expires it silently opens a new one. A link treats
// expiry, an authentication failure, or Close as the end: it closes lost,
// refuses every further dial and closes the zk.Conn. Session views
// registered on the link are told through onLost.
type link struct {
	conn    *zk.Conn
	timeout time.Duration // the session timeout asked for
	hasConn chan struct{} // closed once conn is set; callbacks may run before

	ready     chan struct{} // closed when the first session is established
	readyOnce sync.Once
	id        atomic.Int64 // the session id, once ready

	lost     chan struct{} // closed when the session is over
	lostOnce sync.Once
	isLost   atomic.Bool
	crashed  atomic.Bool   // ended by crash: the server times it out
	cause    error         // why; written before lost is closed
	closed   chan struct{} // closed when conn.Close has returned

	mu    sync.Mutex
	views map[*Session]struct{}
	// tooLarge holds go-zookeeper's message when a reply did not fit the
	// receive buffer (it drops the connection and says so only in its log).
	tooLarge atomic.Pointer[string]
	// nc is the last TCP connection dialed. go-zookeeper leaves it open
	// after an expiry; the link closes it when the session is over.
	nc net.Conn
	// witness counts the session's create and end (backends.Witness).
	witness *backends.WitnessCounters
}

// dial opens a zk.Conn with the backend's buffer sizes, logger and event
// handling. It does not wait for the session: see waitReady.
func dial(cfg *Config, o *options, recvBuf int) (*link, error) {
	l := &link{
		timeout: cfg.SessionTimeout,
		hasConn: make(chan struct{}),
		ready:   make(chan struct{}),
		lost:    make(chan struct{}),
		closed:  make(chan struct{}),
		views:   make(map[*Session]struct{}),
		witness: o.witness,
	}
	base := o.dialer
	if base == nil {
		base = net.DialTimeout
	}
	dialer := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		if l.isLost.Load() {
			return nil, errLinkLost
		}
		nc, err := base(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.isLost.Load() { // lost while dialing
			nc.Close()
			return nil, errLinkLost
		}
		l.nc = nc
		if o.pings != nil {
			return newPingConn(nc, o.pings), nil
		}
		return nc, nil
	}
	conn, events, err := zk.Connect(cfg.Endpoints, cfg.SessionTimeout,
		zk.WithDialer(dialer),
		zk.WithLogger(linkLogger{l, o.logger}),
		zk.WithLogInfo(false),
		zk.WithEventCallback(l.onEvent),
		zk.WithMaxBufferSize(recvBuf),
		zk.WithMaxConnBufferSize(cfg.SendBufferSize),
	)
	if err != nil {
		return nil, fmt.Errorf("zookeeper: connect: %w", err)
	}
	l.conn = conn
	close(l.hasConn)
	// Events are handled by the callback; the channel is not read, and
	// go-zookeeper drops what does not fit (it never blocks on it).
	_ = events
	return l, nil
}

// linkLogger passes go-zookeeper's log on, noting replies too large for
// the receive buffer.
type linkLogger struct {
	l    *link
	next zk.Logger
}

func (g linkLogger) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if strings.Contains(msg, "exceeds max buffer size") {
		g.l.tooLarge.Store(&msg)
	}
	g.next.Printf("%s", msg)
}

// onEvent runs on go-zookeeper's goroutines and must not block.
func (l *link) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		<-l.hasConn
		id := l.conn.SessionID()
		if l.id.CompareAndSwap(0, id) {
			l.countWrite() // the session's create
			l.readyOnce.Do(func() { close(l.ready) })
		} else if l.id.Load() != id {
			// A new session behind the lost one: never use it.
			l.markLost(fmt.Errorf("zookeeper: session 0x%x replaced by 0x%x", l.id.Load(), id))
		}
	case zk.StateExpired:
		l.markLost(zk.ErrSessionExpired)
	case zk.StateAuthFailed:
		l.markLost(zk.ErrAuthFailed)
	}
}

// markLost ends the session once: it closes lost, tells the views and
// closes the zk.Conn in the background (Close may wait for the server).
func (l *link) markLost(cause error) {
	l.lostOnce.Do(func() {
		if l.id.Load() != 0 && !l.crashed.Load() {
			// The session's end: its close, or another connection's
			// that expires it. A session the server times out (a
			// crash) ends with no write ZooKeeper counts.
			l.countWrite()
		}
		l.cause = cause
		l.isLost.Store(true)
		close(l.lost)
		l.mu.Lock()
		views := make([]*Session, 0, len(l.views))
		for v := range l.views {
			views = append(views, v)
		}
		l.mu.Unlock()
		for _, v := range views {
			if l.witness != nil && !v.shared && l.id.Load() != 0 {
				// The server deletes the session's ephemeral nodes as
				// it ends; ZooKeeper counts each below the namespace.
				l.witness.EndedNodes.Add(v.ownedCount())
			}
			v.end()
		}
		go func() {
			<-l.hasConn
			l.conn.Close()
			l.mu.Lock()
			if l.nc != nil {
				l.nc.Close()
			}
			l.mu.Unlock()
			close(l.closed)
		}()
	})
}

// errCrashed is a crashed session's cause (Session.Crash).
var errCrashed = errors.New("zookeeper: session crashed: its connection closed without a close, the server ends it on its timeout")

// crash ends the link as a process that died would: its connection
// closes with no closeSession sent, the dialer refuses from now on, so
// nothing reconnects, and the server ends the session when its timeout
// runs out (and only then removes its ephemeral nodes).
func (l *link) crash() {
	l.crashed.Store(true)
	l.mu.Lock()
	l.isLost.Store(true) // before the close: go-zookeeper's redial is refused
	if l.nc != nil {
		l.nc.Close()
	}
	l.mu.Unlock()
	l.markLost(errCrashed)
}

// countWrite counts a write the session itself made (its create or end).
func (l *link) countWrite() {
	if l.witness != nil {
		l.witness.SessionWrites.Add(1)
	}
}

// waitReady waits until the session is established, lost, or ctx ends.
func (l *link) waitReady(ctx context.Context) error {
	select {
	case <-l.ready:
		return nil
	case <-l.lost:
		return fmt.Errorf("zookeeper: session: %w", l.cause)
	case <-ctx.Done():
		return fmt.Errorf("zookeeper: no session with %v: %w", l.conn.Server(), ctx.Err())
	}
}

// attach registers a session view; false if the link is already lost.
func (l *link) attach(s *Session) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.isLost.Load() {
		return false
	}
	l.views[s] = struct{}{}
	return true
}

func (l *link) detach(s *Session) {
	l.mu.Lock()
	delete(l.views, s)
	l.mu.Unlock()
}

// shutdown closes the link deliberately and waits up to ctx for the server
// to acknowledge the close (which removes the session's ephemeral nodes).
func (l *link) shutdown(ctx context.Context) {
	l.markLost(zk.ErrClosing)
	select {
	case <-l.closed:
	case <-ctx.Done():
	}
}
