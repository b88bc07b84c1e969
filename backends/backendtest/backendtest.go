// Package backendtest is the conformance suite that every backends.Backend
// passes: the one place that says what the Session contract means in
// practice, run against real servers (real ZooKeeper, real etcd).
//
// A backend's package calls it from an external test package:
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, func(t *testing.T) backends.Backend { return testcluster.ZooKeeperBackend(t) })
//	}
//
// Run's subtests run one after the other, never in parallel, so that the
// server-counter checks (ServerCounts) see only the suite's own traffic on
// the test binary's shared server. Do not call Run from a parallel test, nor
// alongside other tests that use the same server at the same time.
//
// Each subtest calls open for a fresh Backend and works in a fresh namespace
// (testcluster.TestNamespace), removed when the subtest ends.
//
// Where the contract leaves a behaviour to the backend, the subtest says so
// and checks each kind's documented behaviour: a node's parent must exist on
// ZooKeeper but not on etcd, and EnsurePath makes children only on ZooKeeper.
package backendtest

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// Bounds of the suite. They are generous for a loaded 2-core machine; a
// backend that needs more is broken, not slow.
const (
	// opTimeout bounds every call the suite expects to succeed.
	opTimeout = 15 * time.Second
	// eventBound: a watch event arrives, or a closed channel is seen closed,
	// within this long after the change.
	eventBound = 10 * time.Second
	// promptBound: a call on a closed session or with a done ctx returns
	// within this long.
	promptBound = 2 * time.Second
	// quietWindow: how long the suite listens to make sure that a watch
	// does NOT fire.
	quietWindow = 500 * time.Millisecond
)

type subtest struct {
	name string
	f    func(t *testing.T, e *env)
}

var subtests = []subtest{
	{"CreateGetDelete", testCreateGetDelete},
	{"CreateRev", testCreateRev},
	{"EnsurePath", testEnsurePath},
	{"ChildrenDirectOnly", testChildrenDirectOnly},
	{"ChildrenOrder", testChildrenOrder},
	{"SequentialConcurrent", testSequentialConcurrent},
	{"SequentialCausalOrder", testSequentialCausalOrder},
	{"EnqueuePredecessor", testEnqueuePredecessor},
	{"EnqueuePrev", testEnqueuePrev},
	{"Tagged", testTagged},
	{"Dequeue", testDequeue},
	{"PredecessorGone", testPredecessorGone},
	{"PredecessorOf", testPredecessorOf},
	{"Update", testUpdate},
	{"EphemeralGoneAfterClose", testEphemeralGoneAfterClose},
	{"DoneClosesOnClose", testDoneClosesOnClose},
	{"ExistsWDelete", testExistsWDelete},
	{"ExistsWCreate", testExistsWCreate},
	{"WatchCancel", testWatchCancel},
	{"NoMissedDelete", testNoMissedDelete},
	{"NoMissedCreate", testNoMissedCreate},
	{"ChildrenW", testChildrenW},
	{"ChildrenWNoMissedChange", testChildrenWNoMissedChange},
	{"ChildrenWIgnoresGrandchildren", testChildrenWIgnoresGrandchildren},
	{"ClosedSession", testClosedSession},
	{"CancelledContext", testCancelledContext},
	{"Admin", testAdmin},
	{"DeleteTreeRefusesOutsideNamespace", testDeleteTreeRefuses},
	{"ServerCounts", testServerCounts},
	// Data writes and the watch that stays armed (config workload, exec).
	{"Set", testSet},
	{"WatchData", testWatchData},
}

// Run runs the conformance suite. open returns a fresh Backend for one
// subtest (closed by open's own cleanup, or by the suite if open leaves it
// to the caller: the suite closes nothing it did not open).
//
// A last subtest, NamespacesRemoved, checks that every namespace the suite
// used is gone from /zkbench once its subtest ended.
func Run(t *testing.T, open func(t *testing.T) backends.Backend) {
	var used []string
	for _, st := range subtests {
		t.Run(st.name, func(t *testing.T) {
			b := open(t)
			e := &env{b: b, kind: b.Kind(), ns: testcluster.TestNamespace(t, b)}
			used = append(used, path.Base(e.ns))
			st.f(t, e)
		})
	}
	t.Run("NamespacesRemoved", func(t *testing.T) {
		a, ok := open(t).(backends.Admin)
		if !ok {
			t.Skip("backend does not implement backends.Admin")
		}
		left, err := a.List(opCtx(t), backends.Root)
		if err != nil && !errors.Is(err, backends.ErrNoNode) {
			t.Fatalf("List(%s): %v", backends.Root, err)
		}
		for _, ns := range used {
			if slices.Contains(left, ns) {
				t.Errorf("namespace %s/%s left behind after its subtest", backends.Root, ns)
			}
		}
	})
}

// env is one subtest's backend and namespace.
type env struct {
	b    backends.Backend
	kind backends.Kind
	ns   string
}

// p joins elements under the namespace.
func (e *env) p(elem ...string) string {
	return path.Join(append([]string{e.ns}, elem...)...)
}

// session opens a session on b, closed when t ends.
func session(t *testing.T, b backends.Backend) backends.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	defer cancel()
	s, err := b.NewSession(ctx)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (e *env) session(t *testing.T) backends.Session { return session(t, e.b) }

// ownerAndWatcher opens two sessions: an owner, which makes the folder dir,
// and a watcher, which waits until it can list it.
func (e *env) ownerAndWatcher(t *testing.T, dir string) (owner, watcher backends.Session) {
	t.Helper()
	owner, watcher = e.session(t), e.session(t)
	ensure(t, owner, dir)
	dirVisible(t, watcher, dir)
	return owner, watcher
}

// opCtx is a context for one call expected to succeed.
func opCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

func ensure(t *testing.T, s backends.Session, p string) {
	t.Helper()
	if err := s.EnsurePath(opCtx(t), p); err != nil {
		t.Fatalf("EnsurePath(%s): %v", p, err)
	}
}

func create(t *testing.T, s backends.Session, p string, data []byte) backends.Node {
	t.Helper()
	n, err := s.Create(opCtx(t), p, data)
	if err != nil {
		t.Fatalf("Create(%s): %v", p, err)
	}
	return n
}

// set Sets p to data through s.
func set(t *testing.T, s backends.Session, p, data string) {
	t.Helper()
	if err := s.Set(opCtx(t), p, []byte(data)); err != nil {
		t.Fatalf("Set(%s): %v", p, err)
	}
}

func createSeq(t *testing.T, s backends.Session, parent, prefix string) backends.Node {
	t.Helper()
	n, err := s.CreateSequential(opCtx(t), parent, prefix, nil)
	if err != nil {
		t.Fatalf("CreateSequential(%s, %s): %v", parent, prefix, err)
	}
	return n
}

func del(t *testing.T, s backends.Session, p string) {
	t.Helper()
	if err := s.Delete(opCtx(t), p); err != nil {
		t.Fatalf("Delete(%s): %v", p, err)
	}
}

func children(t *testing.T, s backends.Session, parent string) []backends.Node {
	t.Helper()
	ns, err := s.Children(opCtx(t), parent)
	if err != nil {
		t.Fatalf("Children(%s): %v", parent, err)
	}
	return ns
}

func names(ns []backends.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}

// eventually polls cond every 20ms until it holds or bound passes.
func eventually(t *testing.T, bound time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (%s)", what, bound, detail)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// visible waits until s sees p (ZooKeeper followers may lag the leader, so
// a node made through another session is not at once visible everywhere).
func visible(t *testing.T, s backends.Session, p string) {
	t.Helper()
	eventually(t, eventBound, "node "+p+" visible", func() (bool, string) {
		_, _, err := s.Get(opCtx(t), p)
		return err == nil, fmt.Sprint(err)
	})
}

// dirVisible waits until s can list p, a path made with EnsurePath through
// another session (on etcd, which has no directories, at once).
func dirVisible(t *testing.T, s backends.Session, p string) {
	t.Helper()
	eventually(t, eventBound, "path "+p+" listable", func() (bool, string) {
		_, err := s.Children(opCtx(t), p)
		return err == nil, fmt.Sprint(err)
	})
}

// gone waits until s no longer sees p.
func gone(t *testing.T, s backends.Session, p string, bound time.Duration) {
	t.Helper()
	eventually(t, bound, "node "+p+" gone", func() (bool, string) {
		_, _, err := s.Get(opCtx(t), p)
		return errors.Is(err, backends.ErrNoNode), fmt.Sprint(err)
	})
}

// nextEvent waits for one event on ch; it fails if ch closes first or
// nothing comes within eventBound.
func nextEvent(t *testing.T, ch <-chan backends.Event, what string) backends.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("%s: watch channel closed without an event", what)
		}
		return ev
	case <-time.After(eventBound):
		t.Fatalf("%s: no event within %v", what, eventBound)
	}
	panic("unreachable")
}

// closedWithin fails unless ch is closed, with no further event, within
// bound.
func closedWithin(t *testing.T, ch <-chan backends.Event, bound time.Duration, what string) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("%s: unexpected event %v %s; want the channel closed", what, ev.Type, ev.Path)
		}
	case <-time.After(bound):
		t.Fatalf("%s: channel not closed within %v", what, bound)
	}
}

// quiet fails if ch delivers anything (event or close) within quietWindow.
func quiet(t *testing.T, ch <-chan backends.Event, what string) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("%s: unexpected event %v %s", what, ev.Type, ev.Path)
		}
		t.Fatalf("%s: watch channel closed early", what)
	case <-time.After(quietWindow):
	}
}

func wantEvent(t *testing.T, ev backends.Event, typ backends.EventType, p string) {
	t.Helper()
	if ev.Type != typ || ev.Path != p {
		t.Fatalf("event = {%v %s}, want {%v %s}", ev.Type, ev.Path, typ, p)
	}
}

// sortedBySeq reports whether ns is ordered as Children promises: by Seq
// ascending, then by name.
func sortedBySeq(ns []backends.Node) bool {
	return slices.IsSortedFunc(ns, func(a, b backends.Node) int {
		if a.Seq != b.Seq {
			if a.Seq < b.Seq {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
}
