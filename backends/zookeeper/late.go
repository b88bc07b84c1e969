package zookeeper

import (
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// maxLateWatches bounds how many abandoned, not yet fired watches one
// session keeps track of. Past it a newly abandoned watch is not tracked:
// if it fires, the notification is not counted (untracked says how many).
const maxLateWatches = 1024

// minLateSweep is the pending-set size below which abandon never sweeps.
const minLateSweep = 64

// watchTable is the server-side table a watch sits in. ZooKeeper keeps at
// most one watcher per connection, path and table: exists (on a present or
// an absent node) and getData register in the data table, getChildren in
// the child table.
type watchTable uint8

const (
	dataTable watchTable = iota
	childTable
)

type watchKey struct {
	path  string
	table watchTable
}

// lateWatches counts late watch events: notifications that reach this
// session for watches whose ctx ended before they fired. go-zookeeper v1.0.4
// cannot remove a watch, so the server keeps it armed until it fires or the
// session ends, sends the notification, and counts it
// (zk_sum_node_*_watch_count); without this set nobody on the client would.
//
// It costs no goroutine: go-zookeeper delivers each watch on a channel with
// room for its one event and never blocks on it, so the abandoned channels
// are kept in a set and polled, without blocking, when the count is read
// (count), when a watch is armed on the same path and table (arm), when the
// set has doubled since the last sweep (abandon), and at Close (close).
//
// One server notification is counted once: abandoned watches that have not
// fired when a new watch on the same path and table is armed share that
// watch's one server-side watcher, so they are dropped, and the new watch
// counts the notification (a live watch through WatchEvents, an abandoned
// one here). Two cases stay approximate: a notification that arrives between
// the new watch's reply and arm (microseconds) is counted twice, and so is a
// deletion that fires both an abandoned exists watch and a live children
// watch on the same path (the server sends one notification for both).
type lateWatches struct {
	pending atomic.Int64 // watches in set: arm's lock-free fast path
	fired   atomic.Int64 // late events counted

	mu      sync.Mutex
	set     map[watchKey][]<-chan zk.Event
	sweepAt int
	closed  bool
}

// watchState is what polling a go-zookeeper watch channel found.
type watchState int

const (
	watchArmed watchState = iota // no event yet
	watchFired                   // a server notification
	watchEnded                   // EventNotWatching or closed: the session ended
)

// poll reads ch without blocking.
func poll(ch <-chan zk.Event) watchState {
	select {
	case ev, ok := <-ch:
		if !ok || ev.Type == zk.EventNotWatching {
			return watchEnded
		}
		return watchFired
	default:
		return watchArmed
	}
}

// abandon takes over the channel of a watch nobody waits for any more and
// keeps receiving it until it fires or the session closes.
func (w *lateWatches) abandon(k watchKey, ch <-chan zk.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.shadowLocked(k)
	switch poll(ch) {
	case watchFired:
		w.fired.Add(1)
		return
	case watchEnded:
		return
	}
	n := int(w.pending.Load())
	if n >= max(w.sweepAt, minLateSweep) {
		// Sweep when the set doubled since the last sweep, and at every
		// abandon while it is full.
		w.sweepLocked()
		n = int(w.pending.Load())
		w.sweepAt = min(2*n, maxLateWatches)
	}
	if n >= maxLateWatches {
		return
	}
	if w.set == nil {
		w.set = make(map[watchKey][]<-chan zk.Event)
	}
	w.set[k] = append(w.set[k], ch)
	w.pending.Add(1)
}

// arm is told that a new watch on k was armed: abandoned watches on k that
// have not fired share its server-side watcher and are dropped.
func (w *lateWatches) arm(k watchKey) {
	if w.pending.Load() == 0 {
		return
	}
	w.mu.Lock()
	w.shadowLocked(k)
	w.mu.Unlock()
}

// shadowLocked counts the abandoned watches on k that fired and drops all
// of them.
func (w *lateWatches) shadowLocked(k watchKey) {
	chs, ok := w.set[k]
	if !ok {
		return
	}
	for _, ch := range chs {
		if poll(ch) == watchFired {
			w.fired.Add(1)
		}
	}
	delete(w.set, k)
	w.pending.Add(-int64(len(chs)))
}

// sweepLocked counts and drops every abandoned watch that fired or ended.
func (w *lateWatches) sweepLocked() {
	for k, chs := range w.set {
		keep := chs[:0]
		for _, ch := range chs {
			switch poll(ch) {
			case watchFired:
				w.fired.Add(1)
			case watchArmed:
				keep = append(keep, ch)
			}
		}
		w.pending.Add(int64(len(keep) - len(chs)))
		clear(chs[len(keep):])
		if len(keep) == 0 {
			delete(w.set, k)
		} else {
			w.set[k] = keep
		}
	}
}

// count returns the late events so far, after collecting those that
// arrived since the last look.
func (w *lateWatches) count() int64 {
	if w.pending.Load() > 0 {
		w.mu.Lock()
		w.sweepLocked()
		w.mu.Unlock()
	}
	return w.fired.Load()
}

// close collects what arrived and stops tracking: the count is final.
func (w *lateWatches) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sweepLocked()
	w.closed = true
	w.set = nil
	w.pending.Store(0)
}

// watchHandoff makes sure that a watch armed by a request whose caller gave
// up (ctx ended while it was in flight) is abandoned, not lost: the request
// goroutine calls delivered with the watch's channel, the caller calls
// gaveUp if it returns without the result; whichever comes second hands the
// channel to the late set.
type watchHandoff struct {
	state atomic.Int32 // 0 in flight, 1 delivered, 2 caller gone
	ch    <-chan zk.Event
}

// delivered reports whether the caller will receive ch; if false, the
// caller is gone and ch must be abandoned.
func (h *watchHandoff) delivered(ch <-chan zk.Event) bool {
	h.ch = ch
	return h.state.CompareAndSwap(0, 1)
}

// gaveUp returns the channel of a watch the request armed after all, which
// the caller must abandon, or nil.
func (h *watchHandoff) gaveUp() <-chan zk.Event {
	if h.state.CompareAndSwap(0, 2) {
		return nil
	}
	return h.ch
}
