package native

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// NewDeltaGroup is a recipes.GroupFactory: group membership whose view is
// kept by one watch that delivers only the change: etcd's prefix watch
// (DeltaGroup), ZooKeeper's persistent recursive watch (ZooKeeperDeltaGroup).
func NewDeltaGroup(s backends.Session, p string) (recipes.Group, error) {
	inner := Underlying(s)
	if zs, ok := inner.(ZooKeeperSession); ok && zs.Conn() != nil {
		return &ZooKeeperDeltaGroup{s: s, c: zs.Conn(), path: p}, nil
	}
	es, ok := inner.(EtcdSession)
	if !ok || es.Client() == nil {
		return nil, fmt.Errorf("native: delta group %s on %T: %w", p, inner, ErrUnsupported)
	}
	return &DeltaGroup{s: s, c: es.Client(), lease: es.Lease(), path: p}, nil
}

// DeltaGroup is group membership on etcd with a prefix watch.
//
// Algorithm: Join puts <path>/<id> with the session's lease if absent;
// Leave deletes it. Watch reads the prefix once (at revision R), reports
// it, then watches the prefix from R+1 and applies each event (a put adds
// a member, a delete removes one) to its view, reporting it after each
// response.
//
// Cost: every change still notifies every watcher once (that is the job),
// but with that one change only: O(1) bytes a watcher a change instead of
// a listing of the group, and no request at all after the first read. Its
// requests bypass backends/instrument (the raw client); Delivered counts
// what the watch delivered.
type DeltaGroup struct {
	s              backends.Session
	c              *clientv3.Client
	lease          clientv3.LeaseID
	path           string
	events, nbytes atomic.Int64
}

var (
	_ recipes.Group         = (*DeltaGroup)(nil)
	_ recipes.GroupCounter  = (*DeltaGroup)(nil)
	_ recipes.ChangeWatcher = (*DeltaGroup)(nil)
)

// Join implements recipes.Group.
func (g *DeltaGroup) Join(ctx context.Context, id string) error {
	key := path.Join(g.path, id)
	resp, err := g.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, "", clientv3.WithLease(g.lease))).Commit()
	switch {
	case err != nil:
		return g.fail("join", err)
	case !resp.Succeeded:
		return g.fail("join", backends.ErrNodeExists)
	}
	return nil
}

// Leave implements recipes.Group.
func (g *DeltaGroup) Leave(ctx context.Context, id string) error {
	_, err := g.c.Delete(ctx, path.Join(g.path, id))
	return g.fail("leave", err)
}

// Delivered implements recipes.GroupCounter.
func (g *DeltaGroup) Delivered() recipes.Delivered {
	return recipes.Delivered{Events: g.events.Load(), Bytes: g.nbytes.Load()}
}

// Watch implements recipes.Group.
func (g *DeltaGroup) Watch(ctx context.Context, seen func([]string)) error {
	return recipes.WatchWhole(ctx, g, seen)
}

// WatchChanges implements recipes.ChangeWatcher: one report a watch
// response that changed the view.
func (g *DeltaGroup) WatchChanges(ctx context.Context, listed func([]string), changed func(joined, left []string)) error {
	prefix := g.path + "/"
	resp, err := g.c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return g.fail("watch", err)
	}
	members := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		members = append(members, strings.TrimPrefix(string(kv.Key), prefix))
	}
	v := newView()
	v.list(members, listed)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := g.c.Watch(clientv3.WithRequireLeader(wctx), prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	for {
		wr, ok, err := recipe.Receive(ctx, g.s, ch)
		switch {
		case err != nil:
			return g.fail("watch", err)
		case !ok:
			return g.fail("watch", errors.Join(ctx.Err(), errors.New("watch closed")))
		}
		if err := wr.Err(); err != nil {
			return g.fail("watch", err)
		}
		for _, ev := range wr.Events {
			g.events.Add(1)
			g.nbytes.Add(int64(len(ev.Kv.Key) + len(ev.Kv.Value)))
			v.set(strings.TrimPrefix(string(ev.Kv.Key), prefix), ev.Type != clientv3.EventTypeDelete)
		}
		v.report(changed)
	}
}

func (g *DeltaGroup) fail(op string, err error) error { return groupFailed(op, g.path, err) }

// groupFailed wraps an error of operation op on the delta group at path;
// nil stays nil.
func groupFailed(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("native: %s group %s: %w", op, path, err)
}
