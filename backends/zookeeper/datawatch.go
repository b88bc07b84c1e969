package zookeeper

import (
	"context"
	"errors"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
)

var _ backends.DataWatcher = (*Session)(nil)

// WatchData follows path with a persistent watch (backends.DataWatcher):
// it arms one (addWatch, mode PERSISTENT, ZooKeeper 3.6+), then reads the
// node with a plain getData (no one-shot watch), and for each notification
// reads the node again, since ZooKeeper's notifications carry no data:
// one getData a change, besides the notification. A creation or data
// change is delivered with the data that read returns, EventCreated if the
// stream had the node absent, else EventDataChanged; a deletion as
// EventDeleted.
//
// Each delivered version is newer than the last (by its mzxid): when
// several changes land before the read of the first, the read returns the
// newest, which is delivered once, and the versions in between are
// skipped, never repeated or reordered. After a reconnect the client
// registers the watch again but the server does not replay what changed
// meanwhile: the node is read again and delivered once if its version
// moved (EventDeleted if it went). Notifications in ZooKeeper 3.8 carry
// no zxid either, so a node deleted and created again faster than a read
// may show its new data twice, before and after the EventDeleted.
//
// Against a 3.8 server, a one-shot watch (ExistsW) on the same path
// through the same connection (shared connections: Config.Conns) turns
// the server's persistent watch into a one-shot one (the server keeps one
// watch mode per connection and path); the client then adds it again and
// says so as after a reconnect, and the node is read again in the same
// way.
//
// The watch is removed (removeWatches) when ctx ends; the session's end
// delivers EventSessionLost, then the channel closes.
func (s *Session) WatchData(ctx context.Context, p string) ([]byte, bool, <-chan backends.Event, error) {
	zch, err := s.addPersistent(ctx, "watch-data", p, zk.AddWatchModePersistent)
	if err != nil {
		return nil, false, nil, err
	}
	f := &follower{s: s, p: p}
	data, st, err := f.get(ctx, false)
	switch {
	case errors.Is(err, backends.ErrNoNode):
	case err != nil:
		s.removePersistent(zch)
		return nil, false, nil, err
	default:
		f.exists, f.mzxid = true, st.Mzxid
	}
	out := make(chan backends.Event, 16)
	go f.follow(ctx, zch, out)
	return data, f.exists, out, nil
}

// addPersistent arms a persistent watch on p, retried as a read while the
// connection is down. A watch armed for a caller that already gave up is
// removed.
func (s *Session) addPersistent(ctx context.Context, op, p string, mode zk.AddWatchMode) (<-chan zk.Event, error) {
	var (
		mu     sync.Mutex
		gaveUp bool
		armed  <-chan zk.Event
	)
	ch, err := read(ctx, s, op, p, func() (<-chan zk.Event, error) {
		ch, err := s.l.conn.AddPersistentWatch(p, mode)
		if err == nil {
			mu.Lock()
			defer mu.Unlock()
			if gaveUp {
				go s.removePersistent(ch)
				return nil, err
			}
			armed = ch
		}
		return ch, err
	})
	if err != nil {
		mu.Lock()
		gaveUp = true
		if armed != nil {
			go s.removePersistent(armed)
		}
		mu.Unlock()
		return nil, err
	}
	return ch, nil
}

// removePersistent removes a persistent watch, best effort: a failed
// removal leaves the server's watch until the connection or session ends
// (the client no longer delivers its events, nor registers it again).
func (s *Session) removePersistent(ch <-chan zk.Event) {
	_ = s.l.conn.RemovePersistentWatch(ch)
}

// follower is the state of one WatchData stream: whether the node is
// there for the stream's reader and the mzxid of the version it has.
type follower struct {
	s      *Session
	p      string
	exists bool
	mzxid  int64
}

// get reads the node without a watch; witnessed says to count each
// getData sent in backends.Witness.WatchReads (the reads after the first,
// which the instrument counts as part of watch_data).
func (f *follower) get(ctx context.Context, witnessed bool) ([]byte, *zk.Stat, error) {
	type got struct {
		data []byte
		st   *zk.Stat
	}
	g, err := read(ctx, f.s, "watch-data", f.p, func() (got, error) {
		if w := f.s.l.witness; witnessed && w != nil {
			w.WatchReads.Add(1)
		}
		data, st, err := f.s.l.conn.Get(f.p)
		return got{data, st}, err
	})
	return g.data, g.st, err
}

// follow turns the persistent watch's notifications into the stream out
// until ctx or the session ends.
func (f *follower) follow(ctx context.Context, zch <-chan zk.Event, out chan<- backends.Event) {
	defer close(out)
	lost := func() {
		select {
		case out <- backends.Event{Type: backends.EventSessionLost, Path: f.p}:
		case <-ctx.Done():
		}
	}
	send := func(ev backends.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		case <-f.s.done:
			lost()
			return false
		}
	}
	for {
		var ev zk.Event
		var ok bool
		select {
		case ev, ok = <-zch:
		case <-ctx.Done():
			f.s.removePersistent(zch)
			return
		case <-f.s.done:
			f.s.removePersistent(zch)
			lost()
			return
		}
		if !ok || ev.Type == zk.EventNotWatching {
			// The connection dropped its watches: the session ended.
			lost()
			return
		}
		delivered := false
		switch ev.Type {
		case zk.EventNodeDeleted:
			if f.exists {
				delivered = true
				f.exists = false
				if !send(backends.Event{Type: backends.EventDeleted, Path: f.p}) {
					f.s.removePersistent(zch)
					return
				}
			}
		case zk.EventNodeCreated, zk.EventNodeDataChanged, zk.EventWatchRestored:
			e, deliver, err := f.refresh(ctx, ev.Type == zk.EventWatchRestored)
			if err != nil {
				f.s.removePersistent(zch)
				if errors.Is(err, backends.ErrSessionLost) {
					lost()
				}
				return
			}
			if deliver && !send(e) {
				f.s.removePersistent(zch)
				return
			}
			delivered = deliver || ev.Type == zk.EventWatchRestored // no notification
		}
		// NodeChildrenChanged: the node's children, not its data.
		if w := f.s.l.witness; !delivered && w != nil {
			w.SkippedWatchEvents.Add(1)
		}
	}
}

// refresh reads the node after a notification (or a reconnect, restored)
// and says what to deliver, if anything: a version newer than the
// stream's, or the node's absence after a reconnect. An absent node after
// a creation or change notification delivers nothing: its deletion's
// notification follows.
func (f *follower) refresh(ctx context.Context, restored bool) (backends.Event, bool, error) {
	data, st, err := f.get(ctx, true)
	if errors.Is(err, backends.ErrNoNode) {
		if restored && f.exists {
			f.exists = false
			return backends.Event{Type: backends.EventDeleted, Path: f.p}, true, nil
		}
		return backends.Event{}, false, nil
	}
	if err != nil {
		return backends.Event{}, false, err
	}
	if f.exists && st.Mzxid <= f.mzxid {
		return backends.Event{}, false, nil
	}
	typ := backends.EventDataChanged
	if !f.exists {
		typ = backends.EventCreated
	}
	f.exists, f.mzxid = true, st.Mzxid
	return backends.Event{Type: typ, Path: f.p, Data: data}, true, nil
}
