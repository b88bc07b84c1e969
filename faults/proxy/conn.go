package proxy

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// unresolved marks a connection whose client tag has not been looked up yet.
const unresolved = -2

// chunk is one read forwarded as a unit, or the read error that ended a
// direction (err != nil, data empty).
type chunk struct {
	data []byte
	at   time.Time // deliver no earlier than this
	err  error
}

// conn is one proxied connection: the accepted client side and the dialed
// server side, with one reader and one writer per direction.
type conn struct {
	p      *Proxy
	id     uint64
	remote string
	opened time.Time
	cut    bool // guarded by p.mu

	tag      atomic.Int64
	halfDone atomic.Int32

	mu       sync.Mutex
	down     net.Conn // client side, accepted
	up       net.Conn // server side, dialed; nil until then
	isClosed bool
	done     chan struct{}
}

func newConn(p *Proxy, id uint64, nc net.Conn) *conn {
	c := &conn{p: p, id: id, remote: nc.RemoteAddr().String(), opened: time.Now(), down: nc, done: make(chan struct{})}
	c.tag.Store(unresolved)
	return c
}

// client returns the simulated client that opened c, or -1. The tag is
// looked up lazily: Tags.Dialer registers a connection right after its dial
// returns, before the client writes, so it is known by the first chunk.
func (c *conn) client() int {
	if t := c.tag.Load(); t != unresolved {
		return int(t)
	}
	tags := c.p.cfg.tags
	if tags == nil {
		c.tag.Store(-1)
		return -1
	}
	if id, ok := tags.lookup(c.remote); ok {
		c.tag.Store(int64(id))
		return id
	}
	return -1
}

func (c *conn) serve() {
	defer c.p.wg.Done()
	defer c.p.forget(c)
	defer c.close()
	// A connection accepted during a cut is not forwarded upstream until the
	// cut ends, like a SYN into a blackhole.
	if !c.p.waitOpen(c) {
		return
	}
	dctx, cancel := context.WithTimeout(c.p.ctx, c.p.cfg.dialTimeout)
	var d net.Dialer
	up, err := d.DialContext(dctx, "tcp", c.p.target)
	cancel()
	if err != nil {
		// The server is down: refuse the client the way a dead port does.
		c.p.dialFailures.Add(1)
		c.reset()
		return
	}
	c.mu.Lock()
	if c.isClosed {
		c.mu.Unlock()
		_ = up.Close()
		return
	}
	c.up = up
	c.mu.Unlock()

	var wg sync.WaitGroup
	toServer := make(chan chunk, c.p.cfg.queue)
	toClient := make(chan chunk, c.p.cfg.queue)
	wg.Add(4)
	go func() { defer wg.Done(); c.read(c.down, toServer, ClientToServer) }()
	go func() { defer wg.Done(); c.write(up, toServer, &c.p.bytesUp) }()
	go func() { defer wg.Done(); c.read(up, toClient, ServerToClient) }()
	go func() { defer wg.Done(); c.write(c.down, toClient, &c.p.bytesDown) }()
	wg.Wait()
}

// read turns reads from src into timestamped chunks. Timestamps never go
// backwards, so jitter cannot reorder a direction.
func (c *conn) read(src net.Conn, q chan<- chunk, d Direction) {
	buf := make([]byte, c.p.cfg.chunkSize)
	var last time.Time
	send := func(ch chunk) bool {
		select {
		case q <- ch:
			return true
		case <-c.done:
			return false
		}
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			at := time.Now()
			if dl := c.p.delay(d); dl > 0 {
				at = at.Add(dl)
			}
			if at.Before(last) {
				at = last
			}
			last = at
			if !send(chunk{data: slices.Clone(buf[:n]), at: at}) {
				return
			}
		}
		if err != nil {
			send(chunk{err: err, at: last})
			return
		}
	}
}

// write delivers chunks to dst at their time, while the connection is not
// cut. An EOF is passed on as a half-close; any other error resets the
// other side too.
func (c *conn) write(dst net.Conn, q <-chan chunk, bytes *atomic.Int64) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var ch chunk
		select {
		case ch = <-q:
		case <-c.done:
			return
		}
		if wait := time.Until(ch.at); wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-timer.C:
			case <-c.done:
				return
			}
		}
		if !c.p.waitOpen(c) {
			return
		}
		if ch.err != nil {
			if errors.Is(ch.err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				if c.halfDone.Add(1) == 2 {
					c.close()
				}
			} else {
				c.reset()
			}
			return
		}
		if _, err := dst.Write(ch.data); err != nil {
			c.reset()
			return
		}
		bytes.Add(int64(len(ch.data)))
	}
}

// reset closes both sides with SO_LINGER 0, which sends a TCP RST.
func (c *conn) reset() {
	c.mu.Lock()
	for _, nc := range []net.Conn{c.down, c.up} {
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
	}
	c.mu.Unlock()
	c.close()
}

func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isClosed {
		return
	}
	c.isClosed = true
	close(c.done)
	_ = c.down.Close()
	if c.up != nil {
		_ = c.up.Close()
	}
}

func sortByID(cs []ConnInfo) {
	slices.SortFunc(cs, func(a, b ConnInfo) int { return cmp.Compare(a.ID, b.ID) })
}
