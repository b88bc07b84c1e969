package recipetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// env is the environment every suite's subtest works in: the subtest, the
// backend and its Admin, and the subtest's path in a fresh namespace
// (testcluster.TestNamespace, resolved through the backend and removed when
// the subtest ends). It opens the subtest's sessions and reads the tree as
// Admin sees it. Each suite's environment embeds it and adds its variant.
type env struct {
	t     *testing.T
	b     backends.Backend
	admin backends.Admin
	path  string
	// caught counts caughtUp's nodes, to name them.
	caught int
}

// newEnv is t's environment on b at <fresh namespace>/<name>.
func newEnv(t *testing.T, b backends.Backend, admin backends.Admin, name string) *env {
	return &env{t: t, b: b, admin: admin, path: testcluster.TestNamespace(t, b) + "/" + name}
}

// runSuite runs a suite's subtests on b, those named in only or all of
// them (see pick), one after the other, each in a fresh env at name made
// into the suite's own environment by newE.
func runSuite[E any](t *testing.T, b backends.Backend, name string, subtests []subtest[E], only []string, newE func(*env) E) {
	admin, ok := b.(backends.Admin)
	if !ok {
		t.Fatalf("backend %s does not implement backends.Admin", b.Kind())
	}
	for _, st := range pick(t, subtests, only) {
		t.Run(st.name, func(t *testing.T) { st.f(newE(newEnv(t, b, admin, name))) })
	}
}

// session opens a session on the backend, closed when the test ends.
func (e *env) session() backends.Session {
	e.t.Helper()
	s := within(e.t, "NewSession", e.b.NewSession)
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

// member is one simulated client: its own session, counted by instrument
// (so native recipes are also tested through Unwrap).
type member struct {
	id  string
	raw backends.Session
	s   backends.Session
	c   *instrument.Counters
}

func (m *member) events() int64 { return m.c.Snapshot().WatchEvents }

// base is the member itself, and the member of what embeds it.
func (m *member) base() *member { return m }
func (m *member) armed() int64  { return m.c.Snapshot().WatchesArmed }

// newMemberOn opens member id's session, closed when the test ends, with
// wrap (if not nil) applied to the raw session under the instrument
// decorator.
func (e *env) newMemberOn(id string, wrap func(backends.Session) backends.Session) *member {
	e.t.Helper()
	raw := e.session()
	s := raw
	if wrap != nil {
		s = wrap(raw)
	}
	c := &instrument.Counters{}
	return &member{id: id, raw: raw, s: instrument.Wrap(s, c), c: c}
}

// newMembers opens n members, named prefix0 to prefix<n-1>.
func (e *env) newMembers(prefix string, n int) []*member {
	e.t.Helper()
	ms := make([]*member, n)
	for i := range ms {
		ms[i] = e.newMemberOn(fmt.Sprintf("%s%d", prefix, i), nil)
	}
	return ms
}

// caughtUp has each of cs (clients, latches: anything built on a member)
// write a node of its own through its raw session, beside the env's path
// (not under it: it fires no watch of the recipes'). On a cluster a server
// may apply a write, and notify its clients of it, after the server that
// answered the writer did (a lagging ZooKeeper follower). A ZooKeeper
// session talks to one server, which answers the write only once it has
// applied everything before it: then it has sent and counted every
// notification it owed the member for earlier writes. An etcd client may
// send the write to another member than its watches'; there it proves
// nothing.
func caughtUp[C interface{ base() *member }](e *env, cs []C) {
	e.t.Helper()
	for _, c := range cs {
		m := c.base()
		e.caught++
		p := fmt.Sprintf("%s-caught-up-%d", e.path, e.caught)
		withinDo(e.t, "Create "+p, func(ctx context.Context) error {
			_, err := m.raw.Create(ctx, p, nil)
			return err
		})
	}
}

// list returns p's children as Admin sees them (none if p does not exist).
func (e *env) list(p string) []string {
	e.t.Helper()
	names, err := e.count(p)
	if err != nil {
		e.t.Fatalf("List %s: %v", p, err)
	}
	return names
}

// listIn lists each of dirs under the env's path, naming what it finds
// dir/name.
func (e *env) listIn(dirs ...string) []string {
	e.t.Helper()
	var out []string
	for _, d := range dirs {
		for _, n := range e.list(e.path + "/" + d) {
			out = append(out, d+"/"+n)
		}
	}
	return out
}

// within runs call under opTimeout and fails the test on its error, as
// "<what>: <error>".
func within[T any](t testing.TB, what string, call func(context.Context) (T, error)) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	v, err := call(ctx)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// withinDo is within for a call that returns only an error.
func withinDo(t testing.TB, what string, call func(context.Context) error) {
	t.Helper()
	within(t, what, func(ctx context.Context) (struct{}, error) { return struct{}{}, call(ctx) })
}

// concurrently runs f(0) to f(n-1), each on a goroutine of its own, waits
// for them all and returns the errors they returned.
func concurrently(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return slices.DeleteFunc(errs, func(err error) bool { return err == nil })
}

// count is list for goroutines other than the test's: it reports errors
// instead of failing.
func (e *env) count(p string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	names, err := e.admin.List(ctx, p)
	if errors.Is(err, backends.ErrNoNode) {
		err = nil
	}
	return names, err
}

// listBecomes waits until p has exactly n children.
func (e *env) listBecomes(p string, n int) {
	e.t.Helper()
	e.becomes(p, n, func() []string { return e.list(p) })
}

// cancelled cancels call's ctx with cancel and checks that call returns
// within promptBound (done closes) with context.Canceled (*err, read once
// done closed); it logs how long that took.
func (e *env) cancelled(call string, cancel func(), done <-chan struct{}, err *error) {
	e.t.Helper()
	start := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(promptBound):
		e.t.Fatalf("cancelled %s did not return within %v", call, promptBound)
	}
	if !errors.Is(*err, context.Canceled) {
		e.t.Fatalf("cancelled %s returned %v, want context.Canceled", call, *err)
	}
	e.t.Logf("cancelled %s returned after %v", call, time.Since(start).Round(time.Millisecond))
}

// becomes waits until list, what's nodes, returns exactly n names.
func (e *env) becomes(what string, n int, list func() []string) {
	e.t.Helper()
	var names []string
	e.eventuallyf(settleBound, func() bool {
		names = list()
		return len(names) == n
	}, func() string { return fmt.Sprintf("%s holds %q, want %d nodes", what, names, n) })
}

// eventually polls cond until it holds or bound passes, then fails with what.
func (e *env) eventually(bound time.Duration, what string, cond func() bool) {
	e.t.Helper()
	e.eventuallyf(bound, cond, func() string { return what })
}

// eventuallyf is eventually with the failure said by what once it fails.
func (e *env) eventuallyf(bound time.Duration, cond func() bool, what func() string) {
	e.t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("after %v: %s", bound, what())
		}
		time.Sleep(pollEvery)
	}
}
