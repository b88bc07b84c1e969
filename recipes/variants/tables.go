package variants

import (
	"context"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/fair"
	"github.com/zkbench/zkbench/recipes/naive"
	"github.com/zkbench/zkbench/recipes/native"
)

// The tables, one per family. Each builds its variants with opts (the
// cleanup timeout) on every call.

// LockMaker makes one client's lock named path on its own session. Only
// native can fail: its error matches native.ErrUnsupported when the session
// (after unwrapping decorators) is neither etcd nor ZooKeeper.
type LockMaker func(s backends.Session, path string) (recipes.Lock, error)

// Locks is the lock family:
//
//	naive           create-to-grab one lock node; every waiter watches it,
//	                and a release wakes all N-1 (herd)
//	naive-children  sequential queue; every waiter watches the children, and
//	                a release (or an arrival) wakes all of them (herd)
//	fair            sequential queue; each waiter watches its predecessor,
//	                and a release wakes one; O(1) bytes a handoff on both
//	                (ZooKeeper: Dequeue's data change, etcd: Predecessor)
//	                and at start-up (Node.Prev on both); ZooKeeper lists
//	                14-byte names only after a waiter left otherwise
//	                (cancelled, expired)
//	native          etcd concurrency.Mutex, go-zookeeper zk.Lock: queues that
//	                watch the predecessor (a release wakes one), as baselines
func Locks(opts ...recipes.Option) Family[LockMaker] {
	return newFamily("lock",
		Variant[LockMaker]{Name: Naive, ClientCounts: true,
			New: func(s backends.Session, path string) (recipes.Lock, error) { return naive.New(s, path, opts...), nil }},
		Variant[LockMaker]{Name: NaiveChildren, FIFO: true, ClientCounts: true,
			New: func(s backends.Session, path string) (recipes.Lock, error) {
				return naive.NewChildren(s, path, opts...), nil
			}},
		Variant[LockMaker]{Name: Fair, HerdFree: true, FIFO: true, ClientCounts: true, ListedName: ShortName,
			New: func(s backends.Session, path string) (recipes.Lock, error) { return fair.New(s, path, opts...), nil }},
		Variant[LockMaker]{Name: Native, HerdFree: true, FIFO: true,
			New: func(s backends.Session, path string) (recipes.Lock, error) { return native.NewLock(s, path, opts...) }},
	)
}

// Elections is the leader election family (latch, selector, observer):
//
//	naive   create-to-grab one leader node; every candidate and observer
//	        watches it, and a leader loss wakes them all (herd)
//	fair    sequential candidates, each watches its predecessor, and a
//	        leader loss wakes one; observers watch only the leader's node
//	native  etcd's concurrency.Election (each candidate watches its
//	        predecessor), as a baseline; etcd only: on ZooKeeper every call
//	        fails with recipes.ErrUnsupported
func Elections(opts ...recipes.Option) Family[recipes.Election] {
	return newFamily("election",
		Variant[recipes.Election]{Name: Naive, New: naive.Election(opts...), ClientCounts: true},
		Variant[recipes.Election]{Name: Fair, New: fair.Election(opts...), HerdFree: true, FIFO: true, ClientCounts: true},
		Variant[recipes.Election]{Name: Native, New: native.Election(opts...), HerdFree: true, FIFO: true,
			Backends: []backends.Kind{backends.Etcd}},
	)
}

// DoubleBarriers is the double barrier family:
//
//	naive  every participant watches the members list (herd): each arrival
//	       and departure wakes everyone still waiting
//	fair   the ZooKeeper recipes page's barrier: enter waits on a ready node
//	       the N-th arrival makes; on leave the lowest waits on the highest
//	       and the rest on the lowest
func DoubleBarriers(opts ...recipes.Option) Family[recipes.DoubleBarrierFactory] {
	return newFamily("double barrier",
		Variant[recipes.DoubleBarrierFactory]{Name: Naive, New: naive.NewDoubleBarrierFactory(opts...), ClientCounts: true},
		Variant[recipes.DoubleBarrierFactory]{Name: Fair, New: fair.NewDoubleBarrierFactory(opts...), HerdFree: true,
			ClientCounts: true},
	)
}

// SemaphoreMaker makes one client's counting semaphore named path, with
// permits permits, on its own session; the error matches
// recipes.ErrPermits if permits < 1.
type SemaphoreMaker func(s backends.Session, path string, permits int) (recipes.Semaphore, error)

// Semaphores is the counting semaphore family (K holders at once):
//
//	naive  sequential queue; the first K hold; every waiter watches the
//	       children, and a release (or an arrival) wakes all of them (herd)
//	fair   Curator's InterProcessSemaphoreV2: waiters queue on a fair lock
//	       (the gate) and only its holder watches the leases, so a release
//	       wakes one client and the gate's handoff one more
//
// No native: neither go-zookeeper nor etcd's client (concurrency, the
// experimental recipes) has a semaphore; Curator's, in Java, is fair.
func Semaphores(opts ...recipes.Option) Family[SemaphoreMaker] {
	return newFamily("semaphore",
		Variant[SemaphoreMaker]{Name: Naive, FIFO: true, ClientCounts: true,
			New: func(s backends.Session, path string, permits int) (recipes.Semaphore, error) {
				return naive.NewSemaphore(s, path, permits, opts...)
			}},
		Variant[SemaphoreMaker]{Name: Fair, HerdFree: true, FIFO: true, ClientCounts: true,
			New: func(s backends.Session, path string, permits int) (recipes.Semaphore, error) {
				return fair.NewSemaphore(s, path, permits, opts...)
			}},
	)
}

// LockFactory adapts a lock variant's LockMaker to recipes.LockFactory,
// which cannot fail: a construction error (native on an unsupported session)
// is returned by every Acquire of the lock it makes, and Release returns
// recipes.ErrNotHeld. Call v.New directly to see the error at construction.
func LockFactory(v Variant[LockMaker]) recipes.LockFactory {
	return func(s backends.Session, path string) recipes.Lock {
		l, err := v.New(s, path)
		if err != nil {
			return brokenLock{err: err}
		}
		return l
	}
}

// brokenLock is a lock that could not be built.
type brokenLock struct{ err error }

func (b brokenLock) Acquire(context.Context) (recipes.Grant, error) { return recipes.Grant{}, b.err }

func (b brokenLock) Release(context.Context) error {
	return fmt.Errorf("variants: release: %w", recipes.ErrNotHeld)
}

// Simple barrier family.

// Polling is the simple barrier variant that re-reads the barrier node
// instead of watching it.
const Polling = "polling"

// SimpleBarriers is the simple barrier family (the recipes page's barrier:
// the barrier is up while its node exists):
//
//	fair     every waiter watches the barrier node (ExistsW): its removal
//	         notifies every waiter once, which is the job, not a herd
//	polling  every waiter re-reads the node every poll (<= 0: the default):
//	         no notification, but requests a waiter that grow with the wait
func SimpleBarriers(poll time.Duration, opts ...recipes.Option) Family[recipes.BarrierFactory] {
	return newFamily("simple barrier",
		Variant[recipes.BarrierFactory]{Name: Fair, New: fair.NewBarrierFactory(opts...), HerdFree: true, ClientCounts: true},
		Variant[recipes.BarrierFactory]{Name: Polling, New: fair.NewPollingBarrierFactory(poll, opts...), HerdFree: true, ClientCounts: true},
	)
}

// Two-phase commit family.

// Two-phase commit variant names.
const (
	// AllWatch: every site watches every vote and decides for itself.
	AllWatch = "all-watch"
	// Coordinated: only the coordinator watches the votes; the sites
	// watch its decision.
	Coordinated = "coordinated"
)

// TwoPhases is the two-phase commit family (the recipes page's two-phased
// commit; every site makes its own ephemeral nodes, so a failed site is
// seen):
//
//	all-watch    every site watches the sites and votes and decides: each
//	             vote notifies every site, O(n²) notifications a transaction
//	coordinated  only the coordinator watches them and writes the decision
//	             that each site watches: O(n)
func TwoPhases() Family[recipes.TwoPhase] {
	return newFamily("two-phase commit",
		Variant[recipes.TwoPhase]{Name: AllWatch, New: naive.AllWatch{}, ClientCounts: true},
		Variant[recipes.TwoPhase]{Name: Coordinated, New: fair.Coordinated{}, HerdFree: true, ClientCounts: true},
	)
}

// Group membership family.

// Group membership variant names.
const (
	// Relist: a children watch and a full listing on every change.
	Relist = "relist"
	// Delta: a watch that delivers only the change.
	Delta = "delta"
)

// Groups is the group membership family (the recipes page's group
// membership):
//
//	relist  every member watches the group's children and lists it on
//	        every change: O(N) bytes a member a change
//	delta   a watch that stays armed and delivers each change: etcd's
//	        prefix watch from a revision, ZooKeeper's persistent recursive
//	        watch (addWatch) after one listing; each member gets only the
//	        change, O(1) bytes
func Groups() Family[recipes.GroupFactory] {
	return newFamily("group membership",
		Variant[recipes.GroupFactory]{Name: Relist, New: fair.NewRelistGroup, ClientCounts: true},
		Variant[recipes.GroupFactory]{Name: Delta, New: native.NewDeltaGroup},
	)
}

// Queue variants: the recipe page's queue and the herd-free one, beside
// naive and native.

// Recipe is the ZooKeeper recipes page's own algorithm where it is neither
// the naive nor the herd-free variant (the queue's batch consumer).
const Recipe = "recipe"

// Handoff is the queue whose producers hand each item to one idle
// consumer (recipes/fair's HandoffQueue).
const Handoff = "handoff"

// QueueVariant says what a queue variant promises beyond Variant's fields.
type QueueVariant struct {
	recipes.QueueFactory
	// Delivery of an item whose consumer is lost between Take and Ack.
	Delivery recipes.Delivery
	// Priorities: the variant serves items by priority (--priorities).
	Priorities bool
}

// Queues is the distributed queue family:
//
//	naive   every idle consumer watches the items and, on any change,
//	        lists and races for the first: one item wakes every idle
//	        consumer and all but one fail their claim; at most once
//	recipe  the recipes page's: a consumer works through the list it got
//	        before it lists again (with priorities it drops the list when
//	        the queue changes); idle consumers still all wake; at most once
//	fair    idle consumers queue like lock waiters and only the head of
//	        the line watches the items: one item wakes one consumer (and
//	        its successor in the line); at least once (ephemeral claims)
//	handoff a producer hands the item to one idle consumer, in one
//	        conditional write; idle consumers watch only their own node:
//	        one notification an item; at most once
//	native  etcd's experimental recipe Queue: every idle consumer watches
//	        the prefix (herd); at most once; etcd only, no priorities
func Queues(opts ...recipes.Option) Family[QueueVariant] {
	return newFamily("queue",
		Variant[QueueVariant]{Name: Naive, ClientCounts: true,
			New: QueueVariant{QueueFactory: naive.Queue{}, Delivery: recipes.AtMostOnce, Priorities: true}},
		Variant[QueueVariant]{Name: Recipe, ClientCounts: true,
			New: QueueVariant{QueueFactory: fair.BatchQueue{}, Delivery: recipes.AtMostOnce, Priorities: true}},
		Variant[QueueVariant]{Name: Fair, HerdFree: true, FIFO: true, ClientCounts: true,
			New: QueueVariant{QueueFactory: fair.NewQueue(opts...), Delivery: recipes.AtLeastOnce, Priorities: true}},
		Variant[QueueVariant]{Name: Handoff, HerdFree: true, ClientCounts: true,
			New: QueueVariant{QueueFactory: fair.NewHandoffQueue(opts...), Delivery: recipes.AtMostOnce, Priorities: true}},
		Variant[QueueVariant]{Name: Native, Backends: []backends.Kind{backends.Etcd},
			New: QueueVariant{QueueFactory: native.Queue{}, Delivery: recipes.AtMostOnce}},
	)
}
