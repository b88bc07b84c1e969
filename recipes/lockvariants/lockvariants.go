// Package lockvariants names the lock recipes a workload can run, without
// globals: Variants builds the table on each call.
//
//	naive           create-to-grab: every waiter watches one node (herd)
//	naive-children  sequential queue, every waiter watches the children (herd)
//	fair            sequential queue, each waiter watches its predecessor
//	native          the client library's own lock (etcd concurrency.Mutex,
//	                go-zookeeper zk.Lock), as a baseline
package lockvariants

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/fair"
	"github.com/zkbench/zkbench/recipes/naive"
	"github.com/zkbench/zkbench/recipes/native"
)

// Variant names.
const (
	Naive         = "naive"
	NaiveChildren = "naive-children"
	Fair          = "fair"
	Native        = "native"
)

// ErrUnknown: no lock variant has the name asked for.
var ErrUnknown = errors.New("lockvariants: unknown lock variant")

// Variant is one lock algorithm.
type Variant struct {
	Name string
	// New makes one client's lock on its own session. Only native can fail:
	// its error matches native.ErrUnsupported when the session (after
	// unwrapping decorators) is neither etcd nor ZooKeeper.
	New func(s backends.Session, path string) (recipes.Lock, error)
	// HerdFree: a release wakes one waiter, not all of them.
	HerdFree bool
	// FIFO: waiters are granted the lock in the order they queued.
	FIFO bool
	// ClientCounts: backends/instrument sees the lock's requests, watches and
	// wake-ups. False for native, whose requests go straight to the
	// library's client: its client-side counts are absent, not zero.
	ClientCounts bool
}

// Variants returns every lock variant by name.
func Variants() map[string]Variant {
	return map[string]Variant{
		Naive: {Name: Naive, ClientCounts: true,
			New: func(s backends.Session, path string) (recipes.Lock, error) { return naive.New(s, path), nil }},
		NaiveChildren: {Name: NaiveChildren, FIFO: true, ClientCounts: true,
			New: func(s backends.Session, path string) (recipes.Lock, error) { return naive.NewChildren(s, path), nil }},
		Fair: {Name: Fair, HerdFree: true, FIFO: true, ClientCounts: true,
			New: func(s backends.Session, path string) (recipes.Lock, error) { return fair.New(s, path), nil }},
		Native: {Name: Native, HerdFree: true, FIFO: true,
			New: func(s backends.Session, path string) (recipes.Lock, error) { return native.NewLock(s, path) }},
	}
}

// Names returns the variant names, sorted.
func Names() []string {
	vs := Variants()
	names := make([]string, 0, len(vs))
	for n := range vs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the variant called name, or an error matching ErrUnknown
// that lists the known names.
func Lookup(name string) (Variant, error) {
	v, ok := Variants()[name]
	if !ok {
		return Variant{}, fmt.Errorf("%w %q (known: %v)", ErrUnknown, name, Names())
	}
	return v, nil
}

// Factory adapts v to recipes.LockFactory, which cannot fail: a construction
// error (native on an unsupported session) is returned by every Acquire of
// the lock it makes, and Release returns recipes.ErrNotHeld. Call v.New
// directly to see the error at construction.
func (v Variant) Factory() recipes.LockFactory {
	return func(s backends.Session, path string) recipes.Lock {
		l, err := v.New(s, path)
		if err != nil {
			return brokenLock{err: err}
		}
		return l
	}
}

// Factories returns every variant's Factory by name.
func Factories() map[string]recipes.LockFactory {
	vs := Variants()
	fs := make(map[string]recipes.LockFactory, len(vs))
	for n, v := range vs {
		fs[n] = v.Factory()
	}
	return fs
}

// brokenLock is a lock that could not be built.
type brokenLock struct{ err error }

func (b brokenLock) Acquire(context.Context) (recipes.Grant, error) { return recipes.Grant{}, b.err }

func (b brokenLock) Release(context.Context) error {
	return fmt.Errorf("lockvariants: release: %w", recipes.ErrNotHeld)
}
