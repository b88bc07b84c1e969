// Package backends is the seam between zkbench's recipes and the coordination
// services they run on. A recipe is written once against Session and runs
// unchanged on ZooKeeper (backends/zookeeper) and etcd (backends/etcd), so a
// comparison is algorithm against algorithm, not library against library.
//
// Paths are slash-separated absolute paths ("/zkbench/run-1/lock/n-0001").
// On ZooKeeper they are znodes; on etcd they are keys, and the children of P
// are the keys directly below P+"/".
package backends

import (
	"context"
	"errors"
)

// Kind names a coordination service.
type Kind string

// The backends zkbench drives.
const (
	ZooKeeper Kind = "zookeeper"
	Etcd      Kind = "etcd"
)

// Errors returned by every Session implementation, checked with errors.Is.
var (
	// ErrNodeExists: a create found the path already present.
	ErrNodeExists = errors.New("backends: node exists")
	// ErrNoNode: the path (or, on ZooKeeper, its parent) does not exist.
	ErrNoNode = errors.New("backends: no node")
	// ErrSessionLost: the session expired or was closed; every ephemeral node
	// it owned is gone or about to go. The Session is unusable afterwards.
	ErrSessionLost = errors.New("backends: session lost")
	// ErrUnknownOutcome: the request was sent but its result is unknown
	// (connection lost mid-request). The caller must not assume failure.
	ErrUnknownOutcome = errors.New("backends: outcome unknown")
)

// Node describes one node as seen by a create or a listing.
type Node struct {
	// Path is the full path; Name its last element.
	Path string `json:"path"`
	Name string `json:"name"`
	// Seq orders siblings made by CreateSequential: the ZooKeeper sequence
	// number, or the etcd create revision. Smaller was created first.
	// Zero for nodes not made by CreateSequential on ZooKeeper.
	Seq int64 `json:"seq"`
	// CreateRev is a cluster-wide, monotonically increasing creation stamp
	// usable as a fencing token: ZooKeeper czxid, etcd create revision.
	// Children listings may leave it zero on ZooKeeper (it costs a read).
	// CreateRev may be zero after a create on ZooKeeper, which cannot
	// return it without a read; Get reads it.
	CreateRev int64 `json:"create_rev,omitempty"`
}

// EventType says what a watch saw.
type EventType int

// Watch event types.
const (
	EventCreated EventType = iota + 1
	EventDeleted
	EventDataChanged
	EventChildrenChanged
	// EventSessionLost: the session ended while the watch was armed.
	EventSessionLost
)

func (t EventType) String() string {
	switch t {
	case EventCreated:
		return "created"
	case EventDeleted:
		return "deleted"
	case EventDataChanged:
		return "data-changed"
	case EventChildrenChanged:
		return "children-changed"
	case EventSessionLost:
		return "session-lost"
	}
	return "unknown"
}

// Event is one watch notification.
type Event struct {
	Type EventType
	Path string
}

// Nodes are the plain reads and writes of a session.
//
// Every method may be called concurrently. Every method blocks until the
// server answers, ctx is done (returning ctx.Err(), wrapped), or the session
// is lost (ErrSessionLost).
type Nodes interface {
	// Create makes an ephemeral node owned by this session at path.
	// ErrNodeExists if path is taken. On ZooKeeper the parent must exist
	// (see EnsurePath); on etcd there are no parents.
	Create(ctx context.Context, path string, data []byte) (Node, error)
	// CreateSequential makes an ephemeral node under parent whose name starts
	// with prefix and is ordered after every sibling created before it
	// (Node.Seq). Names are protected: they carry a per-session unique tag so
	// that a retry after a lost connection finds the node it already made
	// instead of making a duplicate.
	CreateSequential(ctx context.Context, parent, prefix string, data []byte) (Node, error)
	// Get reads a node's data. ErrNoNode if absent.
	Get(ctx context.Context, path string) ([]byte, Node, error)
	// Delete removes a node, whatever its version. ErrNoNode if absent.
	Delete(ctx context.Context, path string) error
	// Children lists the direct children of parent, ordered by Seq ascending
	// (names ascending for nodes without Seq). No watch is armed.
	Children(ctx context.Context, parent string) ([]Node, error)
	// EnsurePath makes path and its ancestors as persistent nodes if missing
	// (no-op on etcd, which has no directories).
	EnsurePath(ctx context.Context, path string) error
}

// Watches arm one-shot watches. The read and the arming are atomic: no
// change between them is missed (ZooKeeper's *W calls; etcd registers the
// watch from "now" first, then reads at revision G and forwards only events
// above G — a watch from an older revision would be "unsynced" and served by
// etcd's 100 ms resync loop).
//
// The returned channel receives at most one Event and is then closed. It is
// also closed, without an event, when ctx is done: the watch lives until it
// fires or ctx ends, so callers derive a ctx they cancel when they stop
// waiting. A lost session delivers EventSessionLost.
type Watches interface {
	// ExistsW reports whether path exists and arms a watch that fires on its
	// creation (if absent) or deletion or data change (if present).
	ExistsW(ctx context.Context, path string) (exists bool, n Node, events <-chan Event, err error)
	// ChildrenW lists parent's children like Children and arms a watch that
	// fires on the next change to that list.
	ChildrenW(ctx context.Context, parent string) (children []Node, events <-chan Event, err error)
}

// Session is one simulated client's session with the service: one zk.Conn
// session, or one etcd lease kept alive. Ephemeral nodes live as long as it.
type Session interface {
	Nodes
	Watches
	// ID identifies the session (ZooKeeper session id, etcd lease id).
	ID() int64
	// Done is closed when the session is lost (expired, lease gone) or closed.
	// It is never closed while the session is healthy.
	Done() <-chan struct{}
	// Close ends the session; its ephemeral nodes are removed by the server.
	// Safe to call more than once and concurrently with other methods.
	Close() error
}

// LateWatchCounter is an optional ability of a Session, found by type
// assertion on the innermost session (decorators expose it through
// Unwrap): a backend whose server keeps a watch armed after the watch's ctx
// ended (ZooKeeper: a watch cannot be removed) keeps receiving such
// abandoned watches until they fire or the session is closed, and counts
// their notifications here. The server sent and counted them; no caller
// waited for them, so they are not in any watch channel. A backend that
// cancels watches on the server (etcd) has none to count and need not
// implement it.
type LateWatchCounter interface {
	// LateWatchEvents returns the late notifications so far; it is final
	// once Close has returned. Safe to call concurrently with anything.
	LateWatchEvents() int64
}
