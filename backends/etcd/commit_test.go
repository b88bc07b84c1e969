package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/etcd"
)

// TestCommit: ChildrenVersion's version moves with Bump only; a Commit is
// all or nothing (a stale Check, an absent OpDelete: ErrConflict, nothing
// applied); its creates are ephemeral sequential nodes of the session.
func TestCommit(t *testing.T) {
	b, ns := open(t)
	s := session(t, b)
	other := session(t, b)
	ctx := ctxFor(t, 20*time.Second)
	var cm backends.Committer = s
	q := ns + "/q"

	childrenVersion := func(want int64, wantNames ...string) []backends.Node {
		t.Helper()
		kids, v, err := cm.ChildrenVersion(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if v != want {
			t.Fatalf("version = %d; want %d", v, want)
		}
		plain, err := s.Children(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) != len(wantNames) || len(plain) != len(kids) {
			t.Fatalf("children = %+v (Children: %+v); want %v", kids, plain, wantNames)
		}
		for i, k := range kids {
			if k != plain[i] {
				t.Fatalf("child %d = %+v; Children says %+v", i, k, plain[i])
			}
			if wantNames[i] != "" && k.Path != wantNames[i] {
				t.Fatalf("child %d = %s; want %s", i, k.Path, wantNames[i])
			}
		}
		return kids
	}

	// An absent parent has version 0.
	childrenVersion(0)
	if made, err := cm.Commit(ctx); err != nil || made != nil {
		t.Fatalf("Commit() = %v, %v; want nil, nil", made, err)
	}

	// A child's create does not move the version; Bump does, by one.
	first, err := cm.Commit(ctx, backends.CreateIn(q, "n-", []byte("1")))
	if err != nil || len(first) != 1 {
		t.Fatalf("Commit(create) = %v, %v", first, err)
	}
	if n := first[0]; n.Seq == 0 || n.CreateRev != n.Seq || n.Name == "" || n.Path != q+"/"+n.Name {
		t.Fatalf("created node %+v", n)
	}
	childrenVersion(0, first[0].Path)
	if _, err := cm.Commit(ctx, backends.Bump(q)); err != nil {
		t.Fatal(err)
	}
	kids := childrenVersion(1, first[0].Path)
	if kids[0].Seq != first[0].Seq {
		t.Fatalf("listed Seq %d; Commit returned %d", kids[0].Seq, first[0].Seq)
	}
	if data, _, err := s.Get(ctx, first[0].Path); err != nil || string(data) != "1" {
		t.Fatalf("Get(%s) = %q, %v", first[0].Path, data, err)
	}

	// A stale Check: nothing applies, the sequence names stay unique.
	if _, err := cm.Commit(ctx, backends.Check(q, 0), backends.CreateIn(q, "n-", nil),
		backends.DeleteOp(first[0].Path), backends.Bump(q)); !errors.Is(err, backends.ErrConflict) {
		t.Fatalf("Commit with a stale check: %v; want ErrConflict", err)
	}
	childrenVersion(1, first[0].Path)

	// A good Commit: check, two creates, a delete, a bump, in one revision.
	made, err := cm.Commit(ctx, backends.Check(q, 1), backends.CreateIn(q, "n-", []byte("2")),
		backends.CreateIn(q, "m-", []byte("3")), backends.DeleteOp(first[0].Path), backends.Bump(q))
	if err != nil || len(made) != 2 {
		t.Fatalf("Commit = %v, %v; want two nodes", made, err)
	}
	if made[0].Seq <= first[0].Seq || made[1].Seq != made[0].Seq || made[0].CreateRev != made[0].Seq ||
		made[0].Path == made[1].Path {
		t.Fatalf("made %+v after %+v; want one new revision, two names", made, first[0])
	}
	kids = childrenVersion(2, "", "")
	for _, k := range kids {
		if k.Seq != made[0].Seq || (k.Path != made[0].Path && k.Path != made[1].Path) {
			t.Fatalf("child %+v; made %+v", k, made)
		}
	}
	if _, _, err := s.Get(ctx, first[0].Path); !errors.Is(err, backends.ErrNoNode) {
		t.Fatalf("deleted node: %v; want ErrNoNode", err)
	}
	// Siblings of later commits come later.
	last, err := cm.Commit(ctx, backends.CreateIn(q, "n-", nil))
	if err != nil {
		t.Fatal(err)
	}
	if last[0].Seq <= made[0].Seq {
		t.Fatalf("later sibling Seq %d <= %d", last[0].Seq, made[0].Seq)
	}
	kids = childrenVersion(2, "", "", last[0].Path)

	// OpDelete of an absent node conflicts and takes nothing with it.
	if _, err := cm.Commit(ctx, backends.DeleteOp(first[0].Path), backends.Bump(q)); !errors.Is(err, backends.ErrConflict) {
		t.Fatalf("delete of an absent node: %v; want ErrConflict", err)
	}
	childrenVersion(2, kids[0].Path, kids[1].Path, last[0].Path)

	// Bad input is refused before any request.
	if _, err := cm.Commit(ctx, backends.CreateIn(q, "a/b", nil)); !errors.Is(err, etcd.ErrInvalidPath) {
		t.Fatalf("prefix with '/': %v; want ErrInvalidPath", err)
	}
	if _, err := cm.Commit(ctx, backends.Bump("q")); !errors.Is(err, etcd.ErrInvalidPath) {
		t.Fatalf("relative path: %v; want ErrInvalidPath", err)
	}
	if _, err := cm.Commit(ctx, backends.Op{Kind: 99, Path: q}); err == nil {
		t.Fatal("unknown op kind: no error")
	}
	childrenVersion(2, kids[0].Path, kids[1].Path, last[0].Path)

	// The creates carry the session's lease; the bumped parent has none.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	left, v, err := other.ChildrenVersion(ctx, q)
	if err != nil || len(left) != 0 || v != 2 {
		t.Fatalf("after the creator closed: %+v, version %d, %v; want none, 2", left, v, err)
	}
	if _, err := s.Commit(ctx, backends.Bump(q)); !errors.Is(err, backends.ErrSessionLost) {
		t.Fatalf("Commit on a closed session: %v; want ErrSessionLost", err)
	}
}

// TestCommitSetFresh: of two SetFresh of one node by another session, the
// first wins and the second conflicts; a watcher sees EventDataChanged;
// the node keeps its owner's lease. DeleteFresh takes only a fresh node.
func TestCommitSetFresh(t *testing.T) {
	b, ns := open(t)
	owner, writer, watcher := session(t, b), session(t, b), session(t, b)
	ctx := ctxFor(t, 20*time.Second)
	q := ns + "/q"

	made, err := owner.Commit(ctx, backends.CreateIn(q, "w-", []byte("idle")))
	if err != nil {
		t.Fatal(err)
	}
	n := made[0].Path

	ok, _, ch, err := watcher.ExistsW(ctx, n)
	if err != nil || !ok {
		t.Fatalf("ExistsW = %v, %v", ok, err)
	}
	if _, err := writer.Commit(ctx, backends.SetFresh(n, []byte("item-1"))); err != nil {
		t.Fatalf("first SetFresh: %v", err)
	}
	if ev := event(t, ch, 5*time.Second); ev.Type != backends.EventDataChanged || ev.Path != n {
		t.Fatalf("watch event %+v; want EventDataChanged on %s", ev, n)
	}
	if _, err := writer.Commit(ctx, backends.SetFresh(n, []byte("item-2"))); !errors.Is(err, backends.ErrConflict) {
		t.Fatalf("second SetFresh: %v; want ErrConflict", err)
	}
	if _, err := owner.Commit(ctx, backends.SetFresh(ns+"/absent", []byte("x"))); !errors.Is(err, backends.ErrConflict) {
		t.Fatalf("SetFresh of an absent node: %v; want ErrConflict", err)
	}
	if data, node, err := watcher.Get(ctx, n); err != nil || string(data) != "item-1" || node.CreateRev != made[0].CreateRev {
		t.Fatalf("Get = %q %+v, %v; want item-1 created at %d", data, node, err, made[0].CreateRev)
	}
	// DeleteFresh: refused once the node was set, allowed while fresh.
	if _, err := owner.Commit(ctx, backends.DeleteFresh(n)); !errors.Is(err, backends.ErrConflict) {
		t.Fatalf("DeleteFresh of a set node: %v; want ErrConflict", err)
	}
	fresh, err := owner.Commit(ctx, backends.CreateIn(q, "w-", []byte("idle")))
	if err != nil {
		t.Fatal(err)
	}
	// The listing says which child was written since it was made.
	kids, _, err := watcher.ChildrenVersion(ctx, q)
	if err != nil || len(kids) != 2 || kids[0].Path != n || kids[0].DataVersion != 1 || kids[1].DataVersion != 0 {
		t.Fatalf("ChildrenVersion = %+v, %v; want %s written once, %s fresh", kids, err, n, fresh[0].Path)
	}
	if _, err := writer.Commit(ctx, backends.DeleteFresh(fresh[0].Path)); err != nil {
		t.Fatalf("DeleteFresh of a fresh node: %v", err)
	}
	if _, err := writer.Commit(ctx, backends.DeleteFresh(fresh[0].Path)); !errors.Is(err, backends.ErrConflict) {
		t.Fatalf("DeleteFresh of an absent node: %v; want ErrConflict", err)
	}

	// The writer's close leaves the node; the owner's takes it.
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := watcher.Get(ctx, n); err != nil {
		t.Fatalf("after the writer closed: %v; want the node", err)
	}
	if err := owner.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := watcher.Get(ctx, n); !errors.Is(err, backends.ErrNoNode) {
		t.Fatalf("after the owner closed: %v; want ErrNoNode", err)
	}
}
