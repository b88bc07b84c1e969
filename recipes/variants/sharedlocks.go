package variants

import (
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/fair"
	"github.com/zkbench/zkbench/recipes/naive"
	"github.com/zkbench/zkbench/recipes/native"
)

// The shared lock tables: shared (read/write) locks and revocable shared
// locks, the ZooKeeper recipes page's two lock recipes beyond the lock.

// Variant names of the revocable family.
const (
	// Consent: the revoker asks (writes "unlock" to the holder's node) and
	// waits for the holder to release after its own clean-up.
	Consent = "consent"
	// Forced: the revoker asks, and deletes the holder's node itself if it
	// is still there after a grace period.
	Forced = "forced"
)

// RWLockMaker makes one client's shared lock named path on its own
// session. Only native can fail: with an error matching
// recipes.ErrUnsupported on ZooKeeper, whose Go client has no shared lock.
type RWLockMaker func(s backends.Session, path string) (recipes.RWLock, error)

// RWLocks is the shared lock family:
//
//	naive   the recipe's queue, but every waiter watches the children: any
//	        change wakes all N-1 (herd), readers and writers alike
//	fair    the recipes page's shared lock: a reader watches the nearest
//	        writer before it, a writer the node before its own; a writer's
//	        release wakes the readers it admits (all needed), a reader's at
//	        most one writer
//	native  etcd's experimental recipes.RWMutex (the same algorithm with
//	        bounded ranges), as a baseline; etcd only: go-zookeeper has no
//	        shared lock
func RWLocks(opts ...recipes.Option) Family[RWLockMaker] {
	return newFamily("shared lock",
		Variant[RWLockMaker]{Name: Naive, ClientCounts: true,
			New: func(s backends.Session, path string) (recipes.RWLock, error) {
				return naive.NewRWLock(s, path, opts...), nil
			}},
		Variant[RWLockMaker]{Name: Fair, HerdFree: true, ClientCounts: true,
			New: func(s backends.Session, path string) (recipes.RWLock, error) {
				return fair.NewRWLock(s, path, opts...), nil
			}},
		Variant[RWLockMaker]{Name: Native, HerdFree: true, Backends: []backends.Kind{backends.Etcd},
			New: func(s backends.Session, path string) (recipes.RWLock, error) {
				return native.NewRWLock(s, path, opts...)
			}},
	)
}

// RevocableMaker builds one revocable variant's holders and revoker.
type RevocableMaker struct {
	// Lock makes one client's revocable shared lock named path.
	Lock func(s backends.Session, path string) recipes.Revocable
	// Revoker makes a revoker on its own session.
	Revoker func(s backends.Session) recipes.Revoker
}

// Revocables is the revocable shared lock family, both on recipes/fair's
// Revocable (the recipes page's: each client watches its own node's data):
//
//	consent  the revoker writes "unlock" and waits for the holder's release
//	forced   the same, but the revoker deletes the holder's node once grace
//	         has passed since the ask: the next in line is granted while the
//	         late holder may still act (only a fence rejects its writes)
//
// A revocation notifies the one holder it names: both are herd-free.
// go-zookeeper and etcd have no revocable lock of their own.
func Revocables(grace time.Duration, opts ...recipes.Option) Family[RevocableMaker] {
	lock := func(s backends.Session, path string) recipes.Revocable { return fair.NewRevocable(s, path, opts...) }
	return newFamily("revocable lock",
		Variant[RevocableMaker]{Name: Consent, HerdFree: true, ClientCounts: true,
			New: RevocableMaker{Lock: lock, Revoker: func(s backends.Session) recipes.Revoker { return fair.NewRevoker(s) }}},
		Variant[RevocableMaker]{Name: Forced, HerdFree: true, ClientCounts: true,
			New: RevocableMaker{Lock: lock, Revoker: func(s backends.Session) recipes.Revoker {
				return fair.NewForcingRevoker(s, grace)
			}}},
	)
}
