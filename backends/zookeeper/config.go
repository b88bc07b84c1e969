package zookeeper

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
)

// ErrClosed: the Backend was closed.
var ErrClosed = errors.New("zookeeper: backend closed")

// DefaultSessionTimeout is a session's timeout when none is asked for.
const DefaultSessionTimeout = 4 * time.Second

// Config says where the servers are and how sessions are made.
type Config struct {
	// Endpoints are the servers, "host:port" each. Required.
	Endpoints []string
	// SessionTimeout is the session timeout asked of the server, which
	// clamps it to its [minSessionTimeout, maxSessionTimeout] (by default
	// 2 to 20 ticks). Default DefaultSessionTimeout.
	SessionTimeout time.Duration
	// Digest, if set ("user:password"), is added to every session with
	// AddAuth("digest", ...). Nodes are created with the open ACL.
	Digest string
	// Conns is 0 for one connection (and session) per Session, the
	// default. K > 0 multiplexes all Sessions over K shared connections:
	// the server then keeps one watch per connection and path, which hides
	// the herd. Sessions sharing a connection share its ZooKeeper session
	// (and ID); closing one deletes the ephemeral nodes it made.
	Conns int

	// RecvBufferSize is each connection's receive buffer, and so the
	// largest reply it can read, chiefly a getChildren listing, which
	// costs 4 + len(name) bytes per child. The whole buffer is resident.
	// Default: MaxChildren's size if set, else 96 KiB (DefaultRecvBufferSize),
	// enough for 2,700 of the names CreateSequential makes with prefix
	// "lock-" (32 bytes), or 2,200 names of 40 bytes. Workloads that queue
	// more clients under one node set MaxChildren.
	RecvBufferSize int
	// MaxChildren, if set and RecvBufferSize is not, sizes the receive
	// buffer for listings of that many children of up to 52-byte names
	// (CreateSequential names with prefixes of up to 25 bytes):
	// RecvBufferForChildren(MaxChildren). Set it to the number of clients
	// that queue under one node. 10,000 children take 563 KiB per session.
	MaxChildren int
	// MaxChildName, if set with MaxChildren, is the longest child name
	// those listings hold, and sizes the buffer for it instead of for
	// 52-byte names: RecvBufferForNames(MaxChildren, MaxChildName). 10 for
	// queues of Session.Enqueue's bare sequence numbers, whose 10,000
	// children then take 141 KiB per session instead of 563.
	MaxChildName int
	// SendBufferSize is each connection's send buffer and largest request
	// (path plus data). Default 8 KiB with a connection per session;
	// 136 KiB with shared connections, whose re-armed watches go out after
	// a reconnect in packets of up to 128 KiB.
	SendBufferSize int
}

// Buffer sizes.
const (
	DefaultRecvBufferSize = 96 << 10
	// MinRecvBufferSize is the least RecvBufferForNames gives.
	MinRecvBufferSize     = 16 << 10
	DefaultSendBufferSize = 8 << 10
	sharedSendBufferSize  = 136 << 10
	// childBytes is the room per child RecvBufferForChildren allows.
	childBytes = 56
	// adminRecvBufferSize lets Admin list very large folders.
	adminRecvBufferSize = 16 << 20
)

// RecvBufferForChildren is the receive buffer that holds a listing of n
// children with names of up to 52 bytes: 16 KiB + 56 bytes per child, and
// at least DefaultRecvBufferSize.
func RecvBufferForChildren(n int) int {
	return max(DefaultRecvBufferSize, 16<<10+n*childBytes)
}

// RecvBufferForNames is the receive buffer that holds a listing of n
// children with names of up to nameBytes bytes: 4 + nameBytes a child (the
// length and the name) and 4 KiB for the reply's header and the parent's
// stat, at least MinRecvBufferSize. A session's largest reply besides a
// listing is a node's data, which zkbench keeps under 1 KiB.
func RecvBufferForNames(n, nameBytes int) int {
	return max(MinRecvBufferSize, 4<<10+n*(4+nameBytes))
}

// ChildrenIn is the most children a listing in a receive buffer of buf
// bytes holds: the inverse of RecvBufferForNames (nameBytes > 0) or of
// RecvBufferForChildren (0).
func ChildrenIn(buf, nameBytes int) int {
	if nameBytes > 0 {
		return (buf - 4<<10) / (4 + nameBytes)
	}
	return (buf - 16<<10) / childBytes
}

// RecvBuffer is the receive buffer each session of cfg gets:
// RecvBufferSize, or where that is 0 one that holds a listing of
// MaxChildren children (of MaxChildName bytes when given).
func (cfg Config) RecvBuffer() int {
	switch {
	case cfg.RecvBufferSize > 0:
		return cfg.RecvBufferSize
	case cfg.MaxChildren > 0 && cfg.MaxChildName > 0:
		return RecvBufferForNames(cfg.MaxChildren, cfg.MaxChildName)
	}
	return RecvBufferForChildren(cfg.MaxChildren)
}

// withDefaults fills in defaults and checks the rest.
func (cfg Config) withDefaults() (Config, error) {
	if len(cfg.Endpoints) == 0 {
		return cfg, fmt.Errorf("%w: no endpoints", ErrBadEndpoint)
	}
	for _, ep := range cfg.Endpoints {
		if err := checkEndpoint(ep); err != nil {
			return cfg, err
		}
	}
	if cfg.Conns < 0 || cfg.MaxChildren < 0 || cfg.MaxChildName < 0 {
		return cfg, fmt.Errorf("zookeeper: Conns %d, MaxChildren %d and MaxChildName %d must be 0 or more",
			cfg.Conns, cfg.MaxChildren, cfg.MaxChildName)
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	cfg.RecvBufferSize = cfg.RecvBuffer()
	if cfg.SendBufferSize <= 0 {
		cfg.SendBufferSize = DefaultSendBufferSize
		if cfg.Conns > 0 {
			cfg.SendBufferSize = sharedSendBufferSize
		}
	}
	return cfg, nil
}

// Option tunes a Backend.
type Option func(*options)

type options struct {
	logger zk.Logger
	dialer zk.Dialer
	pids   func() map[string]int
	// pings times every connection's pings (pings.go).
	pings *backends.KeepAliveRecorder
	// witness counts the writes the sessions cause that the instrument
	// does not count (backends.Witness).
	witness *backends.WitnessCounters
}

// serverPIDs returns the local process of each endpoint now (nil: none).
func (o *options) serverPIDs() map[string]int {
	if o.pids == nil {
		return nil
	}
	return o.pids()
}

// WithLogger sends go-zookeeper's error log lines (reconnects, failed
// dials) to l. Default: discarded.
func WithLogger(l zk.Logger) Option { return func(o *options) { o.logger = l } }

// WithDialer makes every connection with d (tests put a proxy in the way).
// Default net.DialTimeout.
func WithDialer(d zk.Dialer) Option { return func(o *options) { o.dialer = d } }

// WithServerPIDs names the local process of each endpoint, so that
// Preflight reports PIDs and Scrape adds the servers' CPU time and resident
// memory (cluster/zookeeper's Cluster.PIDs gives this map). Default none.
// The map is fixed: use WithServerPIDFunc where servers restart.
func WithServerPIDs(pids map[string]int) Option {
	return func(o *options) { o.pids = func() map[string]int { return pids } }
}

// WithServerPIDFunc is WithServerPIDs asked again at every Preflight and
// Scrape, for servers that a fault kills and restarts under a new process
// (cluster/zookeeper's Cluster.PIDs is such a function). Default none.
func WithServerPIDFunc(pids func() map[string]int) Option {
	return func(o *options) { o.pids = pids }
}
