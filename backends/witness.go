package backends

import "sync/atomic"

// Witness counts server work a backend's calls cause beyond the requests
// the instrument counts, each where the client can see it, so that a
// difference between the clients' and the servers' counts of the same
// thing is predicted from the clients' side instead of excused
// (figures.Known's models, docs/figures.md).
type Witness struct {
	// PathCreates are the creates EnsurePath sent, one a missing path
	// component and existing ancestors included, retries included
	// (ZooKeeper): the server counts each as a write; the instrument
	// counts the call once, as ensure_path.
	PathCreates int64 `json:"path_creates,omitempty"`
	// PathsCreated are those of PathCreates that made a node: ZooKeeper's
	// per-namespace count has only writes that changed its tree.
	PathsCreated int64 `json:"paths_created,omitempty"`
	// ReadTxns are read-only transactions (etcd: a Predecessor told which
	// node went, a PredecessorOf): the server's gRPC counters count every
	// Txn as a write.
	ReadTxns int64 `json:"read_txns,omitempty"`
	// SessionWrites are the writes opening and ending sessions make: a
	// ZooKeeper session's create and close, an etcd lease's grant and
	// revoke.
	SessionWrites int64 `json:"session_writes,omitempty"`
	// WireWatchEvents are the watch events that reached the client on the
	// wire (etcd): those the backend dropped (before the read it made
	// after arming, of other keys under a watched prefix, after the one
	// that fired) and those for watches being cancelled, which clientv3
	// drops, included. The server counts every one it sent.
	WireWatchEvents int64 `json:"wire_watch_events,omitempty"`
	// WatchStreams are the watch streams the clients opened (etcd: a
	// clientv3 client closes its stream when its last watch ends, and
	// opens one for the next). The server counts the events still queued
	// for a stream when it closes, which never reach the client.
	WatchStreams int64 `json:"watch_streams,omitempty"`
	// RefusedWrites are the writes of calls the server refused without
	// changing anything (ZooKeeper: a create that found its node, as every
	// waiter of the naive lock's does; a delete, update or dequeue that
	// found none, two writes for a dequeue's multi): the instrument counts
	// every call, ZooKeeper's per-namespace count only the writes that
	// changed its tree.
	RefusedWrites int64 `json:"refused_writes,omitempty"`
	// EndedNodes are the ephemeral nodes a ZooKeeper session (not a
	// shared view) still had when it ended (closed, expired, crashed): the
	// server deletes them as it ends the session, and its per-namespace
	// count counts each deletion.
	EndedNodes int64 `json:"ended_nodes,omitempty"`
	// WatchReads are the reads a ZooKeeper DataWatcher makes after each
	// notification and each reconnect (getData: the notifications of a
	// persistent watch carry no data): the server counts each as a read;
	// the instrument counts the watch once, as watch_data.
	WatchReads int64 `json:"watch_reads,omitempty"`
	// SkippedWatchEvents are the notifications a ZooKeeper DataWatcher
	// received and did not deliver: its read found a version it had
	// delivered already (changes faster than a read arrive as one), or
	// no node (its deletion's notification follows), or they were of
	// another kind (the node's children). The server counts each.
	SkippedWatchEvents int64 `json:"skipped_watch_events,omitempty"`
	// RecursiveDeleteEvents are the notifications of a deletion that
	// reached the client through a ZooKeeper persistent-recursive watch.
	// ZooKeeper 3.6 to 3.8 holds such a watch in both its data and its
	// child watch tables; a deletion triggers both, the child table's
	// trigger finds the watch again and suppresses the second
	// notification, but zk_sum_node_deleted_watch_count counts both (from
	// 3.9.0, ZOOKEEPER-4466, the child table holds no recursive watch).
	RecursiveDeleteEvents int64 `json:"recursive_delete_events,omitempty"`
	// MultiWrites are the changes each applied ZooKeeper multi
	// (backends.Committer's Commit) made beyond one: ZooKeeper's
	// per-namespace count has one write for each create, delete and
	// setData of an applied multi, the instrument one commit.
	MultiWrites int64 `json:"multi_writes,omitempty"`
}

// Sub is w - before.
func (w Witness) Sub(before Witness) Witness {
	return w.combine(before, func(a, b int64) int64 { return a - b })
}

// Add is w + o.
func (w Witness) Add(o Witness) Witness {
	return w.combine(o, func(a, b int64) int64 { return a + b })
}

// Mid is halfway between w and o, each count (rounded down): the witness
// at about the instant between two readings.
func (w Witness) Mid(o Witness) Witness {
	return w.combine(o, func(a, b int64) int64 { return a + (b-a)/2 })
}

func (w Witness) combine(o Witness, f func(a, b int64) int64) Witness {
	return Witness{
		PathCreates: f(w.PathCreates, o.PathCreates), PathsCreated: f(w.PathsCreated, o.PathsCreated),
		ReadTxns: f(w.ReadTxns, o.ReadTxns), SessionWrites: f(w.SessionWrites, o.SessionWrites),
		WireWatchEvents: f(w.WireWatchEvents, o.WireWatchEvents), WatchStreams: f(w.WatchStreams, o.WatchStreams),
		RefusedWrites: f(w.RefusedWrites, o.RefusedWrites),
		WatchReads:    f(w.WatchReads, o.WatchReads), SkippedWatchEvents: f(w.SkippedWatchEvents, o.SkippedWatchEvents),
		RecursiveDeleteEvents: f(w.RecursiveDeleteEvents, o.RecursiveDeleteEvents),
		MultiWrites:           f(w.MultiWrites, o.MultiWrites),
		EndedNodes:            f(w.EndedNodes, o.EndedNodes),
	}
}

// Witnesser is a Backend that counts its Witness over every session it
// opened. Found by type assertion; safe for concurrent use.
type Witnesser interface {
	Witness() Witness
}

// WitnessCounters are a backend's Witness counters.
type WitnessCounters struct {
	PathCreates, PathsCreated, ReadTxns, SessionWrites, WireWatchEvents, WatchStreams, RefusedWrites atomic.Int64
	WatchReads, SkippedWatchEvents, MultiWrites, EndedNodes                                          atomic.Int64
}

// Witness reads the counters.
func (c *WitnessCounters) Witness() Witness {
	return Witness{PathCreates: c.PathCreates.Load(), PathsCreated: c.PathsCreated.Load(), ReadTxns: c.ReadTxns.Load(),
		SessionWrites: c.SessionWrites.Load(), WireWatchEvents: c.WireWatchEvents.Load(), WatchStreams: c.WatchStreams.Load(),
		RefusedWrites: c.RefusedWrites.Load(), WatchReads: c.WatchReads.Load(), SkippedWatchEvents: c.SkippedWatchEvents.Load(),
		MultiWrites: c.MultiWrites.Load(), EndedNodes: c.EndedNodes.Load()}
}
