package etcd

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
)

// errWatchClosed: the client closed a watch before the server confirmed it,
// with neither the caller's ctx nor the session done (the client is closing).
var errWatchClosed = errors.New("watch closed before the server confirmed it")

// oneShot is one armed watch: it delivers at most one Event on out and
// closes out.
//
// It is armed watch first, read second (arm): the watch is registered at the
// server's current revision, without WithRev, and only then is the node
// read, at revision G. Every change after the registration is on the watch
// and every change up to G is in the read, so forwarding only events above
// G misses nothing and reports nothing the caller already saw. The read is
// linearizable, so G is at least the registration revision even when another
// member serves it. Reading first and watching from G+1 would be gap-free
// too, but whenever anything was written between the read and the
// registration, G+1 is at or below the store's revision, and etcd (mvcc
// watchableStore.watch) then registers the watcher as unsynced: its events
// wait for syncWatchersLoop, every 100 ms, which also replays the backlog
// since G+1 to it. The cost of this order: events between the registration
// and the read are sent to the client and dropped there.
type oneShot struct {
	s    *Session
	ctx  context.Context // the caller's: ends the watch without an event
	out  chan backends.Event
	path string // reported in the Event
	key  string
	pfx  bool // watch every key with prefix key
	// end, when set, makes the watch a range, [key, end).
	end string
	// relevant says whether an event fires the watch, and as what; same
	// holds the reply's events of ev's revision (etcd never splits a
	// revision across replies), ev among them.
	relevant func(ev *clientv3.Event, same []*clientv3.Event) (backends.EventType, bool)
	// recheck re-reads after a compaction made the missed revisions
	// unreadable: it fires if the state differs from the first read, else
	// returns the revision of the new read to watch on from.
	recheck func(ctx context.Context) (backends.EventType, bool, int64, error)
}

func (w *oneShot) fire(t backends.EventType) { w.out <- backends.Event{Type: t, Path: w.path} }

// fireOn fires the watch as t for ev, with the value ev puts on the
// watched key (the event carries it: backends.Event.Data), non-nil even
// when empty; an event that deletes, or puts another key of the range,
// carries none.
func (w *oneShot) fireOn(t backends.EventType, ev *clientv3.Event) {
	out := backends.Event{Type: t, Path: w.path}
	if ev.Type == clientv3.EventTypePut && string(ev.Kv.Key) == w.path {
		out.Data = ev.Kv.Value
		if out.Data == nil {
			out.Data = []byte{}
		}
	}
	w.out <- out
}

// watch starts one clientv3 watch on w's key under ctx with opts.
func (w *oneShot) watch(ctx context.Context, opts ...clientv3.OpOption) clientv3.WatchChan {
	switch {
	case w.pfx:
		opts = append(opts, clientv3.WithPrefix())
	case w.end != "":
		opts = append(opts, clientv3.WithRange(w.end))
	}
	return w.s.cli.Watch(ctx, w.key, opts...)
}

// anchorKey is the key of every session's anchor watch: below Root, which
// zkbench may read, and never written.
const anchorKey = backends.Root + "/.watch-anchor"

// anchor keeps the session's gRPC watch stream open between its one-shot
// watches. clientv3 runs a client's watches whose contexts carry the same
// metadata on one stream, and shuts the stream down when its last watch
// ends; a lock waiter, which has one watch at a time, then opens a new
// stream for its next, and the member sets one up and tears it down at
// every acquisition (a Watch stream started and ended in
// grpc_server_handled_total). One idle watch on a key nobody writes, under
// the one-shot watches' metadata (WithRequireLeader), holds the stream from
// the session's first watch until it is closed or lost; a watch the server
// ended (no leader) is made again at the next arm. It delivers nothing but
// that end, which the check here reads, so it needs no goroutine of its own.
func (s *Session) anchor() {
	s.anchorMu.Lock()
	defer s.anchorMu.Unlock()
	for s.anchorCh != nil {
		select {
		case _, ok := <-s.anchorCh:
			if !ok {
				s.anchorCh = nil
			}
		default:
			return
		}
	}
	if s.ctx.Err() == nil {
		s.anchorCh = s.cli.Watch(clientv3.WithRequireLeader(s.ctx), anchorKey)
	}
}

// arm registers the watch from the server's current revision and waits, under
// w.ctx, for the server to confirm it; then it calls read, which reads the
// node and returns the revision it read at. On success it hands the watch to
// run and returns nil. Otherwise the watch is cancelled and arm returns
// read's error, or the failed registration's mapped by Session.fail (op names
// the call). One watch create and one read per call, as before.
func (w *oneShot) arm(op string, read func(ctx context.Context) (int64, error)) error {
	if w.s.ctx.Err() != nil {
		return backends.ErrSessionLost
	}
	w.s.anchor()
	// base ends with the caller's ctx or the session; so does every watch of
	// this oneShot, and clientv3 then cancels it on the server at once.
	base, cancel := context.WithCancel(clientv3.WithRequireLeader(w.ctx))
	stopLost := context.AfterFunc(w.s.ctx, cancel)
	end := func() { stopLost(); cancel() }
	wctx, wcancel := context.WithCancel(base)
	wch := w.watch(wctx, clientv3.WithCreatedNotify())
	var created clientv3.WatchResponse
	ok := false
	select {
	case created, ok = <-wch:
	case <-wctx.Done():
	}
	if !ok || !created.Created || created.Err() != nil {
		wcancel()
		end()
		err := created.Err()
		if err == nil {
			err = errWatchClosed
			if e := w.ctx.Err(); e != nil {
				err = e
			}
		}
		return w.s.fail(w.ctx, op, w.path, false, err)
	}
	g, err := read(w.ctx)
	if err != nil {
		wcancel()
		end()
		return err
	}
	go w.run(base, end, wch, wcancel, g+1)
	return nil
}

// run follows the armed watch wch (cancelled by wcancel) from revision next
// until a relevant event, the end of w.ctx (close without event) or the loss
// of the session (EventSessionLost); end releases base. A watch the server
// cancels (no leader: watches require one, so a member cut off from the
// quorum does not keep a watch silent forever) is armed again from the next
// unseen revision; a compacted one is settled by recheck.
func (w *oneShot) run(base context.Context, end func(), wch clientv3.WatchChan, wcancel context.CancelFunc, next int64) {
	defer close(w.out)
	defer end()

	wait := 20 * time.Millisecond
	for {
		fired, compacted, n := w.follow(wch, next)
		wcancel() // cancels the watch on the server now, not at the next event
		if fired {
			return
		}
		next = n
		rearm := true
		switch {
		case w.ctx.Err() != nil:
			return
		case w.s.ctx.Err() != nil:
			w.fire(backends.EventSessionLost)
			return
		case compacted:
			t, changed, rev, err := w.recheck(base)
			if err == nil && changed {
				w.fire(t)
				return
			}
			if err == nil {
				next = rev + 1
				rearm = false
			}
		}
		if rearm {
			wait = backOff(base, wait)
		}
		// A re-armed watch must start where the last one stopped; if
		// revisions were written meanwhile it is unsynced on the server and
		// served by the 100 ms resync, which only this rare path pays.
		var wctx context.Context
		wctx, wcancel = context.WithCancel(base)
		wch = w.watch(wctx, clientv3.WithRev(next))
	}
}

// follow reads wch, skipping events below revision next (the read reflects
// them). It returns whether the watch fired, whether it ended on compaction,
// and the next revision not yet seen.
func (w *oneShot) follow(wch clientv3.WatchChan, next int64) (fired, compacted bool, _ int64) {
	for resp := range wch {
		if resp.CompactRevision != 0 {
			return false, true, next
		}
		if resp.Err() != nil {
			return false, false, next
		}
		if resp.IsProgressNotify() {
			next = max(next, resp.Header.Revision+1)
			continue
		}
		for i, ev := range resp.Events {
			if ev.Kv.ModRevision < next {
				continue
			}
			if t, ok := w.relevant(ev, sameRevision(resp.Events, i)); ok {
				w.fireOn(t, ev)
				return true, false, next
			}
			next = ev.Kv.ModRevision + 1
		}
	}
	return false, false, next
}

// sameRevision returns the run of evs around evs[i] that shares its
// revision (one transaction's events, in the transaction's order).
func sameRevision(evs []*clientv3.Event, i int) []*clientv3.Event {
	rev := evs[i].Kv.ModRevision
	lo, hi := i, i+1
	for lo > 0 && evs[lo-1].Kv.ModRevision == rev {
		lo--
	}
	for hi < len(evs) && evs[hi].Kv.ModRevision == rev {
		hi++
	}
	return evs[lo:hi]
}

// ExistsW watches path and then reads it (see oneShot), so a change right
// after the read still fires and one before it does not. The watch fires
// once: EventCreated if the key appears, EventDeleted if it goes (lease
// expiry included), EventDataChanged if it is put again. Only this session
// wakes: one watcher on one key.
//
// A node Enqueue made has a companion key (see companionOf), and the watch
// and the read cover both, the range [path, path+"\x00\x00"): Dequeue
// deletes the node alone, every other removal (Delete, the lease's expiry)
// deletes both in one revision, so a deletion of the node without its
// companion fires EventDataChanged, as Dequeue's multi does on ZooKeeper,
// and the watcher learns that the holder released without a request.
// Events on the companion alone fire nothing. Cancelling ctx closes the
// channel without an event and cancels the watch on the server.
func (s *Session) ExistsW(ctx context.Context, p string) (bool, backends.Node, <-chan backends.Event, error) {
	if err := checkPath(p); err != nil {
		return false, backends.Node{}, nil, err
	}
	companion := companionOf(p)
	var first *mvccpb.KeyValue
	queued := false // p has a companion: it was made by Enqueue
	w := &oneShot{s: s, ctx: ctx, out: make(chan backends.Event, 1), path: p, key: p, end: companionEnd(p)}
	w.relevant = func(ev *clientv3.Event, same []*clientv3.Event) (backends.EventType, bool) {
		switch {
		case string(ev.Kv.Key) != p:
			return 0, false
		case ev.Type == clientv3.EventTypeDelete:
			if queued && !deletes(same, companion) {
				s.learnReleased(p)
				return backends.EventDataChanged, true // Dequeue
			}
			return backends.EventDeleted, true
		case ev.IsCreate():
			return backends.EventCreated, true
		}
		return backends.EventDataChanged, true
	}
	read := func(ctx context.Context) (now, comp *mvccpb.KeyValue, rev int64, err error) {
		r, err := s.cli.Get(ctx, p, clientv3.WithRange(companionEnd(p)))
		if err != nil {
			return nil, nil, 0, err
		}
		for _, kv := range r.Kvs {
			switch string(kv.Key) {
			case p:
				now = kv
			case companion:
				comp = kv
			}
		}
		return now, comp, r.Header.Revision, nil
	}
	w.recheck = func(ctx context.Context) (backends.EventType, bool, int64, error) {
		now, comp, rev, err := read(ctx)
		if err != nil {
			return 0, false, 0, err
		}
		switch {
		case first == nil && now != nil:
			return backends.EventCreated, true, 0, nil
		case first != nil && now == nil && queued && comp != nil && comp.CreateRevision == first.CreateRevision:
			s.learnReleased(p)
			return backends.EventDataChanged, true, 0, nil // Dequeue: the companion stayed
		case first != nil && (now == nil || now.CreateRevision != first.CreateRevision):
			return backends.EventDeleted, true, 0, nil
		case first != nil && now.ModRevision != first.ModRevision:
			return backends.EventDataChanged, true, 0, nil
		}
		return 0, false, rev, nil
	}
	err := w.arm("exists", func(ctx context.Context) (int64, error) {
		c, stop, err := s.call(ctx)
		if err != nil {
			return 0, err
		}
		now, comp, rev, err := read(c)
		stop()
		if err != nil {
			return 0, s.fail(ctx, "exists", p, false, err)
		}
		first, queued = now, now != nil && comp != nil && comp.CreateRevision == now.CreateRevision
		return rev, nil
	})
	if err != nil {
		return false, backends.Node{}, nil, err
	}
	if first == nil {
		return false, backends.Node{}, w.out, nil
	}
	n := nodeOf(first)
	n.DataVersion = first.Version - 1
	return true, n, w.out, nil
}

// deletes reports whether evs delete key.
func deletes(evs []*clientv3.Event, key string) bool {
	for _, ev := range evs {
		if ev.Type == clientv3.EventTypeDelete && string(ev.Kv.Key) == key {
			return true
		}
	}
	return false
}

// ChildrenW watches the prefix parent+"/" and then lists parent's direct
// children (like Children; see oneShot). It fires once, with
// EventChildrenChanged, when a direct child is created or deleted after the
// listing — not when a child's value changes or a deeper key moves, as on
// ZooKeeper. Every session watching the same parent wakes on each such
// change: this is the herd of the naive recipes. Cancelling ctx closes the
// channel without an event and cancels the watch on the server.
func (s *Session) ChildrenW(ctx context.Context, parent string) ([]backends.Node, <-chan backends.Event, error) {
	if err := checkPath(parent); err != nil {
		return nil, nil, err
	}
	var first []backends.Node
	w := &oneShot{s: s, ctx: ctx, out: make(chan backends.Event, 1), path: parent, key: parent + "/", pfx: true}
	w.relevant = func(ev *clientv3.Event, _ []*clientv3.Event) (backends.EventType, bool) {
		if !isDirectChild(parent, string(ev.Kv.Key)) {
			return 0, false
		}
		return backends.EventChildrenChanged, ev.Type == clientv3.EventTypeDelete || ev.IsCreate()
	}
	w.recheck = func(ctx context.Context) (backends.EventType, bool, int64, error) {
		now, rev, err := s.children(ctx, parent)
		if err != nil {
			return 0, false, 0, err
		}
		if !sameNodes(first, now) {
			return backends.EventChildrenChanged, true, 0, nil
		}
		return 0, false, rev, nil
	}
	err := w.arm("children", func(ctx context.Context) (int64, error) {
		nodes, rev, err := s.children(ctx, parent)
		first = nodes
		return rev, err
	})
	if err != nil {
		return nil, nil, err
	}
	return first, w.out, nil
}

func sameNodes(a, b []backends.Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Path != b[i].Path || a[i].CreateRev != b[i].CreateRev {
			return false
		}
	}
	return true
}
