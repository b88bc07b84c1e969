package zookeeper

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
)

// ExistsW reports whether p exists and arms a one-shot watch on it, read and
// watch in one request (ZooKeeper's exists with watch=true): it fires on
// p's creation if absent, on its deletion or data change if present.
//
// The channel gets at most one event and is then closed; it is closed
// without an event when ctx ends, and gets EventSessionLost when the session
// ends. Server side, a watch that ctx abandoned stays armed until it fires
// or the session ends (go-zookeeper v1.0.4 cannot remove watches), and its
// notification still reaches this process: the session counts it in
// LateWatchEvents. So does a watch the server armed for a request whose ctx
// ended before the reply.
//
// Herd note: the server keeps one watch per connection and path, so each
// session watching p gets its own notification when p changes.
func (s *Session) ExistsW(ctx context.Context, p string) (bool, backends.Node, <-chan backends.Event, error) {
	type found struct {
		ok bool
		st *zk.Stat
	}
	f, ch, err := readWatched(ctx, s, "exists-watch", watchKey{p, dataTable}, func() (found, <-chan zk.Event, error) {
		ok, st, ch, err := s.l.conn.ExistsW(p)
		return found{ok, st}, ch, err
	})
	if err != nil {
		return false, backends.Node{}, nil, err
	}
	var n backends.Node
	if f.ok {
		n = node(p)
		n.CreateRev = f.st.Czxid
		n.DataVersion = int64(f.st.Version)
	}
	return f.ok, n, ch, nil
}

// ChildrenW lists parent's children like Children and arms a one-shot
// watch on the list, in one request: it fires when a child is added or
// removed, or parent is deleted. Channel semantics and late events as
// ExistsW.
func (s *Session) ChildrenW(ctx context.Context, parent string) ([]backends.Node, <-chan backends.Event, error) {
	names, ch, err := readWatched(ctx, s, "children-watch", watchKey{parent, childTable}, func() ([]string, <-chan zk.Event, error) {
		names, _, ch, err := s.l.conn.ChildrenW(parent)
		return names, ch, err
	})
	if err != nil {
		return nil, nil, err
	}
	return childNodes(parent, names), ch, nil
}

// readWatched runs call, a read that arms the watch k, as read does (op
// names it in errors), and returns what it read and the watch's channel
// relayed by forward. A watch armed for a call whose caller gets an error
// is abandoned to the late set.
func readWatched[T any](ctx context.Context, s *Session, op string, k watchKey, call func() (T, <-chan zk.Event, error)) (T, <-chan backends.Event, error) {
	type got struct {
		v  T
		ch <-chan zk.Event
	}
	var h watchHandoff
	g, err := read(ctx, s, op, k.path, func() (got, error) {
		v, ch, err := call()
		s.armed(k, ch, &h)
		return got{v, ch}, err
	})
	if err != nil {
		s.gaveUp(k, &h)
		return g.v, nil, err
	}
	return g.v, s.forward(ctx, k, g.ch), nil
}

// armed runs on the request's goroutine when go-zookeeper returns the
// watch channel ch (nil if no watch was armed): it tells the late set,
// and abandons ch at once if the caller already gave up.
func (s *Session) armed(k watchKey, ch <-chan zk.Event, h *watchHandoff) {
	if ch == nil {
		return
	}
	s.late.arm(k)
	if !h.delivered(ch) {
		s.late.abandon(k, ch)
	}
}

// gaveUp abandons the watch a request armed although its caller returned
// an error (ctx or the session ended while the request was in flight).
func (s *Session) gaveUp(k watchKey, h *watchHandoff) {
	if ch := h.gaveUp(); ch != nil {
		s.late.abandon(k, ch)
	}
}

// forward relays go-zookeeper's one-shot watch channel to a backends one:
// one event then close, close alone when ctx ends, EventSessionLost when the
// session ends. Its goroutine ends with whichever comes first; when ctx
// ends first, the late set takes the watch over.
func (s *Session) forward(ctx context.Context, k watchKey, in <-chan zk.Event) <-chan backends.Event {
	out := make(chan backends.Event, 1)
	go func() {
		defer close(out)
		select {
		case ev, ok := <-in:
			if !ok {
				return
			}
			out <- convert(ev, k.path)
		case <-s.done:
			out <- backends.Event{Type: backends.EventSessionLost, Path: k.path}
		case <-ctx.Done():
			s.late.abandon(k, in)
		}
	}()
	return out
}

// LateWatchEvents counts the watch notifications that reached this session
// for watches whose ctx had ended (backends.LateWatchCounter): the server
// sent and counted them, nobody waited for them. Final once Close returns.
func (s *Session) LateWatchEvents() int64 { return s.late.count() }

// convert maps a go-zookeeper watch event. EventNotWatching comes when
// go-zookeeper drops its watches: on session expiry or Close.
func convert(ev zk.Event, p string) backends.Event {
	out := backends.Event{Path: p}
	switch ev.Type {
	case zk.EventNodeCreated:
		out.Type = backends.EventCreated
	case zk.EventNodeDeleted:
		out.Type = backends.EventDeleted
	case zk.EventNodeDataChanged:
		out.Type = backends.EventDataChanged
	case zk.EventNodeChildrenChanged:
		out.Type = backends.EventChildrenChanged
	default:
		out.Type = backends.EventSessionLost
	}
	return out
}
