package recipe

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// SeqPrefix starts the name of every waiter's sequential node in a queue
// lock; the lock's own tag follows it.
const SeqPrefix = "lock-"

// Queue is what the queue locks (recipes/fair's Lock, recipes/naive's
// ChildrenLock) share: a sequential node per waiter under the lock's path,
// the path made once, leftovers of failed calls removed first, and the
// grant, release and error wrapping around a variant's own wait. The locks
// differ only in how a waiter waits until its node is first (WaitFirst).
//
// A queue made by NewQueue names its nodes with CreateSequential under
// Prefix, so a listing shows which are its own (49-byte names a waiter in a
// ZooKeeper listing). One made by NewTaggedQueue makes them with
// Session.Enqueue under Tag, so that they are as short as the backend
// allows (14 bytes on ZooKeeper) and carry Prev, and finds its own with
// Session.Tagged: free on etcd, a read per waiter on ZooKeeper, after a
// failure only.
type Queue struct {
	S      backends.Session
	Path   string
	Prefix string // SeqPrefix + tag + "-" (NewQueue)
	Tag    string // the lock's tag (NewTaggedQueue), else ""
	Left   *Leftovers

	pkg     string // error prefix: "fair", "naive"
	errHeld error
	parent  *Parent
	me      backends.Node
	held    bool
}

// WaitFirst blocks until me is first in line and returns the notifications
// it consumed.
type WaitFirst func(ctx context.Context, me backends.Node) (wakeups int, err error)

// NewQueue returns the queue of the lock at path on s. pkg prefixes its
// errors; errHeld is returned by Acquire while held. It makes no request.
func NewQueue(pkg string, errHeld error, s backends.Session, path string, timeout time.Duration) *Queue {
	prefix := SeqPrefix + Tag() + "-"
	return &Queue{S: s, Path: path, Prefix: prefix, Left: QueueLeftovers(s, path, prefix, timeout),
		pkg: pkg, errHeld: errHeld, parent: NewParent(s, path)}
}

// NewTaggedQueue is NewQueue for a queue whose nodes Session.Enqueue makes
// under a tag unique to the lock and Session.Tagged finds again.
func NewTaggedQueue(pkg string, errHeld error, s backends.Session, path string, timeout time.Duration) *Queue {
	tag := Tag()
	return &Queue{S: s, Path: path, Tag: tag, Left: TaggedLeftovers(s, path, tag, timeout),
		pkg: pkg, errHeld: errHeld, parent: NewParent(s, path)}
}

// Acquire removes leftovers, queues a node, waits with wait until it is
// first, and grants; see the locks' Acquire docs for what cancelling and a
// lost session do.
func (q *Queue) Acquire(ctx context.Context, wait WaitFirst) (recipes.Grant, error) {
	return q.AcquireAs(ctx, "", wait)
}

// AcquireAs is Acquire for a queue whose nodes say what they wait for, as a
// shared lock's "read-" and "write-" do: the node's name starts with
// NameFor(kind) (CreateSequential queues only). Leftovers are found by the
// lock's tag, whatever kind they were made as.
func (q *Queue) AcquireAs(ctx context.Context, kind string, wait WaitFirst) (recipes.Grant, error) {
	if q.held {
		return recipes.Grant{}, fmt.Errorf("%s: acquire %s: %w", q.pkg, q.Path, q.errHeld)
	}
	if _, err := q.Left.Tidy(ctx); err != nil {
		return recipes.Grant{}, q.fail(err)
	}
	me, err := q.parent.Create(ctx, func(ctx context.Context) (backends.Node, error) {
		return q.Left.Create(ctx, func(c context.Context) (backends.Node, error) {
			if q.Tag != "" {
				return q.S.Enqueue(c, q.Path, q.Tag)
			}
			return q.S.CreateSequential(c, q.Path, q.NameFor(kind), nil)
		})
	})
	if err != nil {
		return recipes.Grant{}, q.fail(err)
	}
	wakeups, err := wait(ctx, me)
	if err == nil && Ended(q.S) {
		err = LockLost(nil)
	}
	if err != nil {
		if !IsLost(err) {
			if rerr := q.Left.Remove(ctx, me.Path); rerr != nil {
				err = fmt.Errorf("%w (removing %s: %v)", err, me.Path, rerr)
			}
		}
		return recipes.Grant{}, q.fail(err)
	}
	q.me, q.held = me, true
	return recipes.Grant{Token: SeqToken(me), Wakeups: wakeups, Lost: q.S.Done()}, nil
}

// NameFor returns the name prefix of this queue's nodes made as kind:
// Prefix without a kind; with one, SeqPrefix, kind, then the rest of Prefix
// (the lock's tag), so that the nodes of one kind share a prefix whatever
// lock made them: a shared lock's reader asks for the nearest writer by it
// (Session.PredecessorOf), one bounded range on etcd.
func (q *Queue) NameFor(kind string) string {
	if kind == "" {
		return q.Prefix
	}
	return SeqPrefix + kind + strings.TrimPrefix(q.Prefix, SeqPrefix)
}

// Held returns the node the lock is held by, if held.
func (q *Queue) Held() (backends.Node, bool) { return q.me, q.held }

// Release deletes the held node (Session.Dequeue in a tagged queue; retried on a fresh bounded context if ctx
// ends first; left to the next call if that fails too). Not held, it removes
// leftovers and returns recipes.ErrNotHeld.
func (q *Queue) Release(ctx context.Context) error {
	if !q.held {
		if _, err := q.Left.Tidy(ctx); err != nil {
			return fmt.Errorf("%s: release %s: %w (%w)", q.pkg, q.Path, recipes.ErrNotHeld, err)
		}
		return fmt.Errorf("%s: release %s: %w", q.pkg, q.Path, recipes.ErrNotHeld)
	}
	q.held = false
	release := func() error { return q.Left.Release(ctx, q.me.Path) }
	if q.Tag != "" {
		release = func() error { return q.Left.Dequeue(ctx, q.me) }
	}
	if err := release(); err != nil {
		return fmt.Errorf("%s: release %s: %w", q.pkg, q.Path, err)
	}
	return nil
}

// fail wraps an Acquire error; a lost session always matches
// recipes.ErrLockLost as well as backends.ErrSessionLost.
func (q *Queue) fail(err error) error {
	if IsLost(err) {
		err = LockLost(err)
	}
	return fmt.Errorf("%s: acquire %s: %w", q.pkg, q.Path, err)
}

// DeleteOwn deletes, in a Lock that ever suspected a leftover, the nodes of
// its own among children other than me (a create the server applied late).
// It reports whether it deleted any.
func (q *Queue) DeleteOwn(ctx context.Context, children []backends.Node, me string) (bool, error) {
	if !q.Left.Doubted() {
		return false, nil
	}
	own := Own(children, q.Prefix, me)
	if len(own) == 0 {
		return false, nil
	}
	return true, q.Left.Delete(ctx, own)
}

// DeleteStrays is DeleteOwn for a tagged queue: in a Lock that ever
// suspected a leftover, it finds the nodes of its own other than me with
// Session.Tagged and deletes them. It reports whether it deleted any.
// Without a failure it costs no request.
func (q *Queue) DeleteStrays(ctx context.Context, me backends.Node) (bool, error) {
	if !q.Left.Doubted() {
		return false, nil
	}
	nodes, err := q.S.Tagged(ctx, q.Path, q.Tag)
	if err != nil {
		return false, err
	}
	own := Own(nodes, "", me.Name)
	if len(own) == 0 {
		return false, nil
	}
	return true, q.Left.Delete(ctx, own)
}
