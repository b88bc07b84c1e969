package native

import (
	"context"
	"errors"
	"path"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// ZooKeeperDeltaGroup is group membership on ZooKeeper with a persistent
// recursive watch (ZooKeeper 3.6+'s addWatch, mode PERSISTENT_RECURSIVE,
// sent by zkbench's go-zookeeper copy).
//
// Algorithm: Join creates the ephemeral node <path>/<id> (the session's
// Create, EnsurePath first); Leave deletes it. Watch makes <path> if
// missing (so no watch sees the group node's own creation), arms the
// recursive watch on it, then lists <path> once and reports it, then applies each
// notification of a direct child (NodeCreated adds a member, NodeDeleted
// removes one) to its view, reporting it after each. Changes between the
// arming and the listing come again as notifications, which the view
// applies idempotently in order, so it ends where the group is. After a
// reconnect the client re-registers the watch but the server does not
// replay what changed meanwhile: Watch lists the group again.
//
// Cost: every change notifies every watcher once with that one change (a
// path, no listing): O(1) bytes a watcher a change, and no request after
// the first listing but one a reconnect. The watch goes to the raw
// zk.Conn, bypassing backends/instrument; Join, Leave and the listings
// use the session. Delivered counts the notifications the watch received,
// their paths' bytes and the deletions among them.
type ZooKeeperDeltaGroup struct {
	s              backends.Session
	c              *zk.Conn
	path           string
	events, nbytes atomic.Int64
	deletes        atomic.Int64 // of events, those of a deletion
}

var (
	_ recipes.Group         = (*ZooKeeperDeltaGroup)(nil)
	_ recipes.GroupCounter  = (*ZooKeeperDeltaGroup)(nil)
	_ recipes.ChangeWatcher = (*ZooKeeperDeltaGroup)(nil)
)

// Join implements recipes.Group.
func (g *ZooKeeperDeltaGroup) Join(ctx context.Context, id string) error {
	return g.fail("join", recipe.JoinGroup(ctx, g.s, g.path, id))
}

// Leave implements recipes.Group.
func (g *ZooKeeperDeltaGroup) Leave(ctx context.Context, id string) error {
	return g.fail("leave", recipe.LeaveGroup(ctx, g.s, g.path, id))
}

// Delivered implements recipes.GroupCounter.
func (g *ZooKeeperDeltaGroup) Delivered() recipes.Delivered {
	return recipes.Delivered{Events: g.events.Load(), Bytes: g.nbytes.Load(), RecursiveDeletes: g.deletes.Load()}
}

// Watch implements recipes.Group.
func (g *ZooKeeperDeltaGroup) Watch(ctx context.Context, seen func([]string)) error {
	return recipes.WatchWhole(ctx, g, seen)
}

// WatchChanges implements recipes.ChangeWatcher: one report a
// notification that changed the view, the whole group again after a
// reconnect.
func (g *ZooKeeperDeltaGroup) WatchChanges(ctx context.Context, listed func([]string), changed func(joined, left []string)) error {
	if err := g.s.EnsurePath(ctx, g.path); err != nil {
		return g.fail("watch", err)
	}
	ch, err := g.arm(ctx)
	if err != nil {
		return g.fail("watch", err)
	}
	defer func() { _ = g.c.RemovePersistentWatch(ch) }()
	v := newView()
	relist := func() error {
		members, err := g.list(ctx)
		if err == nil {
			v.list(members, listed)
		}
		return err
	}
	if err := relist(); err != nil {
		return g.fail("watch", err)
	}
	for {
		ev, ok, err := recipe.Receive(ctx, g.s, ch)
		if err != nil {
			return g.fail("watch", err)
		}
		if !ok || ev.Type == zk.EventNotWatching {
			return g.fail("watch", backends.ErrSessionLost)
		}
		if ev.Type == zk.EventWatchRestored {
			if err := relist(); err != nil {
				return g.fail("watch", err)
			}
			continue
		}
		g.events.Add(1)
		g.nbytes.Add(int64(len(ev.Path)))
		if ev.Type == zk.EventNodeDeleted {
			g.deletes.Add(1)
		}
		if path.Dir(ev.Path) != g.path {
			continue // the group node itself, or deeper
		}
		switch ev.Type {
		case zk.EventNodeCreated:
			v.set(path.Base(ev.Path), true)
		case zk.EventNodeDeleted:
			v.set(path.Base(ev.Path), false)
		default:
			continue
		}
		v.report(changed)
	}
}

// arm adds the recursive watch; go-zookeeper takes no context, so a watch
// armed after ctx or the session ended is removed.
func (g *ZooKeeperDeltaGroup) arm(ctx context.Context) (<-chan zk.Event, error) {
	type armed struct {
		ch  <-chan zk.Event
		err error
	}
	res := make(chan armed, 1)
	go func() {
		ch, err := g.c.AddPersistentWatch(g.path, zk.AddWatchModePersistentRecursive)
		res <- armed{ch, err}
	}()
	abandon := func() {
		go func() {
			if a := <-res; a.err == nil {
				_ = g.c.RemovePersistentWatch(a.ch)
			}
		}()
	}
	a, _, err := recipe.Receive(ctx, g.s, res)
	if err != nil {
		abandon()
		return nil, err
	}
	return a.ch, a.err
}

// list reads the group's members (the session's Children, which retries
// while the connection is down).
func (g *ZooKeeperDeltaGroup) list(ctx context.Context) ([]string, error) {
	nodes, err := g.s.Children(ctx, g.path)
	if err != nil && !errors.Is(err, backends.ErrNoNode) {
		return nil, err
	}
	members := make([]string, len(nodes))
	for i, n := range nodes {
		members[i] = n.Name
	}
	return members, nil
}

func (g *ZooKeeperDeltaGroup) fail(op string, err error) error { return groupFailed(op, g.path, err) }
