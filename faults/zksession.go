package faults

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbench/zkbench/faults/proxy"
)

// Errors of ZKSessions, checked with errors.Is.
var (
	// ErrUnknownSession: no connection made through the dialer carried
	// that session, so its password is unknown.
	ErrUnknownSession = errors.New("faults: unknown ZooKeeper session")
	// ErrSessionGone: the server no longer knows the session (it expired
	// or was closed already).
	ErrSessionGone = errors.New("faults: ZooKeeper session already gone")
)

// SessionState is a change in a session as its client sees it.
type SessionState string

// Session states recorded in a run's timeline (kind "session").
const (
	// SessionConnected: a new session was established.
	SessionConnected SessionState = "connected"
	// SessionDisconnected: the connection carrying an established session
	// broke (reset, server gone, client gave up on a silent server).
	SessionDisconnected SessionState = "disconnected"
	// SessionReconnected: the client got its session back on a new
	// connection; its ephemeral nodes and watches survived.
	SessionReconnected SessionState = "reconnected"
	// SessionExpired: the server refused the session on reconnect: it
	// expired while the client was away (or was expired on purpose).
	SessionExpired SessionState = "expired"
	// SessionLost: the session ended before the client closed it, as the
	// backend reported it (etcd: lease gone).
	SessionLost SessionState = "lost"
)

// ZKSessions watches the ZooKeeper wire of every connection dialed through
// its Dialer: the connect handshake says which session a connection carries,
// whether it is new, resumed or refused as expired, and its password; a
// broken connection is a disconnect. It reports each change to a callback
// and can expire any session it has seen (Expire), the way ZooKeeper's own
// tests do: attach to the session from a second connection and close it.
//
// Only the handshake and each request's 12-byte header are parsed; payloads
// pass through untouched. Safe for concurrent use.
type ZKSessions struct {
	onEvent func(session int64, s SessionState)

	mu     sync.Mutex
	keys   map[int64]zkKey
	tags   *proxy.Tags
	client sessionClients                 // session -> client index (SetClients)
	conns  map[int64]map[*zkConn]struct{} // open connections by session
}

type zkKey struct {
	passwd  []byte
	timeout int32 // ms, as negotiated
}

// NewZKSessions returns a watcher reporting to onEvent (nil: no reports).
// onEvent runs on the client's I/O goroutines and must not block.
func NewZKSessions(onEvent func(session int64, s SessionState)) *ZKSessions {
	return &ZKSessions{onEvent: onEvent, keys: map[int64]zkKey{}, client: sessionClients{}, conns: map[int64]map[*zkConn]struct{}{}}
}

// TagClients makes every connection of a session whose client is known
// (SetClients) carry that client's tag in tags, so that proxies sharing tags
// can cut or reset one client (proxy.Proxy.CutClient). A reconnecting client
// is tagged from its handshake, before its first byte reaches a proxy.
func (z *ZKSessions) TagClients(tags *proxy.Tags) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.tags = tags
}

// SetClients maps session ids to client indexes (ids[i] is client i's; nil
// forgets them) and tags the sessions' open connections.
func (z *ZKSessions) SetClients(ids []int64) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.client.reset(ids)
	if z.tags == nil {
		return
	}
	for sid, cs := range z.conns {
		c, ok := z.client[sid]
		for zc := range cs {
			if ok {
				z.tags.Register(zc.local, c)
			} else {
				z.tags.Unregister(zc.local)
			}
		}
	}
}

// SetClient maps one session id to its client and tags the session's open
// connections, as sessions open one by one.
func (z *ZKSessions) SetClient(id int64, client int) {
	if client < 0 || id == 0 {
		return
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	z.client[id] = client
	if z.tags == nil {
		return
	}
	for zc := range z.conns[id] {
		z.tags.Register(zc.local, client)
	}
}

// attach records that zc carries session sid and tags it if its client is
// known.
func (z *ZKSessions) attach(zc *zkConn, sid int64) {
	z.mu.Lock()
	defer z.mu.Unlock()
	cs := z.conns[sid]
	if cs == nil {
		cs = map[*zkConn]struct{}{}
		z.conns[sid] = cs
	}
	cs[zc] = struct{}{}
	if c, ok := z.client[sid]; ok && z.tags != nil {
		z.tags.Register(zc.local, c)
	}
}

func (z *ZKSessions) detach(zc *zkConn) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for sid, cs := range z.conns {
		if _, ok := cs[zc]; ok {
			delete(cs, zc)
			if len(cs) == 0 {
				delete(z.conns, sid)
			}
		}
	}
	if z.tags != nil {
		z.tags.Unregister(zc.local)
	}
}

// ZKDialer has go-zookeeper's zk.Dialer signature.
type ZKDialer = func(network, addr string, timeout time.Duration) (net.Conn, error)

// Dialer wraps base (nil: net.DialTimeout) so that every connection it makes
// is watched. Give it to the ZooKeeper backend (backends/zookeeper
// WithDialer).
func (z *ZKSessions) Dialer(base ZKDialer) ZKDialer {
	if base == nil {
		base = net.DialTimeout
	}
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		nc, err := base(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &zkConn{Conn: nc, z: z, asked: -1, local: nc.LocalAddr().String()}, nil
	}
}

// Known reports whether the session has been seen established.
func (z *ZKSessions) Known(session int64) bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	_, ok := z.keys[session]
	return ok
}

func (z *ZKSessions) emit(session int64, s SessionState) {
	if z.onEvent != nil {
		z.onEvent(session, s)
	}
}

const (
	zkOpCloseSession = -11
	zkMaxFrame       = 1 << 20 // handshakes are tiny; anything larger is not ZooKeeper
)

// Expire ends session on the server at once, as if it had timed out: it
// connects to one of endpoints with the session's id and password, which
// moves the session to the new connection, and closes it there. The server
// deletes the session's ephemeral nodes and fires their watches; the
// session's own client learns of it when it next reconnects ("expired").
// ctx bounds the whole exchange.
func (z *ZKSessions) Expire(ctx context.Context, endpoints []string, session int64) error {
	z.mu.Lock()
	key, ok := z.keys[session]
	z.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w 0x%x", ErrUnknownSession, session)
	}
	var errs []error
	for _, ep := range endpoints {
		err := expireAt(ctx, ep, session, key)
		if err == nil || errors.Is(err, ErrSessionGone) {
			return err
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("faults: expire session 0x%x: %w", session, errors.Join(errs...))
}

func expireAt(ctx context.Context, endpoint string, session int64, key zkKey) error {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return err
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	} else {
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	defer stop()

	be := binary.BigEndian
	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd.
	req := make([]byte, 0, 4+28+len(key.passwd))
	req = be.AppendUint32(req, uint32(4+8+4+8+4+len(key.passwd)))
	req = be.AppendUint32(req, 0)
	req = be.AppendUint64(req, 0)
	req = be.AppendUint32(req, uint32(key.timeout))
	req = be.AppendUint64(req, uint64(session))
	req = be.AppendUint32(req, uint32(len(key.passwd)))
	req = append(req, key.passwd...)
	if _, err := nc.Write(req); err != nil {
		return err
	}
	resp, err := readReply(nc, "connect")
	if err != nil {
		return err
	}
	if timeout, sid := int32(be.Uint32(resp[4:8])), int64(be.Uint64(resp[8:16])); timeout <= 0 || sid != session {
		return fmt.Errorf("%w: 0x%x", ErrSessionGone, session)
	}
	// closeSession: xid 1, type -11, no body.
	closeReq := be.AppendUint32(nil, 8)
	closeReq = be.AppendUint32(closeReq, 1)
	op := int32(zkOpCloseSession)
	closeReq = be.AppendUint32(closeReq, uint32(op))
	if _, err := nc.Write(closeReq); err != nil {
		return err
	}
	// Reply header: xid, zxid, err.
	reply, err := readReply(nc, "close")
	if err != nil {
		return err
	}
	if code := int32(be.Uint32(reply[12:16])); code != 0 {
		return fmt.Errorf("close session: server error %d", code)
	}
	return nil
}

// readReply reads the server's reply to the request what ("connect",
// "close"): a frame of at least the 16 bytes Expire reads of either.
func readReply(r io.Reader, what string) ([]byte, error) {
	b, err := readFrame(r)
	if err != nil {
		return nil, fmt.Errorf("%s reply: %w", what, err)
	}
	if len(b) < 16 {
		return nil, fmt.Errorf("%s reply of %d bytes is too short", what, len(b))
	}
	return b, nil
}

func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > zkMaxFrame {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	buf := make([]byte, n)
	_, err := io.ReadFull(r, buf)
	return buf, err
}

// zkConn watches one connection.
type zkConn struct {
	net.Conn
	z     *ZKSessions
	local string

	// Written by the client's send side only.
	wfirst bool   // the connect request has been parsed
	whdr   []byte // header bytes collected so far
	wskip  int    // payload bytes of the current frame still to pass
	asked  int64  // session the connect request asked for (0: new); -1 unknown

	// Read side: only the first frame (the connect response) is parsed.
	rdone bool
	rbuf  []byte

	askedSession atomic.Int64
	session      atomic.Int64 // established session, 0 until then
	closing      atomic.Bool  // the client sent closeSession
	downOnce     sync.Once
}

func (c *zkConn) Write(p []byte) (int, error) {
	c.scanWrite(p)
	return c.Conn.Write(p)
}

// scanWrite follows frame boundaries on the way out: the connect request
// first (its session id is at body offset 16), then request headers
// (length, xid, type) to spot closeSession.
func (c *zkConn) scanWrite(p []byte) {
	be := binary.BigEndian
	for len(p) > 0 {
		if c.wskip > 0 {
			n := min(c.wskip, len(p))
			c.wskip -= n
			p = p[n:]
			continue
		}
		need := 12
		if !c.wfirst {
			need = 4 + 24
		}
		n := min(need-len(c.whdr), len(p))
		c.whdr = append(c.whdr, p[:n]...)
		p = p[n:]
		if len(c.whdr) < need {
			return
		}
		flen := int(be.Uint32(c.whdr[:4]))
		if !c.wfirst {
			c.wfirst = true
			c.asked = int64(be.Uint64(c.whdr[4+16 : 4+24]))
			c.askedSession.Store(c.asked)
			if c.asked != 0 {
				c.z.attach(c, c.asked) // tagged before the request leaves
			}
		} else if int32(be.Uint32(c.whdr[8:12])) == zkOpCloseSession {
			c.closing.Store(true)
		}
		c.wskip = max(0, flen-(need-4))
		c.whdr = c.whdr[:0]
	}
}

func (c *zkConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.rdone && n > 0 {
		c.scanRead(p[:n])
	}
	if err != nil {
		c.down()
	}
	return n, err
}

// scanRead collects the connect response: protocolVersion, timeOut,
// sessionId, passwd.
func (c *zkConn) scanRead(p []byte) {
	be := binary.BigEndian
	c.rbuf = append(c.rbuf, p...)
	if len(c.rbuf) < 4 {
		return
	}
	flen := int(be.Uint32(c.rbuf[:4]))
	if flen > zkMaxFrame || flen < 16 {
		c.rdone, c.rbuf = true, nil // not a handshake we understand
		return
	}
	if len(c.rbuf) < 4+flen {
		return
	}
	body := c.rbuf[4 : 4+flen]
	c.rdone, c.rbuf = true, nil
	timeout := int32(be.Uint32(body[4:8]))
	sid := int64(be.Uint64(body[8:16]))
	asked := c.askedSession.Load()
	if timeout <= 0 || sid == 0 {
		if asked > 0 {
			c.z.emit(asked, SessionExpired)
		}
		return
	}
	var passwd []byte
	if len(body) >= 20 {
		if pl := int(be.Uint32(body[16:20])); pl >= 0 && 20+pl <= len(body) {
			passwd = append([]byte(nil), body[20:20+pl]...)
		}
	}
	c.z.mu.Lock()
	c.z.keys[sid] = zkKey{passwd: passwd, timeout: timeout}
	c.z.mu.Unlock()
	c.session.Store(sid)
	c.z.attach(c, sid)
	if asked == sid {
		c.z.emit(sid, SessionReconnected)
	} else {
		c.z.emit(sid, SessionConnected)
	}
}

func (c *zkConn) Close() error {
	c.down()
	c.z.detach(c)
	return c.Conn.Close()
}

// down reports a disconnect once, for an established session the client
// did not close on purpose.
func (c *zkConn) down() {
	c.downOnce.Do(func() {
		if sid := c.session.Load(); sid != 0 && !c.closing.Load() {
			c.z.emit(sid, SessionDisconnected)
		}
	})
}
