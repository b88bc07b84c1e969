// Package instrument is zkbench's counting decorator: it wraps a
// backends.Session and counts, per simulated client and in total, every
// request by type, every watch armed and every watch event delivered. It runs
// in every benchmark, so counting is a few atomic adds on a fixed array: no
// map, lock or allocation on a request's path. The one cost beyond that is a
// forwarding goroutine per armed watch, which ends when the backend closes
// the watch's channel.
//
// # What the counts mean, and which server counter each should equal
//
// A request is counted when the wrapper hands it to the inner session, before
// the answer, so it is counted even if it fails; failures are also counted by
// type (any non-nil error, including ErrNodeExists, ErrNoNode, a cancelled
// ctx or ErrSessionLost). A call whose ctx was already done or whose session
// was already over is not counted at all (no request, no bytes, no failure):
// the backend refuses it before any request goes out, so the servers never
// see it either.
//
//   - Requests["create"] + ["create_seq"] + ["enqueue"] + ["dequeue"] + ["update"] +
//     ["delete"] + ["set"] + ["set_if"] + ["commit"] equal the servers' write requests over the same interval (backends.MetricWrites: ZooKeeper
//     zk_cnt_updatelatency, which counts failed creates and deletes too; etcd
//     Txn/Put/DeleteRange calls handled), provided nothing else wrote in the
//     interval: opening a session (ZooKeeper createSession, etcd LeaseGrant),
//     closing one (closeSession, LeaseRevoke), EnsurePath (a backend-specific
//     number of calls) and Admin calls are server writes the decorator does
//     not count as such. backends/backendtest checks this equality.
//   - Reads ("get", "children", "children_v", "exists_w", "children_w", "predecessor")
//     equal
//     backends.MetricReads on etcd (one Range call each). On ZooKeeper
//     MetricReads (the per-namespace read count of /zkbench; the raw
//     zk_cnt_readlatency also counts pings) counts only reads that found
//     their node. backends/backendtest checks both models. "watch_data"
//     is, on etcd, one read and one watch stream, whose events are
//     WatchEvents with the data they carry in BytesReceived; on ZooKeeper
//     an addWatch and a getData, and each of its events a getData more
//     (notifications carry no data), which the instrument does not count. On ZooKeeper
//     "set" of an absent node is a failed setData and a create. "tagged" is one
//     read on etcd and, on ZooKeeper, a listing and a read per child.
//   - WatchEvents + LateWatchEvents equals the watch notifications the
//     servers sent (backends.MetricWatchEvents; on ZooKeeper also
//     MetricWatchesTriggeredOnDelete when the only events are deletions),
//     provided each session arms at most one live watch per path at a time:
//     ZooKeeper keeps one server-side watcher per connection and path and
//     go-zookeeper fans its one notification out to every local watcher, so
//     two ExistsW on one path from one session are 2 client events for 1
//     server event. backends/backendtest checks this equality.
//   - WatchEvents counts notifications delivered on the channels callers
//     wait on. LateWatchEvents counts those that arrived for watches whose
//     ctx had already ended (backends.LateWatchCounter, read from the
//     session when counts are taken): on ZooKeeper such a watch stays armed
//     on the server (there is no remove-watch in go-zookeeper), fires later
//     and is counted there; etcd cancels it and has none.
//   - WatchesArmed counts watch calls that returned without error; a watch
//     whose ctx ends before it fires is armed but never delivers to its
//     caller.
//   - EventSessionLost is not a server notification: it is counted in
//     SessionLostEvents, not in WatchEvents.
//   - WastedWakeups is recorded by the caller (AddWastedWakeups), which alone
//     knows whether a wake-up led to progress.
//
// # Bytes
//
// BytesSent and BytesReceived count the payload of each call as the
// Session seam sees it, the same on both backends, with no protocol
// framing, headers, stat structures, revisions or lease ids:
//
//   - sent: the path of every call (Create, Get, Delete, Children,
//     ChildrenW, ExistsW, EnsurePath once however many requests it makes;
//     CreateSequential: parent + "/" + prefix; a lock queue's calls the
//     paths they name) plus the data of Create, CreateSequential, Set and
//     Update, and a conditional write's (SetIf, Commit) guards, paths and
//     data;
//   - received: the data Get returns (and WatchData's first read), the
//     names (Node.Name) a listing (Children, ChildrenW, ChildrenVersion)
//     returns, the names a backend listed to answer a predecessor query
//     (Node.Listed), and the path and data of each watch event delivered.
//     Creates, deletes and ExistsW receive nothing counted: what they
//     return (a name the client chose, a flag, a revision) is not a
//     payload the server sends on etcd.
//
// A call that fails counts what it sent and receives nothing. These are
// not the wire's bytes: ZooKeeper's zk_bytes_received_count,
// zk_response_bytes and zk_watch_bytes and etcd's etcd_network_client_grpc_*_bytes_total count
// whole messages (headers, stats, full keys and values, keep-alives), so
// they are larger, and for small payloads by a large factor.
package instrument

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// Op is a request type of backends.Session.
type Op int

// The request types. Their String names are the keys of Counts.Requests and
// the results' client counts (workloads convert them).
const (
	OpCreate Op = iota
	OpCreateSeq
	OpGet
	OpDelete
	OpChildren
	OpEnsurePath
	OpExistsW
	OpChildrenW
	OpEnqueue
	OpPredecessor
	OpTagged
	OpDequeue
	OpSet
	OpWatchData
	OpUpdate
	OpSetIf
	OpCommit
	OpChildrenVersion
	numOps
)

var opNames = [numOps]string{
	OpCreate:          "create",
	OpCreateSeq:       "create_seq",
	OpGet:             "get",
	OpDelete:          "delete",
	OpChildren:        "children",
	OpEnsurePath:      "ensure_path",
	OpExistsW:         "exists_w",
	OpChildrenW:       "children_w",
	OpEnqueue:         "enqueue",
	OpPredecessor:     "predecessor",
	OpTagged:          "tagged",
	OpDequeue:         "dequeue",
	OpSet:             "set",
	OpWatchData:       "watch_data",
	OpUpdate:          "update",
	OpSetIf:           "set_if",
	OpCommit:          "commit",
	OpChildrenVersion: "children_v",
}

// Ops lists every request type in a stable order.
func Ops() []Op {
	ops := make([]Op, numOps)
	for i := range ops {
		ops[i] = Op(i)
	}
	return ops
}

func (o Op) String() string {
	if o < 0 || o >= numOps {
		return "unknown"
	}
	return opNames[o]
}

// Counters are one client's counts. The zero value is ready to use; every
// method is safe for concurrent use. A Counters must not be copied after
// first use.
type Counters struct {
	requests          [numOps]atomic.Int64
	failures          [numOps]atomic.Int64
	inFlight          [numOps]atomic.Int64
	watchesArmed      atomic.Int64
	watchesOpen       atomic.Int64
	watchEvents       atomic.Int64
	lastWatchEvent    atomic.Int64 // Unix nanoseconds; 0: none yet
	sessionLostEvents atomic.Int64
	wastedWakeups     atomic.Int64
	bytesSent         atomic.Int64
	bytesReceived     atomic.Int64

	// Late watch events live in the backend sessions: read from the open
	// ones at each snapshot, folded into lateClosed when one closes.
	lateMu     sync.Mutex
	lateOpen   []backends.LateWatchCounter
	lateClosed int64
}

// watchEvent counts one watch event that arrived from the backend now.
func (c *Counters) watchEvent() {
	c.watchEvents.Add(1)
	c.lastWatchEvent.Store(time.Now().UnixNano())
}

// LastWatchEvent is when the last watch event delivered on this client's
// channels arrived from the backend (the zero Time: none yet). A lock
// workload reads it at a grant to split the handoff into the notification
// and the successor's decision.
func (c *Counters) LastWatchEvent() time.Time {
	if n := c.lastWatchEvent.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Request records that a request of type op was sent.
func (c *Counters) Request(op Op) { c.requests[op].Add(1) }

// sent records that a call of type op went out; done ends it.
func (c *Counters) sent(op Op) {
	c.requests[op].Add(1)
	c.inFlight[op].Add(1)
}

// Failure records that a request of type op failed.
func (c *Counters) Failure(op Op) { c.failures[op].Add(1) }

// AddWastedWakeups records n watch notifications that led to no progress
// (the waiter woke, looked, and had to wait again).
func (c *Counters) AddWastedWakeups(n int64) { c.wastedWakeups.Add(n) }

// addLate starts reading late watch events from an open session.
func (c *Counters) addLate(l backends.LateWatchCounter) {
	c.lateMu.Lock()
	c.lateOpen = append(c.lateOpen, l)
	c.lateMu.Unlock()
}

// closeLate keeps the final count of a closed session and stops reading it.
func (c *Counters) closeLate(l backends.LateWatchCounter) {
	c.lateMu.Lock()
	defer c.lateMu.Unlock()
	if i := slices.Index(c.lateOpen, l); i >= 0 {
		c.lateClosed += l.LateWatchEvents()
		c.lateOpen = slices.Delete(c.lateOpen, i, i+1)
	}
}

// lateWatchEvents sums the late watch events of this client's sessions.
func (c *Counters) lateWatchEvents() int64 {
	c.lateMu.Lock()
	defer c.lateMu.Unlock()
	n := c.lateClosed
	for _, l := range c.lateOpen {
		n += l.LateWatchEvents()
	}
	return n
}

// OpenWatches returns how many armed watches have not ended yet: the
// backend has neither delivered their event (and closed their channel) nor
// ended them with their ctx. A caller that needs every notification already
// sent to have reached this client waits for it to be 0.
func (c *Counters) OpenWatches() int64 { return c.watchesOpen.Load() }

// Requests returns how many requests of type op were sent.
func (c *Counters) Requests(op Op) int64 { return c.requests[op].Load() }

// Snapshot copies the counts. Counts taken while requests are in flight are
// each exact at some instant, not all at the same one.
func (c *Counters) Snapshot() Counts {
	s := Counts{
		Requests:          make(map[string]int64, numOps),
		Failures:          make(map[string]int64, numOps),
		InFlight:          make(map[string]int64, numOps),
		WatchesArmed:      c.watchesArmed.Load(),
		WatchEvents:       c.watchEvents.Load(),
		LateWatchEvents:   c.lateWatchEvents(),
		SessionLostEvents: c.sessionLostEvents.Load(),
		WastedWakeups:     c.wastedWakeups.Load(),
		BytesSent:         c.bytesSent.Load(),
		BytesReceived:     c.bytesReceived.Load(),
	}
	for op := range numOps {
		s.Requests[op.String()] = c.requests[op].Load()
		s.Failures[op.String()] = c.failures[op].Load()
		s.InFlight[op.String()] = c.inFlight[op].Load()
	}
	return s
}

// Counts are counters at one moment, by request type name (Op.String).
// Every type appears in Requests and Failures, zero or not.
type Counts struct {
	Requests map[string]int64 `json:"requests"`
	Failures map[string]int64 `json:"failures"`
	// InFlight are the calls the servers may or may not have counted
	// when they were read: at a snapshot, the calls sent and not yet
	// answered (a call is counted as it is sent; the servers count it as
	// they process it), and, where the meter reads the clients on both
	// sides of a server scrape, half the calls sent meanwhile. Between two
	// snapshots (Sub) and over clients (Add) they add up: the bound on
	// how far a client count may be off the servers' for this reason.
	InFlight map[string]int64 `json:"in_flight,omitempty"`
	// WatchesArmed: ExistsW, ChildrenW and WatchData calls that armed a
	// watch (counted as the call returns without an error, whether or not
	// its channel is nil).
	WatchesArmed int64 `json:"watches_armed"`
	// WatchEvents: server notifications delivered on those channels.
	WatchEvents int64 `json:"watch_events"`
	// LateWatchEvents: server notifications that reached the client for
	// watches whose ctx had ended (backends.LateWatchCounter). The servers
	// count WatchEvents + LateWatchEvents.
	LateWatchEvents int64 `json:"late_watch_events"`
	// SessionLostEvents: EventSessionLost delivered on those channels.
	SessionLostEvents int64 `json:"session_lost_events"`
	WastedWakeups     int64 `json:"wasted_wakeups"`
	// BytesSent and BytesReceived are the payload bytes of the calls (see
	// the package doc).
	BytesSent     int64 `json:"bytes_sent"`
	BytesReceived int64 `json:"bytes_received"`
}

// TotalRequests sums Requests over every type.
func (c Counts) TotalRequests() int64 {
	var n int64
	for _, v := range c.Requests {
		n += v
	}
	return n
}

// Add returns c + o.
func (c Counts) Add(o Counts) Counts {
	return c.combine(o, 1)
}

// Sub returns c - before: what happened between two snapshots.
func (c Counts) Sub(before Counts) Counts {
	return c.combine(before, -1)
}

func (c Counts) combine(o Counts, sign int64) Counts {
	r := Counts{
		Requests:          make(map[string]int64, numOps),
		Failures:          make(map[string]int64, numOps),
		InFlight:          make(map[string]int64, numOps),
		WatchesArmed:      c.WatchesArmed + sign*o.WatchesArmed,
		WatchEvents:       c.WatchEvents + sign*o.WatchEvents,
		LateWatchEvents:   c.LateWatchEvents + sign*o.LateWatchEvents,
		SessionLostEvents: c.SessionLostEvents + sign*o.SessionLostEvents,
		WastedWakeups:     c.WastedWakeups + sign*o.WastedWakeups,
		BytesSent:         c.BytesSent + sign*o.BytesSent,
		BytesReceived:     c.BytesReceived + sign*o.BytesReceived,
	}
	for op := range numOps {
		k := op.String()
		r.Requests[k] = c.Requests[k] + sign*o.Requests[k]
		r.Failures[k] = c.Failures[k] + sign*o.Failures[k]
		r.InFlight[k] = c.InFlight[k] + o.InFlight[k] // a bound at each end, whatever the sign
	}
	return r
}
