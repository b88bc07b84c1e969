package backendtest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zkbench/zkbench/backends"
)

func testCreateGetDelete(t *testing.T, e *env) {
	s := e.session(t)
	ensure(t, s, e.ns)
	p := e.p("a")
	data := []byte("hello\x00world")

	n := create(t, s, p, data)
	if n.Path != p || n.Name != "a" {
		t.Errorf("Create returned Path=%q Name=%q, want %q %q", n.Path, n.Name, p, "a")
	}
	got, gn, err := s.Get(opCtx(t), p)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("Get data = %q, want %q", got, data)
	}
	if gn.Path != p || gn.Name != "a" || gn.CreateRev <= 0 || n.CreateRev != 0 && gn.CreateRev != n.CreateRev {
		t.Errorf("Get node = %+v, want Path %q Name a CreateRev > 0 and as Create said (%d, or 0)", gn, p, n.CreateRev)
	}

	if _, err := s.Create(opCtx(t), p, []byte("other")); !errors.Is(err, backends.ErrNodeExists) {
		t.Errorf("second Create: err = %v, want ErrNodeExists", err)
	}
	// The failed create changed nothing.
	if got, _, err := s.Get(opCtx(t), p); err != nil || !bytes.Equal(got, data) {
		t.Errorf("Get after failed Create = %q, %v; want %q", got, err, data)
	}
	// Another session sees the node and cannot take it either.
	s2 := e.session(t)
	visible(t, s2, p)
	if _, err := s2.Create(opCtx(t), p, nil); !errors.Is(err, backends.ErrNodeExists) {
		t.Errorf("Create from another session: err = %v, want ErrNodeExists", err)
	}

	del(t, s, p)
	if _, _, err := s.Get(opCtx(t), p); !errors.Is(err, backends.ErrNoNode) {
		t.Errorf("Get after Delete: err = %v, want ErrNoNode", err)
	}
	if err := s.Delete(opCtx(t), p); !errors.Is(err, backends.ErrNoNode) {
		t.Errorf("second Delete: err = %v, want ErrNoNode", err)
	}
	if _, _, err := s.Get(opCtx(t), e.p("never")); !errors.Is(err, backends.ErrNoNode) {
		t.Errorf("Get of a missing node: err = %v, want ErrNoNode", err)
	}

	// Empty data round-trips, and the path can be taken again.
	create(t, s, p, nil)
	if got, _, err := s.Get(opCtx(t), p); err != nil || len(got) != 0 {
		t.Errorf("Get of empty node = %q, %v", got, err)
	}
	// A node made by one session can be deleted by another.
	visible(t, s2, p)
	del(t, s2, p)
	gone(t, s, p, eventBound)
}

func testCreateRev(t *testing.T, e *env) {
	s1, s2 := e.session(t), e.session(t)
	ensure(t, s1, e.ns)
	ensure(t, s1, e.p("q"))
	var prev int64
	var seen []string
	for i := range 6 {
		s := s1
		if i%2 == 1 {
			s = s2
		}
		var n backends.Node
		if i < 4 {
			n = create(t, s, e.p(fmt.Sprintf("n%d", i)), nil)
		} else {
			n = createSeq(t, s, e.p("q"), "s-")
		}
		rev := stamp(t, e, s, n)
		seen = append(seen, fmt.Sprintf("%s=%d", n.Name, rev))
		if rev <= prev {
			t.Fatalf("CreateRev must grow with each create; got %v", seen)
		}
		prev = rev
		// ExistsW reports the same stamp as Get.
		ctx, cancel := contextWithCancel(t)
		ok, en, _, err := s.ExistsW(ctx, n.Path)
		cancel()
		if err != nil || !ok || en.CreateRev != rev {
			t.Errorf("ExistsW(%s) = %v, CreateRev %d, %v; Get said %d", n.Path, ok, en.CreateRev, err, rev)
		}
	}
	// A node deleted and made again gets a new, larger stamp.
	first := e.p("n0")
	del(t, s1, first)
	if rev := stamp(t, e, s1, create(t, s1, first, nil)); rev <= prev {
		t.Errorf("re-created %s has CreateRev %d, not above %d", first, rev, prev)
	}
}

// stamp returns the CreateRev that Get reads for n, just made by s, after
// checking it against what the create returned: ZooKeeper may leave it 0
// (it cannot return the czxid without a read), every other backend must
// report it, and no backend may report another stamp than Get's.
func stamp(t *testing.T, e *env, s backends.Session, n backends.Node) int64 {
	t.Helper()
	_, gn, err := s.Get(opCtx(t), n.Path)
	switch {
	case err != nil:
		t.Fatalf("Get(%s): %v", n.Path, err)
	case gn.CreateRev <= 0:
		t.Fatalf("Get(%s) CreateRev = %d, want > 0", n.Path, gn.CreateRev)
	case n.CreateRev == 0 && e.kind != backends.ZooKeeper:
		t.Fatalf("%s create of %s returned CreateRev 0 (only ZooKeeper may)", e.kind, n.Path)
	case n.CreateRev != 0 && n.CreateRev != gn.CreateRev:
		t.Fatalf("create of %s returned CreateRev %d, Get reads %d", n.Path, n.CreateRev, gn.CreateRev)
	}
	return gn.CreateRev
}

func testEnsurePath(t *testing.T, e *env) {
	s := e.session(t)
	deep := e.p("a", "b", "c")
	ensure(t, s, deep)
	ensure(t, s, deep) // idempotent
	ensure(t, s, e.p("a"))
	n := create(t, s, deep+"/x", []byte("x"))
	if n.Path != deep+"/x" {
		t.Errorf("Create under EnsurePath'd parent: Path = %q", n.Path)
	}
	if got := names(children(t, s, deep)); !slices.Equal(got, []string{"x"}) {
		t.Errorf("Children(%s) = %v, want [x]", deep, got)
	}
	// The contract differs by kind: ZooKeeper needs the parent, etcd has none.
	orphan := e.p("missing", "child")
	_, err := s.Create(opCtx(t), orphan, nil)
	switch e.kind {
	case backends.ZooKeeper:
		if !errors.Is(err, backends.ErrNoNode) {
			t.Errorf("ZooKeeper Create with a missing parent: err = %v, want ErrNoNode", err)
		}
	default:
		if err != nil {
			t.Errorf("%s Create with no parent node: %v (etcd has no parents)", e.kind, err)
		}
	}
}

func testChildrenDirectOnly(t *testing.T, e *env) {
	s := e.session(t)
	parent := e.p("p")
	ensure(t, s, parent)
	create(t, s, parent+"/b", nil)
	create(t, s, parent+"/c", nil)
	ensure(t, s, parent+"/d/e")
	create(t, s, parent+"/d/e/x", nil)
	// A sibling whose name extends the parent's must not leak in (etcd
	// prefix ranges).
	create(t, s, e.p("p2"), nil)
	create(t, s, e.p("pp"), nil)

	got := names(children(t, s, parent))
	slices.Sort(got)
	want := []string{"b", "c"}
	if e.kind == backends.ZooKeeper {
		// EnsurePath made d as a persistent znode: a real child.
		want = []string{"b", "c", "d"}
	}
	if !slices.Equal(got, want) {
		t.Errorf("Children(%s) = %v, want %v (direct children only)", parent, got, want)
	}
	if got := names(children(t, s, parent+"/d/e")); !slices.Equal(got, []string{"x"}) {
		t.Errorf("Children(d/e) = %v, want [x]", got)
	}
	if got := children(t, s, parent+"/b"); len(got) != 0 {
		t.Errorf("Children of a leaf = %v, want none", names(got))
	}
	for _, n := range children(t, s, parent) {
		if n.Path != parent+"/"+n.Name || strings.Contains(n.Name, "/") {
			t.Errorf("child %+v: Path must be parent/Name with Name one element", n)
		}
	}
}

func testChildrenOrder(t *testing.T, e *env) {
	s := e.session(t)
	parent := e.p("order")
	ensure(t, s, parent)
	// Plain nodes made in reverse name order, then sequential ones.
	for _, name := range []string{"z", "m", "a"} {
		create(t, s, parent+"/"+name, nil)
	}
	var seqs []backends.Node
	for range 5 {
		seqs = append(seqs, createSeq(t, s, parent, "s-"))
	}
	got := children(t, s, parent)
	if len(got) != 8 {
		t.Fatalf("Children = %v, want 8 nodes", names(got))
	}
	if !sortedBySeq(got) {
		t.Errorf("Children not ordered by (Seq, name): %+v", got)
	}
	// The sequential nodes keep their creation order and their Seq.
	var gotSeq []backends.Node
	for _, n := range got {
		if strings.HasPrefix(n.Name, "s-") {
			gotSeq = append(gotSeq, n)
		}
	}
	if len(gotSeq) != len(seqs) {
		t.Fatalf("Children lists %d sequential nodes, want %d", len(gotSeq), len(seqs))
	}
	for i := range seqs {
		if gotSeq[i].Name != seqs[i].Name || gotSeq[i].Seq != seqs[i].Seq {
			t.Errorf("sequential child %d = %s seq %d, want %s seq %d", i, gotSeq[i].Name, gotSeq[i].Seq, seqs[i].Name, seqs[i].Seq)
		}
	}
}

func testSequentialConcurrent(t *testing.T, e *env) {
	const sessions, each = 4, 10
	parent := e.p("seq")
	ss := make([]backends.Session, sessions)
	for i := range ss {
		ss[i] = e.session(t)
	}
	ensure(t, ss[0], parent)
	for _, s := range ss[1:] {
		dirVisible(t, s, parent)
	}

	made := make([][]backends.Node, sessions)
	errs := make(chan error, sessions*each)
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() {
			for range each {
				n, err := s.CreateSequential(opCtx(t), parent, "lock-", []byte{byte(i)})
				if err != nil {
					errs <- fmt.Errorf("session %d: %w", i, err)
					return
				}
				made[i] = append(made[i], n)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("CreateSequential: %v", err)
	}

	byName := map[string]backends.Node{}
	bySeq := map[int64]string{}
	for i, ns := range made {
		for j, n := range ns {
			if !strings.HasPrefix(n.Name, "lock-") || n.Path != parent+"/"+n.Name {
				t.Errorf("session %d node %+v: want Name lock-... and Path parent/Name", i, n)
			}
			if j > 0 && n.Seq <= ns[j-1].Seq {
				t.Errorf("session %d: Seq not increasing in creation order: %d after %d", i, n.Seq, ns[j-1].Seq)
			}
			if _, dup := byName[n.Name]; dup {
				t.Errorf("name %s made twice", n.Name)
			}
			if other, dup := bySeq[n.Seq]; dup {
				t.Errorf("Seq %d given to both %s and %s", n.Seq, other, n.Name)
			}
			byName[n.Name] = n
			bySeq[n.Seq] = n.Name
		}
	}

	// Every session eventually lists all of them, in Seq order.
	for i, s := range ss {
		var got []backends.Node
		eventually(t, eventBound, fmt.Sprintf("session %d lists %d children", i, sessions*each), func() (bool, string) {
			got = children(t, s, parent)
			return len(got) == sessions*each, fmt.Sprintf("%d listed", len(got))
		})
		if !sortedBySeq(got) {
			t.Errorf("session %d: Children not ordered by Seq: %v", i, names(got))
		}
		for j, n := range got {
			m, ok := byName[n.Name]
			if !ok || m.Seq != n.Seq {
				t.Errorf("session %d child %d = %+v, not one made (or Seq differs: %+v)", i, j, n, m)
			}
			if j > 0 && n.Seq == got[j-1].Seq {
				t.Errorf("session %d: two children with Seq %d", i, n.Seq)
			}
		}
	}
}

func testSequentialCausalOrder(t *testing.T, e *env) {
	// A create that starts after another returned is ordered after it, even
	// from another session.
	ss := []backends.Session{e.session(t), e.session(t), e.session(t)}
	parent := e.p("q")
	ensure(t, ss[0], parent)
	for _, s := range ss[1:] {
		dirVisible(t, s, parent)
	}
	var prev backends.Node
	for i := range 9 {
		s := ss[i%len(ss)]
		n := createSeq(t, s, parent, "n-")
		n.CreateRev = stamp(t, e, s, n)
		if i > 0 && (n.Seq <= prev.Seq || n.CreateRev <= prev.CreateRev) {
			t.Fatalf("create %d (%s seq %d rev %d) not after create %d (%s seq %d rev %d)",
				i, n.Name, n.Seq, n.CreateRev, i-1, prev.Name, prev.Seq, prev.CreateRev)
		}
		prev = n
	}
}

func testEphemeralGoneAfterClose(t *testing.T, e *env) {
	owner, observer := e.session(t), e.session(t)
	ensure(t, owner, e.ns)
	plain := create(t, owner, e.p("eph"), nil)
	seq := createSeq(t, owner, e.ns, "seq-")
	visible(t, observer, plain.Path)
	visible(t, observer, seq.Path)
	if err := owner.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Closing ends the session at once (ZooKeeper closeSession, etcd lease
	// revoke); the bound is for a loaded machine, not a session timeout.
	gone(t, observer, plain.Path, eventBound)
	gone(t, observer, seq.Path, eventBound)
	// The path is free again.
	create(t, observer, plain.Path, nil)
}

func testDoneClosesOnClose(t *testing.T, e *env) {
	s := e.session(t)
	select {
	case <-s.Done():
		t.Fatal("Done closed on a healthy session")
	default:
	}
	if s.ID() == 0 {
		t.Error("ID() = 0 for an open session")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-s.Done():
	case <-timeAfter(promptBound):
		t.Fatalf("Done not closed within %v of Close", promptBound)
	}
	// Close is safe to repeat, also concurrently.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { s.Close() })
	}
	wg.Wait()
}
