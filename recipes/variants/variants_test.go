package variants

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/native"
)

// table is what TestNames reads of a Family.
type table interface {
	Names() []string
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		f    table
		want []string
	}{
		{Locks(), []string{Fair, Naive, NaiveChildren, Native}},
		{Elections(), []string{Fair, Naive, Native}},
		{DoubleBarriers(), []string{Fair, Naive}},
		{SimpleBarriers(0), []string{Fair, Polling}},
		{TwoPhases(), []string{AllWatch, Coordinated}},
		{Groups(), []string{Delta, Relist}},
		{Semaphores(), []string{Fair, Naive}},
	} {
		if got := tc.f.Names(); !slices.Equal(got, tc.want) {
			t.Errorf("%T.Names() = %v, want %v", tc.f, got, tc.want)
		}
	}
}

func TestLookup(t *testing.T) {
	locks := Locks()
	for _, n := range locks.Names() {
		v, err := locks.Lookup(n)
		if err != nil || v.Name != n || v.New == nil {
			t.Errorf("Lookup(%q) = %+v, %v", n, v, err)
		}
	}
	if _, err := locks.Lookup("herdless"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Lookup(unknown) error = %v, want ErrUnknown", err)
	}
	if v, _ := locks.Lookup(Native); v.ClientCounts {
		t.Errorf("native lock claims client-side counts")
	}
	for _, v := range locks.All() {
		if !v.Supports(backends.ZooKeeper) || !v.Supports(backends.Etcd) {
			t.Errorf("lock %s does not run on both backends", v.Name)
		}
	}
	elections := Elections()
	for _, v := range elections.All() {
		if v.New.Latch == nil || v.New.Selector == nil || v.New.Observer == nil {
			t.Errorf("election %s lacks a factory: %+v", v.Name, v.New)
		}
	}
	if v, _ := elections.Lookup(Native); v.Supports(backends.ZooKeeper) || !v.Supports(backends.Etcd) || v.ClientCounts {
		t.Errorf("native election: %+v, want etcd only, no client counts", v)
	}
	for _, v := range DoubleBarriers().All() {
		if v.New == nil || !v.ClientCounts {
			t.Errorf("double barrier %s: %+v", v.Name, v)
		}
	}
}

// foreignSession is a session of no known backend: only its type matters,
// native.NewLock must refuse it before calling any method.
type foreignSession struct{ backends.Session }

// wrapped is a decorator over a foreign session, to check that native
// unwraps and still refuses.
type wrapped struct{ backends.Session }

func (w wrapped) Unwrap() backends.Session { return w.Session }

func TestNativeUnsupportedSurfaces(t *testing.T) {
	s := wrapped{foreignSession{}}
	v, _ := Locks().Lookup(Native)
	if _, err := v.New(s, "/zkbench/x/lock"); !errors.Is(err, native.ErrUnsupported) {
		t.Fatalf("New on a foreign session: %v, want native.ErrUnsupported", err)
	}
	l := LockFactory(v)(s, "/zkbench/x/lock")
	if _, err := l.Acquire(context.Background()); !errors.Is(err, native.ErrUnsupported) {
		t.Errorf("Acquire of a lock that failed to build: %v, want native.ErrUnsupported", err)
	}
	if err := l.Release(context.Background()); !errors.Is(err, recipes.ErrNotHeld) {
		t.Errorf("Release of a lock that failed to build: %v, want ErrNotHeld", err)
	}
}

// TestSharedLockTables: the shared lock and revocable tables name their
// variants, native runs on etcd only, and a revocable variant builds both
// its lock and its revoker.
func TestSharedLockTables(t *testing.T) {
	for _, tc := range []struct {
		f    table
		want []string
	}{
		{RWLocks(), []string{Fair, Naive, Native}},
		{Revocables(time.Second), []string{Consent, Forced}},
	} {
		if got := tc.f.Names(); !slices.Equal(got, tc.want) {
			t.Errorf("%T.Names() = %v, want %v", tc.f, got, tc.want)
		}
	}
	v, err := RWLocks().Lookup(Native)
	if err != nil || v.Supports(backends.ZooKeeper) || !v.Supports(backends.Etcd) || v.ClientCounts {
		t.Errorf("native shared lock: %+v, %v: want etcd only, no client counts", v, err)
	}
	for _, v := range Revocables(time.Second).All() {
		if v.New.Lock == nil || v.New.Revoker == nil || !v.HerdFree {
			t.Errorf("revocable %s: %+v", v.Name, v)
		}
	}
	if _, err := Revocables(time.Second).Lookup("naive"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Lookup(naive) in the revocable table: %v, want ErrUnknown", err)
	}
}

// TestSemaphorePermits: a semaphore of no permits is refused at
// construction, before any request.
func TestSemaphorePermits(t *testing.T) {
	for _, v := range Semaphores().All() {
		if _, err := v.New(nil, "/zkbench/semaphore", 0); !errors.Is(err, recipes.ErrPermits) {
			t.Errorf("%s with 0 permits: %v, want recipes.ErrPermits", v.Name, err)
		}
	}
}
