package recipe

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// The two ways a queue lock's waiter waits for its turn: by listing the
// queue with a children watch (the herd: every change wakes every waiter;
// recipes/naive, WaitChildren) or by asking for the one node that keeps
// it out and watching that node alone (recipes/fair, WaitBehind). What
// keeps a listing's waiter out is its lock's Stand.

// Stand says where the waiter named me stands in children (a listing in
// queue order) and, when Behind, which node keeps it out.
type Stand func(children []backends.Node, me string) (backends.Node, Standing)

// FirstInLine is an exclusive lock's Stand: the first node holds; any
// other waits behind the node just before its own.
func FirstInLine(children []backends.Node, me string) (backends.Node, Standing) {
	return Blocking(children, me, recipes.Write)
}

// InMode is a shared lock's Stand for a waiter in mode (see Blocking).
func InMode(mode recipes.Mode) Stand {
	return func(children []backends.Node, me string) (backends.Node, Standing) {
		return Blocking(children, me, mode)
	}
}

// WaitChildren lists the queue with ChildrenW until me holds, sleeping
// until the children change, and counts the notifications it slept
// through. Nodes of this lock's own it lists besides me are deleted
// first (see DeleteOwn); that changes the children, so it lists again.
func (q *Queue) WaitChildren(ctx context.Context, me backends.Node, stand Stand) (wakeups int, err error) {
	for {
		woke, held, err := q.listAndWait(ctx, me, stand)
		if err != nil || held {
			return wakeups, err
		}
		if woke {
			wakeups++
		}
	}
}

func (q *Queue) listAndWait(ctx context.Context, me backends.Node, stand Stand) (woke, held bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	children, events, err := q.S.ChildrenW(wctx, q.Path)
	if err != nil {
		return false, false, err
	}
	// Deleting own leftovers changes the children: the watch fires anyway.
	if deleted, err := q.DeleteOwn(ctx, children, me.Name); deleted || err != nil {
		return false, false, err
	}
	switch _, st := stand(children, me.Name); st {
	case Gone:
		return false, false, ownGone(me)
	case Holds:
		return false, true, nil
	}
	woke, err = Await(ctx, q.S, events)
	return woke, false, err
}

// WaitBehind waits until no node of the queue whose name starts with
// prefix stands before me: it asks Session.PredecessorOf for the nearest
// such node and sleeps on it until it goes, then asks again. A shared
// lock's writer asks for any node (""), a reader for the nearest writer
// (WriterPrefix): the ZooKeeper recipes page's shared lock, each wait one
// bounded request on etcd and a listing on ZooKeeper. It counts the
// notifications consumed. A lock that ever suspected a leftover first lists
// the queue and deletes its own other nodes (DeleteOwn), at each turn.
func (q *Queue) WaitBehind(ctx context.Context, me backends.Node, prefix string) (wakeups int, err error) {
	for {
		if q.Left.Doubted() {
			children, err := q.S.Children(ctx, q.Path)
			if err != nil {
				return wakeups, err
			}
			if _, err := q.DeleteOwn(ctx, children, me.Name); err != nil {
				return wakeups, err
			}
		}
		block, ok, err := q.S.PredecessorOf(ctx, q.Path, prefix, me)
		switch {
		case errors.Is(err, backends.ErrNoNode):
			return wakeups, ownGone(me)
		case err != nil:
			return wakeups, err
		case !ok:
			return wakeups, nil
		}
		woke, err := AwaitGone(ctx, q.S, block.Path)
		if err != nil {
			return wakeups, err
		}
		if woke {
			wakeups++
		}
	}
}

// ownGone is the error of a waiter whose node vanished from the queue: the
// server removed it with the session, or a forced revocation deleted it.
func ownGone(me backends.Node) error {
	return LockLost(fmt.Errorf("own node %s is gone", me.Path))
}
