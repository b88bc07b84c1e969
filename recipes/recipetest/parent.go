package recipetest

import (
	"context"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
)

// testParentOnce: a Lock makes its parent path on its first Acquire only
// (EnsurePath is a round trip even when the path is there), and makes it
// again when a create finds it removed. Native locks' requests are not
// counted; they only have to survive the removal.
func testParentOnce(e *lockEnv) {
	a := e.newClient()
	for range 3 {
		e.acquire(a)
		e.release(a)
	}
	ensured := func() int64 { return a.c.Requests(instrument.OpEnsurePath) }
	if e.v.ClientCounts && ensured() != 1 {
		e.t.Errorf("%d EnsurePath calls over 3 acquisitions, want 1", ensured())
	}
	e.childrenBecome(0)
	withinDo(e.t, "DeleteTree "+e.path, func(ctx context.Context) error { return e.admin.DeleteTree(ctx, e.path) })
	// The next Acquire's create finds no parent (ZooKeeper; etcd has no
	// parents), makes it and tries again.
	e.acquire(a)
	want := int64(1)
	if e.b.Kind() == backends.ZooKeeper {
		want = 2
	}
	if e.v.ClientCounts && ensured() != want {
		e.t.Errorf("%d EnsurePath calls after the parent was removed, want %d", ensured(), want)
	}
	if got := e.children(); len(got) != 1 {
		e.t.Errorf("children %q after re-making the parent, want the holder's node", got)
	}
	e.release(a)
	e.childrenBecome(0)
}
