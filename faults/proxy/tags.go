package proxy

import (
	"context"
	"net"
	"sync"
	"time"
)

// Tags maps connections to the simulated clients that opened them, so that a
// fault can target one client (CutClient, ResetClient). A client dials
// through Tags.Dialer(id); the dialer records the connection's local address,
// and a proxy given WithTags finds the client by the remote address it
// accepted. One Tags may serve many proxies (one per server endpoint).
//
// Tags is safe for concurrent use.
type Tags struct {
	mu      sync.Mutex
	byLocal map[string]int
}

// NewTags returns an empty tag registry.
func NewTags() *Tags { return &Tags{byLocal: map[string]int{}} }

// DialFunc dials like net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Dialer returns a dial function for simulated client id: every connection it
// makes is tagged with id until it is closed. The registration happens before
// the dial returns, so before the client writes its first byte.
func (t *Tags) Dialer(id int) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return t.Tag(nc, id), nil
	}
}

// TimeoutDialer adapts Dialer to dialers that take a timeout instead of a
// context (go-zookeeper's zk.Dialer).
func (t *Tags) TimeoutDialer(id int) func(network, addr string, timeout time.Duration) (net.Conn, error) {
	dial := t.Dialer(id)
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		ctx := context.Background()
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		return dial(ctx, network, addr)
	}
}

// Tag registers an already dialed connection as client id's and returns a
// connection that unregisters itself on Close. Use the returned connection.
func (t *Tags) Tag(nc net.Conn, id int) net.Conn {
	local := nc.LocalAddr().String()
	t.mu.Lock()
	t.byLocal[local] = id
	t.mu.Unlock()
	return &taggedConn{Conn: nc, tags: t, local: local}
}

// Register tags the connection whose local (client-side) address is local
// as client id's, for callers that watch their connections themselves
// (faults.ZKSessions tags a ZooKeeper connection once its handshake names
// the session). Unregister when the connection closes.
func (t *Tags) Register(local string, id int) {
	t.mu.Lock()
	t.byLocal[local] = id
	t.mu.Unlock()
}

// Unregister forgets the connection at local.
func (t *Tags) Unregister(local string) {
	t.mu.Lock()
	delete(t.byLocal, local)
	t.mu.Unlock()
}

func (t *Tags) lookup(remote string) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.byLocal[remote]
	return id, ok
}

// Len reports how many tagged connections are open.
func (t *Tags) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byLocal)
}

type taggedConn struct {
	net.Conn
	tags  *Tags
	local string
	once  sync.Once
}

func (c *taggedConn) Close() error {
	c.once.Do(func() {
		c.tags.mu.Lock()
		delete(c.tags.byLocal, c.local)
		c.tags.mu.Unlock()
	})
	return c.Conn.Close()
}
