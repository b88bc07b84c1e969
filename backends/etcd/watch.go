package etcd

import (
	"context"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
)

// oneShot is one armed watch: it follows the revisions after the read it was
// armed with, delivers at most one Event on out and closes out.
type oneShot struct {
	s    *Session
	ctx  context.Context // the caller's: ends the watch without an event
	out  chan backends.Event
	path string // reported in the Event
	key  string
	pfx  bool  // watch every key with prefix key
	rev  int64 // revision of the read the watch follows
	// relevant says whether an event fires the watch, and as what.
	relevant func(ev *clientv3.Event) (backends.EventType, bool)
	// recheck re-reads after a compaction made the missed revisions
	// unreadable: it fires if the state differs from the first read, else
	// returns the revision of the new read to watch on from.
	recheck func(ctx context.Context) (backends.EventType, bool, int64, error)
}

func (w *oneShot) fire(t backends.EventType) { w.out <- backends.Event{Type: t, Path: w.path} }

// run watches from w.rev+1 until a relevant event, the end of w.ctx (close
// without event) or the loss of the session (EventSessionLost). A watch the
// server cancels (no leader: watches require one, so a member cut off from
// the quorum does not keep a watch silent forever) is armed again from the
// next unseen revision; a compacted one is settled by recheck.
func (w *oneShot) run() {
	defer close(w.out)
	base, cancel := context.WithCancel(clientv3.WithRequireLeader(w.ctx))
	defer cancel()
	defer context.AfterFunc(w.s.ctx, cancel)()

	next := w.rev + 1
	wait := 20 * time.Millisecond
	for {
		fired, compacted, n := w.follow(base, next)
		if fired {
			return
		}
		next = n
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
				continue
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-base.Done():
		}
		t.Stop()
		wait = min(2*wait, time.Second)
	}
}

// follow runs one Watch from revision next. It returns whether the watch
// fired, whether it ended on compaction, and the next revision not yet seen.
func (w *oneShot) follow(base context.Context, next int64) (fired, compacted bool, _ int64) {
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithRev(next)}
	if w.pfx {
		opts = append(opts, clientv3.WithPrefix())
	}
	for resp := range w.s.cli.Watch(ctx, w.key, opts...) {
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
		for _, ev := range resp.Events {
			if t, ok := w.relevant(ev); ok {
				w.fire(t)
				return true, false, next
			}
			next = ev.Kv.ModRevision + 1
		}
	}
	return false, false, next
}

// ExistsW reads path at revision R and watches it from R+1, so a change
// right after the read still fires. The watch fires once: EventCreated if
// the key appears, EventDeleted if it goes (lease expiry included),
// EventDataChanged if it is put again. Only this session wakes: one watcher
// on one key.
func (s *Session) ExistsW(ctx context.Context, p string) (bool, backends.Node, <-chan backends.Event, error) {
	if err := checkPath(p); err != nil {
		return false, backends.Node{}, nil, err
	}
	c, stop, err := s.call(ctx)
	if err != nil {
		return false, backends.Node{}, nil, err
	}
	resp, err := s.cli.Get(c, p)
	stop()
	if err != nil {
		return false, backends.Node{}, nil, s.fail(ctx, "exists", p, false, err)
	}
	var first *mvccpb.KeyValue
	var n backends.Node
	if len(resp.Kvs) > 0 {
		first, n = resp.Kvs[0], nodeOf(resp.Kvs[0])
	}
	w := &oneShot{s: s, ctx: ctx, out: make(chan backends.Event, 1), path: p, key: p, rev: resp.Header.Revision}
	w.relevant = func(ev *clientv3.Event) (backends.EventType, bool) {
		switch {
		case ev.Type == clientv3.EventTypeDelete:
			return backends.EventDeleted, true
		case ev.IsCreate():
			return backends.EventCreated, true
		}
		return backends.EventDataChanged, true
	}
	w.recheck = func(ctx context.Context) (backends.EventType, bool, int64, error) {
		r, err := s.cli.Get(ctx, p)
		if err != nil {
			return 0, false, 0, err
		}
		var now *mvccpb.KeyValue
		if len(r.Kvs) > 0 {
			now = r.Kvs[0]
		}
		switch {
		case first == nil && now != nil:
			return backends.EventCreated, true, 0, nil
		case first != nil && (now == nil || now.CreateRevision != first.CreateRevision):
			return backends.EventDeleted, true, 0, nil
		case first != nil && now.ModRevision != first.ModRevision:
			return backends.EventDataChanged, true, 0, nil
		}
		return 0, false, r.Header.Revision, nil
	}
	go w.run()
	return first != nil, n, w.out, nil
}

// ChildrenW lists parent's direct children at revision R (like Children)
// and watches the prefix parent+"/" from R+1. It fires once, with
// EventChildrenChanged, when a direct child is created or deleted — not when
// a child's value changes or a deeper key moves, as on ZooKeeper. Every
// session watching the same parent wakes on each such change: this is the
// herd of the naive recipes.
func (s *Session) ChildrenW(ctx context.Context, parent string) ([]backends.Node, <-chan backends.Event, error) {
	first, rev, err := s.children(ctx, parent)
	if err != nil {
		return nil, nil, err
	}
	w := &oneShot{s: s, ctx: ctx, out: make(chan backends.Event, 1), path: parent, key: parent + "/", pfx: true, rev: rev}
	w.relevant = func(ev *clientv3.Event) (backends.EventType, bool) {
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
	go w.run()
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
