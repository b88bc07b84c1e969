package zookeeper_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/faults/proxy"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// The persistent watches of the go-zookeeper copy (third_party, persistent.go)
// on real ZooKeeper 3.8 servers, standalone and a 3-server ensemble.

// zkEvent is what a test expects of a zk.Event.
type zkEvent struct {
	typ  zk.EventType
	path string
}

// nextZK returns the next event of ch, failing after 10 s or on a closed ch.
func nextZK(t *testing.T, ch <-chan zk.Event, what string) zk.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed", what)
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no event within 10s", what)
	}
	return zk.Event{}
}

// expectZK reads len(want) events of ch and compares them in order.
func expectZK(t *testing.T, ch <-chan zk.Event, what string, want ...zkEvent) {
	t.Helper()
	for i, w := range want {
		ev := nextZK(t, ch, what)
		if ev.Type != w.typ || ev.Path != w.path {
			t.Fatalf("%s: event %d is %v %s, want %v %s", what, i, ev.Type, ev.Path, w.typ, w.path)
		}
	}
}

// quietZK fails if ch delivers anything within 300 ms.
func quietZK(t *testing.T, ch <-chan zk.Event, what string) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("%s: unexpected %v %s", what, ev.Type, ev.Path)
		}
		t.Fatalf("%s: channel closed", what)
	case <-time.After(300 * time.Millisecond):
	}
}

// closedZK fails unless ch is closed with nothing left in it.
func closedZK(t *testing.T, ch <-chan zk.Event, what string) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("%s: got %v %s, want the channel closed", what, ev.Type, ev.Path)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: channel not closed", what)
	}
}

// zkTopologies runs f on the standalone server and on the ensemble.
func zkTopologies(t *testing.T, f func(t *testing.T, endpoints []string)) {
	t.Run("standalone", func(t *testing.T) { f(t, testcluster.ZooKeeperEndpoints(t)) })
	t.Run("ensemble", func(t *testing.T) { f(t, testcluster.ZooKeeperEnsembleEndpoints(t)) })
}

// conn opens a session on endpoints and returns it with its zk.Conn.
func conn(t *testing.T, endpoints []string) (*zookeeper.Session, *zk.Conn) {
	t.Helper()
	s := newSession(t, open(t, zookeeper.Config{Endpoints: endpoints, SessionTimeout: 10 * time.Second}))
	return s, s.Conn()
}

func mustZK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// proxyTo is a proxy in front of endpoint, closed when t ends.
func proxyTo(t *testing.T, endpoint string) *proxy.Proxy {
	t.Helper()
	px, err := proxy.New(context.Background(), endpoint)
	mustZK(t, err)
	t.Cleanup(func() { px.Close() })
	return px
}

// watchedNode creates ns/node through c, arms through wc a persistent
// watch on it and a recursive one on ns, and checks that both see a first
// change: the watches a reconnect test then takes across its reconnect.
func watchedNode(t *testing.T, c, wc *zk.Conn, ns string) (p string, pch, rch <-chan zk.Event) {
	t.Helper()
	p = ns + "/node"
	_, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
	mustZK(t, err)
	// On an ensemble the writer and the watcher may be on different
	// members: the watcher's member applies the create before the watches
	// are added (sync), or a lagging follower would report it to them.
	_, err = wc.Sync(p)
	mustZK(t, err)
	pch, err = wc.AddPersistentWatch(p, zk.AddWatchModePersistent)
	mustZK(t, err)
	rch, err = wc.AddPersistentWatch(ns, zk.AddWatchModePersistentRecursive)
	mustZK(t, err)
	_, err = c.Set(p, []byte("before"), -1)
	mustZK(t, err)
	expectZK(t, pch, "persistent before the reconnect", zkEvent{zk.EventNodeDataChanged, p})
	expectZK(t, rch, "recursive before the reconnect", zkEvent{zk.EventNodeDataChanged, p})
	return p, pch, rch
}

// TestPersistentWatch: a PERSISTENT watch gets its node's creation, data
// changes, children changes and deletion, each once and in order, stays
// armed across them, and delivers nothing once removed.
func TestPersistentWatch(t *testing.T) {
	zkTopologies(t, func(t *testing.T, endpoints []string) {
		ws, wc := conn(t, endpoints)
		ns := namespace(t, open(t, zookeeper.Config{Endpoints: endpoints}), ws)
		// The writer is on the watcher's server, so that its writes are
		// applied there when they return.
		_, c := conn(t, []string{wc.Server()})
		p := ns + "/node"
		ch, err := wc.AddPersistentWatch(p, zk.AddWatchModePersistent)
		mustZK(t, err)

		_, err = c.Create(p, []byte("a"), 0, zk.WorldACL(zk.PermAll))
		mustZK(t, err)
		for i := range 3 {
			_, err = c.Set(p, fmt.Appendf(nil, "v%d", i), -1)
			mustZK(t, err)
		}
		_, err = c.Create(p+"/child", nil, 0, zk.WorldACL(zk.PermAll))
		mustZK(t, err)
		_, err = c.Set(p+"/child", []byte("x"), -1) // not p: no event
		mustZK(t, err)
		mustZK(t, c.Delete(p+"/child", -1))
		mustZK(t, c.Delete(p, -1))
		_, err = c.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		mustZK(t, err)
		expectZK(t, ch, "persistent watch",
			zkEvent{zk.EventNodeCreated, p},
			zkEvent{zk.EventNodeDataChanged, p},
			zkEvent{zk.EventNodeDataChanged, p},
			zkEvent{zk.EventNodeDataChanged, p},
			zkEvent{zk.EventNodeChildrenChanged, p},
			zkEvent{zk.EventNodeChildrenChanged, p},
			zkEvent{zk.EventNodeDeleted, p},
			zkEvent{zk.EventNodeCreated, p},
		)
		quietZK(t, ch, "persistent watch after the last change")

		mustZK(t, wc.RemovePersistentWatch(ch))
		closedZK(t, ch, "persistent watch after its removal")
		_, err = c.Set(p, []byte("after"), -1)
		mustZK(t, err)
		mustZK(t, c.Delete(p, -1))
		// The server no longer sends them either: a one-shot watch armed
		// now on a sibling fires alone, and the connection is healthy.
		_, _, one, err := wc.ExistsW(ns + "/sibling")
		mustZK(t, err)
		_, err = c.Create(ns+"/sibling", nil, 0, zk.WorldACL(zk.PermAll))
		mustZK(t, err)
		if ev := nextZK(t, one, "one-shot watch next to a removed persistent one"); ev.Type != zk.EventNodeCreated {
			t.Fatalf("one-shot watch got %v", ev.Type)
		}
		mustZK(t, c.Delete(ns+"/sibling", -1))
		if err := wc.RemovePersistentWatch(ch); err == nil {
			t.Fatal("a second removal of the same watch succeeded")
		}
	})
}

// TestPersistentRecursiveWatch: a PERSISTENT_RECURSIVE watch gets the
// creations, data changes and deletions of its node and every descendant,
// each once and in order, and no NodeChildrenChanged; other paths give
// nothing; a one-shot watch on a watched node still fires once besides;
// nothing after removal.
func TestPersistentRecursiveWatch(t *testing.T) {
	zkTopologies(t, func(t *testing.T, endpoints []string) {
		ws, wc := conn(t, endpoints)
		ns := namespace(t, open(t, zookeeper.Config{Endpoints: endpoints}), ws)
		_, c := conn(t, []string{wc.Server()})
		root := ns + "/tree"
		ch, err := wc.AddPersistentWatch(root, zk.AddWatchModePersistentRecursive)
		mustZK(t, err)
		acl := zk.WorldACL(zk.PermAll)

		for _, p := range []string{root, root + "/a", root + "/a/b", ns + "/treehouse"} {
			_, err = c.Create(p, nil, 0, acl)
			mustZK(t, err)
		}
		// A one-shot watch on a watched path: both get the one notification.
		_, _, one, err := wc.GetW(root + "/a/b")
		mustZK(t, err)
		_, err = c.Set(root+"/a/b", []byte("1"), -1)
		mustZK(t, err)
		_, err = c.Set(ns+"/treehouse", []byte("1"), -1) // a prefix, not a descendant
		mustZK(t, err)
		_, err = c.Set(root, []byte("1"), -1)
		mustZK(t, err)
		mustZK(t, c.Delete(root+"/a/b", -1))
		mustZK(t, c.Delete(root+"/a", -1))
		expectZK(t, ch, "recursive watch",
			zkEvent{zk.EventNodeCreated, root},
			zkEvent{zk.EventNodeCreated, root + "/a"},
			zkEvent{zk.EventNodeCreated, root + "/a/b"},
			zkEvent{zk.EventNodeDataChanged, root + "/a/b"},
			zkEvent{zk.EventNodeDataChanged, root},
			zkEvent{zk.EventNodeDeleted, root + "/a/b"},
			zkEvent{zk.EventNodeDeleted, root + "/a"},
		)
		quietZK(t, ch, "recursive watch after the last change")
		if ev := nextZK(t, one, "one-shot watch beside the recursive one"); ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("one-shot watch got %v, want data changed", ev.Type)
		}
		closedZK(t, one, "one-shot watch after its event")

		mustZK(t, wc.RemovePersistentWatch(ch))
		closedZK(t, ch, "recursive watch after its removal")
		_, err = c.Create(root+"/late", nil, 0, acl)
		mustZK(t, err)
		for _, p := range []string{root + "/late", root, ns + "/treehouse"} {
			mustZK(t, c.Delete(p, -1))
		}
	})
}

// TestPersistentWatchSurvivesReconnect: both modes stay armed when the
// watcher's connection is dropped while its session lives: the client
// registers them again (setWatches2) and says so with
// EventWatchRestored; a change made while it was away is not replayed
// (ZooKeeper re-adds persistent watches without one); later changes are
// delivered once each. The watcher's connection goes through a proxy in
// front of one server (the standalone one, or the ensemble's first).
func TestPersistentWatchSurvivesReconnect(t *testing.T) {
	zkTopologies(t, func(t *testing.T, endpoints []string) {
		px := proxyTo(t, endpoints[0])
		ws, wc := conn(t, []string{px.Addr()})
		ns := namespace(t, open(t, zookeeper.Config{Endpoints: endpoints}), ws)
		_, c := conn(t, endpoints[:1])
		acl := zk.WorldACL(zk.PermAll)
		p, pch, rch := watchedNode(t, c, wc, ns)
		id := wc.SessionID()

		// Hold the watcher's traffic, change p (its notification is held
		// in the proxy), then drop the connection with it: the client
		// reconnects through the proxy, which forwards again on Restore.
		px.Cut()
		_, err := c.Set(p, []byte("away"), -1)
		mustZK(t, err)
		if px.ResetAll() == 0 {
			t.Fatal("no connection to drop")
		}
		px.Restore()
		expectZK(t, pch, "persistent after the reconnect", zkEvent{zk.EventWatchRestored, p})
		expectZK(t, rch, "recursive after the reconnect", zkEvent{zk.EventWatchRestored, ns})
		if wc.SessionID() != id {
			t.Fatalf("session changed from %x to %x", id, wc.SessionID())
		}

		_, err = c.Set(p, []byte("after"), -1)
		mustZK(t, err)
		_, err = c.Create(ns+"/new", nil, 0, acl)
		mustZK(t, err)
		mustZK(t, c.Delete(p, -1))
		expectZK(t, pch, "persistent after the reconnect",
			zkEvent{zk.EventNodeDataChanged, p}, zkEvent{zk.EventNodeDeleted, p})
		expectZK(t, rch, "recursive after the reconnect",
			zkEvent{zk.EventNodeDataChanged, p}, zkEvent{zk.EventNodeCreated, ns + "/new"},
			zkEvent{zk.EventNodeDeleted, p})
		quietZK(t, pch, "persistent after the last change")
		quietZK(t, rch, "recursive after the last change")
		mustZK(t, c.Delete(ns+"/new", -1))
		expectZK(t, rch, "recursive", zkEvent{zk.EventNodeDeleted, ns + "/new"})
		mustZK(t, wc.RemovePersistentWatch(pch))
		mustZK(t, wc.RemovePersistentWatch(rch))
	})
}

// TestPersistentWatchMovesServer: when the watcher's server is gone for
// good, the client reconnects to another member of the ensemble, which
// re-adds the watches from setWatches2 (a server that never held them);
// later changes are delivered once each. Each member is reached through a
// proxy of its own, so that the one carrying the watcher's connection can
// be cut for the rest of the test.
func TestPersistentWatchMovesServer(t *testing.T) {
	endpoints := testcluster.ZooKeeperEnsembleEndpoints(t)
	var pxs []*proxy.Proxy
	var addrs []string
	for _, ep := range endpoints {
		px := proxyTo(t, ep)
		pxs, addrs = append(pxs, px), append(addrs, px.Addr())
	}
	ws, wc := conn(t, addrs)
	ns := namespace(t, open(t, zookeeper.Config{Endpoints: endpoints}), ws)
	_, c := conn(t, endpoints)
	p, pch, rch := watchedNode(t, c, wc, ns)
	id := wc.SessionID()

	// Hold everything, change p, drop the watcher's connection, and let
	// only the other members be reached again.
	for _, px := range pxs {
		px.Cut()
	}
	_, err := c.Set(p, []byte("away"), -1)
	mustZK(t, err)
	from := -1
	for i, px := range pxs {
		if px.ResetAll() > 0 {
			from = i
		}
	}
	if from < 0 {
		t.Fatal("no connection to drop")
	}
	for i, px := range pxs {
		if i != from {
			px.Restore()
		}
	}
	expectZK(t, pch, "persistent on the new server", zkEvent{zk.EventWatchRestored, p})
	expectZK(t, rch, "recursive on the new server", zkEvent{zk.EventWatchRestored, ns})
	if wc.SessionID() != id {
		t.Fatalf("session changed from %x to %x", id, wc.SessionID())
	}
	if srv := wc.Server(); srv == addrs[from] {
		t.Fatalf("the watcher is still on %s, the member it was cut from", srv)
	}
	_, err = c.Set(p, []byte("after"), -1)
	mustZK(t, err)
	mustZK(t, c.Delete(p, -1))
	expectZK(t, pch, "persistent on the new server", zkEvent{zk.EventNodeDataChanged, p}, zkEvent{zk.EventNodeDeleted, p})
	expectZK(t, rch, "recursive on the new server", zkEvent{zk.EventNodeDataChanged, p}, zkEvent{zk.EventNodeDeleted, p})
	quietZK(t, pch, "persistent after the last change")
	quietZK(t, rch, "recursive after the last change")
	mustZK(t, wc.RemovePersistentWatch(pch))
	mustZK(t, wc.RemovePersistentWatch(rch))
}

// TestPersistentWatchBesideOneShot: a one-shot watch armed on a path that
// has a persistent watch of the same connection turns the server's watch
// into a one-shot one on ZooKeeper 3.8 (one mode per connection and
// path); the client adds the persistent watch again and says so
// (EventWatchRestored), so every later change still reaches it, and the
// one-shot watch fires once.
func TestPersistentWatchBesideOneShot(t *testing.T) {
	zkTopologies(t, func(t *testing.T, endpoints []string) {
		ws, wc := conn(t, endpoints)
		ns := namespace(t, open(t, zookeeper.Config{Endpoints: endpoints}), ws)
		_, c := conn(t, []string{wc.Server()})
		p := ns + "/node"
		_, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		mustZK(t, err)
		ch, err := wc.AddPersistentWatch(p, zk.AddWatchModePersistent)
		mustZK(t, err)
		_, _, one, err := wc.ExistsW(p)
		mustZK(t, err)
		expectZK(t, ch, "persistent watch after a one-shot one on its path", zkEvent{zk.EventWatchRestored, p})
		for range 3 {
			_, err = c.Set(p, nil, -1)
			mustZK(t, err)
		}
		expectZK(t, ch, "persistent watch beside a one-shot one",
			zkEvent{zk.EventNodeDataChanged, p}, zkEvent{zk.EventNodeDataChanged, p}, zkEvent{zk.EventNodeDataChanged, p})
		quietZK(t, ch, "persistent watch after the last change")
		if ev := nextZK(t, one, "one-shot watch"); ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("one-shot watch got %v", ev.Type)
		}
		closedZK(t, one, "one-shot watch after its event")
		mustZK(t, wc.RemovePersistentWatch(ch))
		mustZK(t, c.Delete(p, -1))
	})
}

// TestPersistentWatchSessionEnd: closing the session ends a persistent
// watch's channel with EventNotWatching, as one-shot watches end.
func TestPersistentWatchSessionEnd(t *testing.T) {
	s, wc := conn(t, testcluster.ZooKeeperEndpoints(t))
	ch, err := wc.AddPersistentWatch("/zkbench-no-such-node", zk.AddWatchModePersistent)
	mustZK(t, err)
	s.Close()
	if ev := nextZK(t, ch, "persistent watch at Close"); ev.Type != zk.EventNotWatching {
		t.Fatalf("persistent watch at Close got %v, want EventNotWatching", ev.Type)
	}
	closedZK(t, ch, "persistent watch after Close")
}

// TestWatchDataAcrossReconnects: the ZooKeeper DataWatcher keeps its
// stream across dropped connections: a change made while the watcher was
// away (ZooKeeper does not replay it) is read again and delivered once, a
// deletion while away as EventDeleted, a reconnect with no change
// delivers nothing, and later changes arrive once each, in order.
func TestWatchDataAcrossReconnects(t *testing.T) {
	zkTopologies(t, func(t *testing.T, endpoints []string) {
		px := proxyTo(t, endpoints[0])
		ws, _ := conn(t, []string{px.Addr()})
		ns := namespace(t, open(t, zookeeper.Config{Endpoints: endpoints}), ws)
		w, _ := conn(t, endpoints[:1])
		p := ns + "/config"
		mustZK(t, w.Set(ctxT(t), p, []byte("v0")))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		data, exists, ch, err := ws.WatchData(ctx, p)
		if err != nil || !exists || string(data) != "v0" {
			t.Fatalf("WatchData = %q, %v, %v; want v0, true, nil", data, exists, err)
		}
		next := func(what string, typ backends.EventType, want string) {
			t.Helper()
			select {
			case ev, ok := <-ch:
				if !ok || ev.Type != typ || string(ev.Data) != want || ev.Path != p {
					t.Fatalf("%s: got %v %q %s (open %v), want %v %q", what, ev.Type, ev.Data, ev.Path, ok, typ, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: nothing within 10s", what)
			}
		}
		quiet := func(what string) {
			t.Helper()
			select {
			case ev := <-ch:
				t.Fatalf("%s: unexpected %v %q", what, ev.Type, ev.Data)
			case <-time.After(500 * time.Millisecond):
			}
		}
		// away drops the watcher's connection with change made while its
		// traffic is held, and lets it reconnect.
		away := func(change func()) {
			t.Helper()
			px.Cut()
			change()
			if px.ResetAll() == 0 {
				t.Fatal("no connection to drop")
			}
			px.Restore()
		}

		mustZK(t, w.Set(ctxT(t), p, []byte("v1")))
		next("a change", backends.EventDataChanged, "v1")
		away(func() { mustZK(t, w.Set(ctxT(t), p, []byte("away"))) })
		next("a change made while away", backends.EventDataChanged, "away")
		quiet("after the change made while away")
		mustZK(t, w.Set(ctxT(t), p, []byte("v2")))
		next("a change after the reconnect", backends.EventDataChanged, "v2")
		away(func() {})
		quiet("a reconnect with no change")
		mustZK(t, w.Set(ctxT(t), p, []byte("v3")))
		next("a change after a quiet reconnect", backends.EventDataChanged, "v3")
		away(func() { mustZK(t, w.Delete(ctxT(t), p)) })
		next("a deletion while away", backends.EventDeleted, "")
		mustZK(t, w.Set(ctxT(t), p, []byte("back")))
		next("a re-creation", backends.EventCreated, "back")
		quiet("after the last change")
		cancel()
		select {
		case _, ok := <-ch:
			if ok {
				t.Fatal("an event after cancel")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("channel not closed after cancel")
		}
		mustZK(t, w.Delete(ctxT(t), p))
	})
}
