package backendtest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// call is one Session method invoked with a given ctx, reduced to its error.
type call struct {
	name string
	do   func(ctx context.Context, s backends.Session) error
}

// calls are every blocking Session method, against paths under ns that
// exist (so that a success is possible and only ctx or the session can make
// the call fail).
func calls(ns string) []call {
	return []call{
		{"Create", func(ctx context.Context, s backends.Session) error {
			_, err := s.Create(ctx, ns+"/fresh", nil)
			return err
		}},
		{"CreateSequential", func(ctx context.Context, s backends.Session) error {
			_, err := s.CreateSequential(ctx, ns, "seq-", nil)
			return err
		}},
		{"Get", func(ctx context.Context, s backends.Session) error {
			_, _, err := s.Get(ctx, ns+"/there")
			return err
		}},
		{"Delete", func(ctx context.Context, s backends.Session) error {
			return s.Delete(ctx, ns+"/there")
		}},
		{"Children", func(ctx context.Context, s backends.Session) error {
			_, err := s.Children(ctx, ns)
			return err
		}},
		{"EnsurePath", func(ctx context.Context, s backends.Session) error {
			return s.EnsurePath(ctx, ns+"/dir/sub")
		}},
		{"ExistsW", func(ctx context.Context, s backends.Session) error {
			_, _, _, err := s.ExistsW(ctx, ns+"/there")
			return err
		}},
		{"ChildrenW", func(ctx context.Context, s backends.Session) error {
			_, _, err := s.ChildrenW(ctx, ns)
			return err
		}},
	}
}

// timed runs f and fails t if it takes longer than promptBound.
func timed(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(promptBound):
		t.Fatalf("%s did not return within %v", what, promptBound)
	}
	return nil
}

func testClosedSession(t *testing.T, e *env) {
	other := e.session(t)
	ensure(t, other, e.ns)
	create(t, other, e.p("there"), nil)

	s := e.session(t)
	visible(t, s, e.p("there"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, c := range calls(e.ns) {
		err := timed(t, c.name+" on a closed session", func() error { return c.do(opCtx(t), s) })
		if !errors.Is(err, backends.ErrSessionLost) {
			t.Errorf("%s on a closed session: err = %v, want ErrSessionLost", c.name, err)
		}
	}
	// Nothing reached the server: the node is still there.
	if _, _, err := other.Get(opCtx(t), e.p("there")); err != nil {
		t.Errorf("Delete on a closed session removed the node: %v", err)
	}
}

func testCancelledContext(t *testing.T, e *env) {
	s := e.session(t)
	ensure(t, s, e.ns)
	create(t, s, e.p("there"), nil)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()

	for _, c := range calls(e.ns) {
		err := timed(t, c.name+" with a cancelled ctx", func() error { return c.do(cancelled, s) })
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled ctx: err = %v, want context.Canceled", c.name, err)
		}
		err = timed(t, c.name+" with an expired ctx", func() error { return c.do(expired, s) })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with an expired ctx: err = %v, want context.DeadlineExceeded", c.name, err)
		}
	}
	// The session is still usable, and the node is intact.
	if _, _, err := s.Get(opCtx(t), e.p("there")); err != nil {
		t.Errorf("Get after cancelled calls: %v", err)
	}

	// The Backend's own blocking calls too.
	err := timed(t, "NewSession with a cancelled ctx", func() error {
		s, err := e.b.NewSession(cancelled)
		if err == nil {
			s.Close()
		}
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("NewSession with a cancelled ctx: err = %v, want context.Canceled", err)
	}
	err = timed(t, "Preflight with a cancelled ctx", func() error {
		_, err := e.b.Preflight(cancelled)
		return err
	})
	if err == nil {
		t.Error("Preflight with a cancelled ctx succeeded")
	}
	if a, ok := e.b.(backends.Admin); ok {
		err = timed(t, "Admin.List with a cancelled ctx", func() error {
			_, err := a.List(cancelled, e.ns)
			return err
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("List with a cancelled ctx: err = %v, want context.Canceled", err)
		}
		err = timed(t, "Admin.DeleteTree with a cancelled ctx", func() error { return a.DeleteTree(cancelled, e.ns) })
		if !errors.Is(err, context.Canceled) {
			t.Errorf("DeleteTree with a cancelled ctx: err = %v, want context.Canceled", err)
		}
		if _, _, err := s.Get(opCtx(t), e.p("there")); err != nil {
			t.Errorf("DeleteTree with a cancelled ctx removed the node: %v", err)
		}
	}
	if sc, ok := e.b.(backends.Scraper); ok {
		err = timed(t, "Scrape with a cancelled ctx", func() error {
			_, err := sc.Scrape(cancelled)
			return err
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Scrape with a cancelled ctx: err = %v, want context.Canceled", err)
		}
	}
}

func admin(t *testing.T, e *env) backends.Admin {
	t.Helper()
	a, ok := e.b.(backends.Admin)
	if !ok {
		t.Fatalf("%s backend does not implement backends.Admin", e.kind)
	}
	return a
}

func list(t *testing.T, a backends.Admin, p string) []string {
	t.Helper()
	got, err := a.List(opCtx(t), p)
	if err != nil {
		t.Fatalf("List(%s): %v", p, err)
	}
	slices.Sort(got)
	return got
}

func testAdmin(t *testing.T, e *env) {
	a := admin(t, e)
	s := e.session(t)
	top := e.p("t")
	ensure(t, s, top+"/b/c")
	create(t, s, top+"/a", nil)
	create(t, s, top+"/b/c/x", nil)
	createSeq(t, s, top+"/b/c", "s-")
	keep := e.p("keep")
	create(t, s, keep, nil)

	if got := list(t, a, top); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("List(%s) = %v, want [a b]", top, got)
	}
	if got := list(t, a, top+"/b/c"); len(got) != 2 || got[1] != "x" {
		t.Errorf("List(b/c) = %v, want [s-... x]", got)
	}
	if got := list(t, a, top+"/a"); len(got) != 0 {
		t.Errorf("List of a leaf = %v, want empty", got)
	}

	if err := a.DeleteTree(opCtx(t), top); err != nil {
		t.Fatalf("DeleteTree(%s): %v", top, err)
	}
	for _, p := range []string{top + "/a", top + "/b/c/x", top + "/b/c", top} {
		if _, _, err := s.Get(opCtx(t), p); !errors.Is(err, backends.ErrNoNode) {
			t.Errorf("Get(%s) after DeleteTree: err = %v, want ErrNoNode", p, err)
		}
	}
	if got, err := a.List(opCtx(t), top); err == nil && len(got) != 0 {
		t.Errorf("List(%s) after DeleteTree = %v", top, got)
	}
	// Only that subtree went.
	if _, _, err := s.Get(opCtx(t), keep); err != nil {
		t.Errorf("DeleteTree(%s) removed its sibling %s: %v", top, keep, err)
	}
	if got := list(t, a, e.ns); !slices.Equal(got, []string{"keep"}) {
		t.Errorf("List(namespace) after DeleteTree = %v, want [keep]", got)
	}
	// The session that owned the deleted ephemerals is unharmed.
	create(t, s, top+"-again", nil)
}

func testDeleteTreeRefuses(t *testing.T, e *env) {
	a := admin(t, e)
	s := e.session(t)
	ensure(t, s, e.ns)
	probe := e.p("still-here")
	create(t, s, probe, nil)

	for _, p := range []string{
		"/", "", "/zkbench", "/zkbench/", backends.Root, "zkbench/x", e.ns + "/..",
		"/zkbench/../zkbench", "/zkbench/./" + e.ns[len("/zkbench/"):], "/other",
	} {
		if backends.InNamespace(p) {
			t.Fatalf("suite bug: %q is in the namespace", p)
		}
		if err := a.DeleteTree(opCtx(t), p); err == nil {
			t.Errorf("DeleteTree(%q) succeeded; it must refuse paths outside the namespace", p)
		}
	}
	if _, _, err := s.Get(opCtx(t), probe); err != nil {
		t.Fatalf("a refused DeleteTree removed %s: %v", probe, err)
	}
	if got := list(t, a, e.ns); !slices.Equal(got, []string{"still-here"}) {
		t.Errorf("List(namespace) = %v, want [still-here]", got)
	}
}
