package zookeeper_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
)

// TestCommit checks backends.Committer on a real server: versions that
// only a Bump moves, all-or-none multis, sequential ephemeral creates,
// SetFresh's first-writer-wins, and the failures' sentinels.
func TestCommit(t *testing.T) {
	b := open(t, zookeeper.Config{})
	owner := newSession(t, b)  // makes the nodes
	writer := newSession(t, b) // writes others' nodes
	seer := newSession(t, b)   // watches and lists
	ns := namespace(t, b, owner)
	ctx := ctxT(t)
	dir := ns + "/q"
	if err := owner.EnsurePath(ctx, dir); err != nil {
		t.Fatal(err)
	}
	names := func(ns []backends.Node) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	listing := func(want int) int64 {
		t.Helper()
		kids, v, err := seer.ChildrenVersion(ctx, dir)
		if err != nil || len(kids) != want {
			t.Fatalf("ChildrenVersion = %v, %d, %v: want %d children", names(kids), v, err, want)
		}
		return v
	}

	if made, err := owner.Commit(ctx); made != nil || err != nil {
		t.Fatalf("empty Commit = %v, %v", made, err)
	}
	if _, err := owner.Commit(ctx, backends.CreateIn(dir, "a/b", nil)); err == nil {
		t.Fatal("create prefix with '/': no error")
	}
	if _, _, err := seer.ChildrenVersion(ctx, ns+"/absent"); !errors.Is(err, backends.ErrNoNode) {
		t.Fatalf("ChildrenVersion of an absent parent: %v, want ErrNoNode", err)
	}

	// Creates do not move the parent's version; a Bump does, by one.
	v0 := listing(0)
	made, err := owner.Commit(ctx, backends.Check(dir, v0), backends.CreateIn(dir, "w-", []byte("first")))
	if err != nil || len(made) != 1 || !strings.HasPrefix(made[0].Name, "w-") || made[0].Path != dir+"/"+made[0].Name {
		t.Fatalf("Commit(check, create) = %+v, %v", made, err)
	}
	first := made[0]
	if v := listing(1); v != v0 {
		t.Fatalf("version %d after a create, want %d", v, v0)
	}
	if made, err := owner.Commit(ctx, backends.Check(dir, v0), backends.Bump(dir)); err != nil || len(made) != 0 {
		t.Fatalf("Commit(check, bump) = %+v, %v", made, err)
	}
	v1 := listing(1)
	if v1 != v0+1 {
		t.Fatalf("version %d after a bump, want %d", v1, v0+1)
	}

	// A stale check, last, fails the whole: the create and bump before it
	// are not applied.
	_, err = owner.Commit(ctx, backends.CreateIn(dir, "w-", nil), backends.Bump(dir), backends.Check(dir, v0))
	if !errors.Is(err, backends.ErrConflict) || errors.Is(err, backends.ErrNoNode) || !strings.Contains(err.Error(), "op 2 (check") {
		t.Fatalf("stale Commit: %v, want ErrConflict naming op 2", err)
	}
	if v := listing(1); v != v1 {
		t.Fatalf("version %d after a failed commit, want %d", v, v1)
	}

	// A good commit: two creates, a delete of another's node, a bump.
	made, err = writer.Commit(ctx, backends.Check(dir, v1), backends.CreateIn(dir, "w-", []byte("b")),
		backends.DeleteOp(first.Path), backends.CreateIn(dir, "w-", []byte("c")), backends.Bump(dir))
	if err != nil || len(made) != 2 {
		t.Fatalf("Commit = %+v, %v", made, err)
	}
	nb, nc := made[0], made[1]
	if !(first.Seq < nb.Seq && nb.Seq < nc.Seq) {
		t.Fatalf("sequence numbers %d, %d, %d: want increasing", first.Seq, nb.Seq, nc.Seq)
	}
	if v := listing(2); v != v1+1 {
		t.Fatalf("version %d, want %d", v, v1+1)
	}
	kids, err := seer.Children(ctx, dir)
	if err != nil || len(kids) != 2 || kids[0].Name != nb.Name || kids[1].Name != nc.Name {
		t.Fatalf("children %v, %v: want %s, %s", names(kids), err, nb.Name, nc.Name)
	}
	for _, n := range made {
		ok, st, err := seer.Conn().Exists(n.Path)
		if err != nil || !ok || st.EphemeralOwner != writer.ID() {
			t.Fatalf("%s: exists %v, owner %x, %v: want ephemeral of the writer %x", n.Path, ok, st.EphemeralOwner, err, writer.ID())
		}
	}
	if data, _, err := seer.Get(ctx, nb.Path); err != nil || string(data) != "b" {
		t.Fatalf("Get %s = %q, %v", nb.Path, data, err)
	}

	// SetFresh of another session's node: the first succeeds, fires a data
	// watch and leaves the owner; the second conflicts.
	mine, err := owner.CreateSequential(ctx, dir, "o-", []byte("idle"))
	if err != nil {
		t.Fatal(err)
	}
	exists, _, events, err := seer.ExistsW(ctx, mine.Path)
	if err != nil || !exists {
		t.Fatalf("ExistsW = %v, %v", exists, err)
	}
	if _, err := writer.Commit(ctx, backends.SetFresh(mine.Path, []byte("handed"))); err != nil {
		t.Fatalf("SetFresh: %v", err)
	}
	select {
	case ev := <-events:
		if ev.Type != backends.EventDataChanged || ev.Path != mine.Path {
			t.Fatalf("event %+v, want EventDataChanged of %s", ev, mine.Path)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event after SetFresh")
	}
	if data, _, err := seer.Get(ctx, mine.Path); err != nil || string(data) != "handed" {
		t.Fatalf("Get after SetFresh = %q, %v", data, err)
	}
	if _, st, err := seer.Conn().Exists(mine.Path); err != nil || st.EphemeralOwner != owner.ID() {
		t.Fatalf("owner after SetFresh %x, %v: want %x", st.EphemeralOwner, err, owner.ID())
	}
	_, err = writer.Commit(ctx, backends.SetFresh(mine.Path, []byte("again")))
	if !errors.Is(err, backends.ErrConflict) {
		t.Fatalf("second SetFresh: %v, want ErrConflict", err)
	}
	if data, _, _ := seer.Get(ctx, mine.Path); string(data) != "handed" {
		t.Fatalf("data %q after a refused SetFresh", data)
	}
	_, err = writer.Commit(ctx, backends.SetFresh(ns+"/absent", nil))
	if !errors.Is(err, backends.ErrConflict) {
		t.Fatalf("SetFresh of an absent node: %v, want ErrConflict", err)
	}

	// DeleteFresh: refused once the node was set, allowed while fresh.
	if _, err := owner.Commit(ctx, backends.DeleteFresh(mine.Path)); !errors.Is(err, backends.ErrConflict) {
		t.Fatalf("DeleteFresh of a set node: %v, want ErrConflict", err)
	}
	fresh, err := owner.Commit(ctx, backends.CreateIn(dir, "w-", nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Commit(ctx, backends.DeleteFresh(fresh[0].Path)); err != nil {
		t.Fatalf("DeleteFresh of a fresh node: %v", err)
	}
	if _, err := writer.Commit(ctx, backends.DeleteFresh(fresh[0].Path)); !errors.Is(err, backends.ErrConflict) {
		t.Fatalf("DeleteFresh of an absent node: %v, want ErrConflict", err)
	}

	// Failures' sentinels.
	_, err = writer.Commit(ctx, backends.DeleteOp(first.Path))
	if !errors.Is(err, backends.ErrConflict) || errors.Is(err, backends.ErrNoNode) {
		t.Fatalf("delete of an absent node: %v, want ErrConflict", err)
	}
	_, err = writer.Commit(ctx, backends.CreateIn(ns+"/absent", "w-", nil))
	if !errors.Is(err, backends.ErrNoNode) || errors.Is(err, backends.ErrConflict) {
		t.Fatalf("create under an absent parent: %v, want ErrNoNode", err)
	}
	_, err = writer.Commit(ctx, backends.Check(ns+"/absent", 0))
	if !errors.Is(err, backends.ErrConflict) {
		t.Fatalf("check of an absent node: %v, want ErrConflict", err)
	}
	listing(3)

	// The nodes go with their owners' sessions, not with the writer's.
	writer.Close()
	waitFor(t, 5*time.Second, "the writer's nodes gone", func() bool {
		kids, err := seer.Children(ctx, dir)
		return err == nil && len(kids) == 1 && kids[0].Name == mine.Name
	})
	owner.Close()
	waitFor(t, 5*time.Second, "the owner's node gone", func() bool {
		kids, err := seer.Children(ctx, dir)
		return err == nil && len(kids) == 0
	})
}
