package zookeeper

import (
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// go-zookeeper 1.0.4 sends a ping (xid -2, opcode 11: a 12-byte packet in
// one Write) every time a ticker of period negotiated-timeout/3 fires,
// started when the connection's session is established, busy or idle; the
// ticker drops ticks while its sender is busy. It offers no hook for pings,
// so pingConn, the connection it is given by the dialer, reads them off the
// wire: the negotiated timeout from the connect response (the first frame
// read), each ping's send time, and each ping reply's arrival (xid -2).
const (
	pingXid    = -2
	opPing     = 11
	pingPacket = 12
)

// pingConn times one connection's pings into rec. Write is called by
// go-zookeeper's send loop and Read by its receive loop.
type pingConn struct {
	net.Conn
	rec *backends.KeepAliveRecorder

	mu       sync.Mutex
	interval time.Duration // negotiated timeout / 3; 0 until known
	origin   time.Time     // when the ticker started (the session was established)
	lastSend time.Time     // the last ping's send time; zero before the first
	sent     []time.Time   // pings not yet answered, oldest first

	// read side, touched by Read only
	frames    int // frames whose head was read
	head      [12]byte
	headN     int
	headWant  int // 4 until the length is known, then 4 + min(8, length)
	skip      int // bytes of the current frame after its head still to come
	connected bool
}

func newPingConn(c net.Conn, rec *backends.KeepAliveRecorder) *pingConn {
	return &pingConn{Conn: c, rec: rec, headWant: 4}
}

func (c *pingConn) Write(p []byte) (int, error) {
	if len(p) == pingPacket && binary.BigEndian.Uint32(p) == pingPacket-4 &&
		int32(binary.BigEndian.Uint32(p[4:])) == pingXid && binary.BigEndian.Uint32(p[8:]) == opPing {
		c.ping(time.Now())
	}
	return c.Conn.Write(p)
}

// ping records one ping sent at now: how long after its tick was due.
// The ticker keeps its schedule (origin + k·interval) and drops ticks while
// the sender is busy, so a ping is due at the first tick after the last
// ping was sent.
func (c *pingConn) ping(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.interval <= 0 {
		return
	}
	due := c.origin.Add(c.interval)
	if !c.lastSend.IsZero() {
		k := c.lastSend.Sub(c.origin)/c.interval + 1
		due = c.origin.Add(k * c.interval)
	}
	c.lastSend = now
	c.rec.Lateness(c.interval, now.Sub(due))
	if len(c.sent) < 16 {
		c.sent = append(c.sent, now)
	}
}

func (c *pingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.scan(p[:n])
	return n, err
}

// scan follows the frames (a 4-byte length, then the body) of what was
// read, looking at the first 8 bytes of each body.
func (c *pingConn) scan(b []byte) {
	for len(b) > 0 {
		if c.skip > 0 {
			k := min(c.skip, len(b))
			c.skip -= k
			b = b[k:]
			continue
		}
		k := copy(c.head[c.headN:c.headWant], b)
		c.headN += k
		b = b[k:]
		if c.headN < c.headWant {
			return
		}
		length := int(binary.BigEndian.Uint32(c.head[:4]))
		if c.headWant == 4 {
			c.headWant = 4 + min(8, length)
			if c.headWant > 4 {
				continue
			}
		}
		c.frame(length, c.head[4:c.headN])
		c.skip = length - (c.headN - 4)
		c.headN, c.headWant = 0, 4
	}
}

// frame handles the head of one frame read.
func (c *pingConn) frame(length int, body []byte) {
	now := time.Now()
	c.frames++
	if !c.connected {
		// The connect response: protocol version, negotiated timeout (ms).
		c.connected = true
		if len(body) >= 8 {
			timeout := time.Duration(int32(binary.BigEndian.Uint32(body[4:]))) * time.Millisecond
			c.mu.Lock()
			c.interval, c.origin = timeout/3, now
			c.mu.Unlock()
		}
		return
	}
	if len(body) >= 4 && int32(binary.BigEndian.Uint32(body)) == pingXid {
		c.mu.Lock()
		if len(c.sent) > 0 {
			c.rec.Reply(now.Sub(c.sent[0]))
			c.sent = c.sent[1:]
		}
		c.mu.Unlock()
	}
}
