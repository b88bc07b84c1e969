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
// or the session ends (go-zookeeper v1.0.4 cannot remove watches): it costs
// one notification, which nobody reads.
//
// Herd note: the server keeps one watch per connection and path, so each
// session watching p gets its own notification when p changes.
func (s *Session) ExistsW(ctx context.Context, p string) (bool, backends.Node, <-chan backends.Event, error) {
	type got struct {
		ok bool
		st *zk.Stat
		ch <-chan zk.Event
	}
	g, err := read(ctx, s, "exists-watch", p, func() (got, error) {
		ok, st, ch, err := s.l.conn.ExistsW(p)
		return got{ok, st, ch}, err
	})
	if err != nil {
		return false, backends.Node{}, nil, err
	}
	var n backends.Node
	if g.ok {
		n = node(p)
		n.CreateRev = g.st.Czxid
	}
	return g.ok, n, s.forward(ctx, p, g.ch), nil
}

// ChildrenW lists parent's children like Children and arms a one-shot
// watch on the list, in one request: it fires when a child is added or
// removed, or parent is deleted. Channel semantics as ExistsW.
func (s *Session) ChildrenW(ctx context.Context, parent string) ([]backends.Node, <-chan backends.Event, error) {
	type got struct {
		names []string
		ch    <-chan zk.Event
	}
	g, err := read(ctx, s, "children-watch", parent, func() (got, error) {
		names, _, ch, err := s.l.conn.ChildrenW(parent)
		return got{names, ch}, err
	})
	if err != nil {
		return nil, nil, err
	}
	return childNodes(parent, g.names), s.forward(ctx, parent, g.ch), nil
}

// forward relays go-zookeeper's one-shot watch channel to a backends one:
// one event then close, close alone when ctx ends, EventSessionLost when the
// session ends. Its goroutine ends with whichever comes first.
func (s *Session) forward(ctx context.Context, p string, in <-chan zk.Event) <-chan backends.Event {
	out := make(chan backends.Event, 1)
	go func() {
		defer close(out)
		select {
		case ev, ok := <-in:
			if !ok {
				return
			}
			out <- convert(ev, p)
		case <-s.done:
			out <- backends.Event{Type: backends.EventSessionLost, Path: p}
		case <-ctx.Done():
		}
	}()
	return out
}

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
