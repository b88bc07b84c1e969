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
	// Prev is the path the sibling made just before this node has, if the
	// backend can name it without a request of its own: Enqueue on
	// ZooKeeper, where sequence numbers under a parent count only its
	// creates, so the node before sequence k is k-1 while it lives; Enqueue
	// on etcd, whose create transaction also reads and moves the queue's
	// tail key. It may be gone already (or not be a queue node at all);
	// Predecessor answers for sure. Empty where the backend cannot name it.
	Prev string `json:"prev,omitempty"`
	// Listed is, on the Node that Predecessor or PredecessorOf returns
	// (the empty one with false included), the bytes of names the backend
	// received to answer: ZooKeeper's whole listing of the parent, etcd's
	// one or two keys. The instrument counts them as bytes received, which
	// it cannot see otherwise. Zero on every other Node.
	Listed int64 `json:"-"`
	// DataVersion is, on the Node that ExistsW returns, how many times
	// the node's data was written since it was made (ZooKeeper's data
	// version, etcd's key version less one): whether a write landed
	// before the watch was armed. etcd's Committer.ChildrenVersion sets it
	// on each child too (its range carries the versions; ZooKeeper's
	// listing has names only). Zero on every other Node.
	DataVersion int64 `json:"-"`
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
	// Data is the node's data after the change, non-nil (if empty, empty)
	// where the notification carries it: on etcd every watch event of a
	// put sends the new value (DataWatcher's, and a one-shot watch's on the
	// key it watches), and ZooKeeper's DataWatcher reads it for each event.
	// It is nil where it is not carried (ZooKeeper's one-shot watches,
	// deletions): callers that need it read it.
	Data []byte
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
	// instead of making a duplicate. One not found is made again, unless
	// ctx is marked NoResend: then the error matches ErrUnknownOutcome
	// (the node may have been made and removed by another session since).
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
	// Set writes data to the persistent node at path, whatever its version,
	// creating it if absent (on ZooKeeper its parent must exist): one write
	// when it exists. A watcher of path sees EventDataChanged (EventCreated
	// if it was absent). The node outlives the session; Delete removes it.
	// A connection loss mid-write returns ErrUnknownOutcome.
	Set(ctx context.Context, path string, data []byte) error
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

// Queues are the calls of a queue of waiters (a lock, a line of
// candidates) whose cost need not grow with the queue, each as cheap as the
// backend allows. Bytes are a figure of their own: a listing of N waiters
// costs O(N) bytes, so a recipe that lists on every wake-up pays O(N) per
// operation and O(N²) in a start-up burst.
//
// Every method may be called concurrently and blocks as Nodes' do.
type Queues interface {
	// Enqueue makes an ephemeral sequential node under parent with the
	// shortest name the backend allows, and tag (a short string without
	// '/', unique to the caller, e.g. one lock) kept where Tagged finds it:
	// on ZooKeeper the name is the bare 10-digit sequence number (14 bytes
	// a waiter in a listing) and the tag, with a per-call suffix, is the
	// node's data; on etcd the tag leads the key's name. Node.Prev names
	// the sibling just before it where the backend can (see Node): on both,
	// at no extra request. A parent's nodes must all be made by Enqueue.
	//
	// Like CreateSequential it recovers from a lost reply: when the outcome
	// is unknown it looks for the node by its per-call tag (ZooKeeper: one
	// listing and a read per child, on that failure path only) and returns
	// it, or creates again if there is none. ctx bounds the whole; an
	// error matching ErrUnknownOutcome may leave a node, found by Tagged.
	Enqueue(ctx context.Context, parent, tag string) (Node, error)
	// Predecessor returns the child of parent with the largest Seq below
	// me.Seq, and false if there is none (me is first). etcd answers with
	// one bounded range (create revision below mine, newest first, limit
	// 1: O(1) bytes); ZooKeeper has no such query and lists parent (O(N)
	// bytes, 14 a waiter with Enqueue's names). ErrNoNode if me is gone
	// (so a waiter whose node went never takes itself for the first).
	//
	// gone, when not empty, is the node me waited on (its predecessor
	// until now), which has just left. If it left by Dequeue, which only
	// a holder calls, nothing was before it nor is between it and me, and
	// a backend that can tell answers false without looking further: etcd
	// checks in the same request that gone's companion key stayed (see
	// Dequeue) and ranges only when it did not, so the answer costs the
	// server O(1) work, not a walk of the queue; ZooKeeper ignores gone. A
	// watcher of gone learns of a Dequeue from its event and need not ask:
	// this is for a waiter that found its predecessor gone before it could
	// watch it.
	Predecessor(ctx context.Context, parent string, me Node, gone string) (Node, bool, error)
	// PredecessorOf is Predecessor among the children of parent whose
	// names start with prefix (all of them for ""), without gone: how a
	// shared lock's reader finds the nearest writer before it. etcd answers
	// with one bounded range under parent/prefix that also checks me (O(1)
	// bytes); ZooKeeper lists parent, as for Predecessor. ErrNoNode if me
	// is gone.
	PredecessorOf(ctx context.Context, parent, prefix string, me Node) (Node, bool, error)
	// Tagged returns the children of parent that this session made with
	// Enqueue and tag, ordered by Seq: how a queue finds nodes it may have
	// left behind after a failure. etcd reads the tag's key range (O(own)
	// bytes); ZooKeeper lists parent and reads each child (O(N) requests),
	// which is why recipes call it only after a failure. An absent parent
	// has no children.
	Tagged(ctx context.Context, parent, tag string) ([]Node, error)
	// Dequeue deletes me, a node this session made with Enqueue, telling a
	// watcher of me that it left by Dequeue (not by Delete, nor with its
	// session) in the same write, so an ExistsW on me fires with
	// EventDataChanged on both backends: ZooKeeper deletes it in a multi
	// that first sets its data; etcd deletes its key and leaves the
	// companion key Enqueue made beside it, which Delete and the lease's
	// expiry remove with the node (etcd cannot mark and delete one key in
	// one write). On etcd this holds for a node enqueued before another,
	// the only one a queue's waiter watches: with none after it, its
	// companion goes in the same write, and a watcher would see
	// EventDeleted. One write, as Delete; ErrNoNode if me is gone,
	// ErrUnknownOutcome as for Delete. Enqueue'd nodes change only by
	// Dequeue and Delete: a Set on one is not what a watcher of it expects.
	Dequeue(ctx context.Context, me Node) error
}

// DataWatcher is an optional ability of a Session (found by type assertion;
// decorators pass it through): a watch on one path that stays armed, every
// change in order with the node's new data, the way a configuration
// client follows its config. etcd has it natively (one watch stream from a
// revision, each change with its value). ZooKeeper 3.6+ has persistent
// watches (the AddWatch request, opcode 106, mode PERSISTENT), which the
// go-zookeeper copy in third_party sends; its notifications carry no data,
// so the ZooKeeper session reads the node after each one and delivers
// what it reads: changes made faster than that read are delivered as one,
// the newest (versions skipped, never repeated or reordered).
type DataWatcher interface {
	// WatchData returns the node's data now (nil and exists false if
	// absent) and a channel that receives, in order, every change after
	// that read: EventDataChanged and EventCreated with Data, EventDeleted
	// without (on ZooKeeper, a burst of changes may arrive as its last
	// one, see above). A lost connection is not a change: the stream
	// resumes where it was, or (ZooKeeper) with the node's data read again
	// after the reconnect if it moved meanwhile. The channel is closed when ctx ends, and gets
	// EventSessionLost (then closes) when the session ends. It returns
	// once the server holds the watch, so the servers' watch count read
	// after it includes this one. The caller must keep reading until it
	// cancels ctx.
	WatchData(ctx context.Context, path string) (data []byte, exists bool, events <-chan Event, err error)
}

// ErrNoDataWatch: the session cannot keep a watch armed (see DataWatcher):
// a Session that does not implement DataWatcher, seen through a decorator
// (backends/instrument). Both zkbench backends implement it.
var ErrNoDataWatch = errors.New("backends: no persistent watch on this session")

// Session is one simulated client's session with the service: one zk.Conn
// session, or one etcd lease kept alive. Ephemeral nodes live as long as it.
type Session interface {
	Nodes
	Watches
	Queues
	// ID identifies the session (ZooKeeper session id, etcd lease id).
	ID() int64
	// Done is closed when the session is lost (expired, lease gone) or closed.
	// It is never closed while the session is healthy. A call made once
	// Done is closed, or with its ctx already ended, returns an error at
	// once and sends no request (the instrument counts no request for it).
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

// Updater is an optional ability of a Session, found by type assertion
// (backends/instrument forwards it): writing a node's data in place, as a
// revoker asks a lock holder to let go (the ZooKeeper recipes page's
// revocable shared lock: setData "unlock" on the holder's node). Both
// backends implement it; a decorator over a session without it returns an
// error matching errors.ErrUnsupported.
type Updater interface {
	// Update replaces path's data, whatever its version, and keeps its
	// owner: a ZooKeeper node stays ephemeral to the session that made it,
	// an etcd key keeps its lease (so the writer need not own it). A
	// watcher of path (ExistsW) sees EventDataChanged. ErrNoNode if path
	// is absent; a write whose reply is lost matches ErrUnknownOutcome.
	// Blocks as Nodes' methods do.
	Update(ctx context.Context, path string, data []byte) error
}

// Transactor is an optional ability of a Session, found by type assertion
// on the innermost session (instrument.Unwrap): several writes to
// persistent nodes in one atomic request, made only if one node still
// holds what the caller read — a unit of work that a crash cannot leave
// half done. etcd has it (one Txn); zkbench's ZooKeeper session does not
// offer it (ZooKeeper's multi could, with a version check on the guard).
type Transactor interface {
	// SetIf writes every w.Data to w.Path (persistent nodes, as Set does)
	// in one request if guard's data is want (want nil: guard is absent),
	// and reports whether it wrote. All or none is applied. A write whose
	// reply is lost matches ErrUnknownOutcome. Blocks as Nodes' methods do.
	SetIf(ctx context.Context, guard string, want []byte, writes []Write) (bool, error)
}

// Write is one node's new data in a Transactor's request.
type Write struct {
	Path string
	Data []byte
}

// Committer is an optional ability of a Session, found by type assertion
// (backends/instrument forwards it): several conditional writes in one
// atomic request, and a listing that says which version of its parent it
// saw, so that a writer can act only if nothing was added since. It is what
// a queue needs to hand an item straight to an idle consumer without a
// race (recipes/fair's HandoffQueue): ZooKeeper's multi with version
// checks, etcd's Txn with compares. Both backends implement it.
type Committer interface {
	// ChildrenVersion lists parent's children as Children does and returns
	// the version of parent's data at that listing: a number that Check
	// compares and that only Bump (on ZooKeeper, any write of parent's data)
	// moves. One read. On ZooKeeper the parent must exist (ErrNoNode); on
	// etcd an absent parent key has version 0, and each child's
	// DataVersion is set (on ZooKeeper it is zero: unknown).
	ChildrenVersion(ctx context.Context, parent string) (children []Node, version int64, err error)
	// Commit applies ops in one request, all or none: none if any op's
	// condition fails (ErrConflict), or if a create's parent is absent on
	// ZooKeeper (ErrNoNode). It returns the nodes that the OpCreate ops
	// made, in their order. A lost reply matches ErrUnknownOutcome (the
	// ops may all have applied): Commit is not sent again.
	Commit(ctx context.Context, ops ...Op) ([]Node, error)
}

// ErrConflict: a Commit's condition failed (a version moved, a node to
// delete or update was gone or changed); nothing was applied.
var ErrConflict = errors.New("backends: transaction condition failed")

// OpKind says what one Op of a Commit does.
type OpKind int

// Commit's ops.
const (
	// OpCheck holds if Path's data version is Version (as ChildrenVersion
	// returned it); it writes nothing.
	OpCheck OpKind = iota + 1
	// OpBump moves Path's version on by one and keeps its data (Path: a
	// persistent directory, made on ZooKeeper by EnsurePath; on etcd the
	// key is put empty, so made if absent).
	OpBump
	// OpCreate makes an ephemeral sequential node owned by this session
	// under Path (the parent) named Prefix plus a suffix unique under it,
	// holding Data. The Node it returns is ordered among its siblings by
	// Seq as CreateSequential's are (ZooKeeper's sequence number, etcd's
	// create revision).
	OpCreate
	// OpDelete removes Path, whoever owns it; it fails if Path is absent.
	OpDelete
	// OpSetFresh replaces the data of Path, whoever owns it (an ephemeral
	// node keeps its owner), if it exists and its data was never changed
	// since it was made: of several writers only the first succeeds. A
	// watcher of Path (ExistsW) sees EventDataChanged.
	OpSetFresh
	// OpDeleteFresh removes Path, whoever owns it, if it exists and its
	// data was never changed since it was made: a waiter withdrawing a
	// node that no writer has claimed (OpSetFresh) yet.
	OpDeleteFresh
)

// Op is one step of a Commit; build it with the functions below.
type Op struct {
	Kind    OpKind
	Path    string
	Prefix  string // OpCreate
	Data    []byte // OpCreate, OpSetFresh
	Version int64  // OpCheck
}

// Check is an OpCheck of path at version.
func Check(path string, version int64) Op { return Op{Kind: OpCheck, Path: path, Version: version} }

// Bump is an OpBump of path.
func Bump(path string) Op { return Op{Kind: OpBump, Path: path} }

// CreateIn is an OpCreate under parent.
func CreateIn(parent, prefix string, data []byte) Op {
	return Op{Kind: OpCreate, Path: parent, Prefix: prefix, Data: data}
}

// DeleteOp is an OpDelete of path.
func DeleteOp(path string) Op { return Op{Kind: OpDelete, Path: path} }

// DeleteFresh is an OpDeleteFresh of path.
func DeleteFresh(path string) Op { return Op{Kind: OpDeleteFresh, Path: path} }

// SetFresh is an OpSetFresh of path.
func SetFresh(path string, data []byte) Op { return Op{Kind: OpSetFresh, Path: path, Data: data} }
