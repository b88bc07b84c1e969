package recipe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// Leftovers is one lock's memory of the nodes it may have left on the server:
// nodes its session still owns although no call of the lock uses them. A
// failed call leaves one when removing its node fails (a cancelled or timed
// out Acquire whose cleanup delete finds no quorum, a Release whose delete
// and retry both fail) or when a create's outcome is unknown (the node may
// have been made, or may still be made by a request the server applies
// late). Such a node never goes by itself while the session lives: in a
// queue every later waiter waits behind it, and a single lock node stays
// held. So the lock calls Tidy first thing in its next Acquire and Release.
//
// A lock knows its nodes by a tag unique to the lock (Tag): the queue locks
// put it in their node names, so one listing shows which nodes are theirs,
// and the single-node lock writes it as its node's data. Leftovers records
// that there may be something to remove, not paths: the listing or read
// that finds the lock's nodes also catches a create of unknown outcome,
// whose name a backend may not report.
//
// A Leftovers is used by the goroutine that uses its lock.
type Leftovers struct {
	s       backends.Session
	timeout time.Duration
	// find returns the paths of this lock's nodes that exist now.
	find    func(ctx context.Context) ([]string, error)
	unsure  bool // a node of this lock may exist that no call uses
	doubted bool // unsure was ever set; never cleared
}

// Tag returns a fresh tag for one lock: 12 base-36 characters (62 random
// bits), so that two locks' tags never meet in practice while the names
// that carry them stay short (ZooKeeper's listings must fit its client's
// receive buffer).
func Tag() string {
	const width = 12
	t := strconv.FormatUint(rand.Uint64N(4738381338321616896), 36) // 36^12
	return strings.Repeat("0", width-len(t)) + t
}

// QueueLeftovers returns the Leftovers of a queue lock whose nodes are made
// by CreateSequential under parent with prefix, a prefix that carries the
// lock's tag. It finds them with one listing of parent. Cleanup on a fresh
// context is bounded by timeout.
func QueueLeftovers(s backends.Session, parent, prefix string, timeout time.Duration) *Leftovers {
	return &Leftovers{s: s, timeout: timeout, find: func(ctx context.Context) ([]string, error) {
		children, err := s.Children(ctx, parent)
		if errors.Is(err, backends.ErrNoNode) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return Own(children, prefix, ""), nil
	}}
}

// TaggedLeftovers returns the Leftovers of a queue lock whose nodes are made
// by Session.Enqueue under parent with tag. It finds them with
// Session.Tagged (one range on etcd; on ZooKeeper a listing and a read per
// child, paid only after a failure). Cleanup on a fresh context is bounded
// by timeout.
func TaggedLeftovers(s backends.Session, parent, tag string, timeout time.Duration) *Leftovers {
	return &Leftovers{s: s, timeout: timeout, find: func(ctx context.Context) ([]string, error) {
		nodes, err := s.Tagged(ctx, parent, tag)
		if err != nil {
			return nil, err
		}
		return Own(nodes, "", ""), nil
	}}
}

// NodeLeftovers returns the Leftovers of a lock whose one node is path,
// created by this lock with data (its tag). It finds the node with one Get
// and takes it as this lock's only if the data match: the path is shared
// by every client, and after a delete of unknown outcome it may hold
// another client's node. Cleanup on a fresh context is bounded by timeout.
func NodeLeftovers(s backends.Session, path string, data []byte, timeout time.Duration) *Leftovers {
	return &Leftovers{s: s, timeout: timeout, find: func(ctx context.Context) ([]string, error) {
		got, _, err := s.Get(ctx, path)
		switch {
		case errors.Is(err, backends.ErrNoNode):
			return nil, nil
		case err != nil:
			return nil, err
		case !bytes.Equal(got, data):
			return nil, nil
		}
		return []string{path}, nil
	}}
}

// Own returns the paths of the children made by the lock whose node names
// start with prefix, except the one named except: names that start with
// prefix, or with a shared lock's mode between SeqPrefix and the rest of
// prefix (Queue.NameFor). A prefix of "" takes every child.
func Own(children []backends.Node, prefix, except string) []string {
	var own []string
	for _, c := range children {
		if c.Name != except && ownedBy(c.Name, prefix) {
			own = append(own, c.Path)
		}
	}
	return own
}

// Suspect records that a node of this lock may exist that no call uses.
func (l *Leftovers) Suspect() { l.unsure, l.doubted = true, true }

// Pending reports whether Tidy has something to look for.
func (l *Leftovers) Pending() bool { return l.unsure }

// Doubted reports whether a failure was ever suspected. A create of unknown
// outcome may land long after its caller gave up (a request the server
// applies once it has a quorum again), so a lock that ever doubted treats
// any node of its own it sees, other than the one it uses, as a leftover.
func (l *Leftovers) Doubted() bool { return l.doubted }

// Tidy removes this lock's leftover nodes on ctx and says how many it
// deleted: nothing, and no request, unless a failure was suspected since the
// last successful Tidy. Then it finds the lock's nodes (one listing or read)
// and deletes them. If that fails, the suspicion stays for the next call and
// Tidy returns the error; the caller must not make a new node meanwhile. A
// lost session counts as tidy (the server removes its nodes) and returns a
// LockLost error.
func (l *Leftovers) Tidy(ctx context.Context) (removed int, err error) {
	if !l.unsure {
		return 0, nil
	}
	paths, err := l.find(ctx)
	if err != nil {
		return 0, l.tidyErr(fmt.Errorf("finding leftover nodes: %w", err))
	}
	for _, p := range paths {
		if err := l.s.Delete(ctx, p); err != nil && !errors.Is(err, backends.ErrNoNode) {
			return removed, l.tidyErr(fmt.Errorf("removing leftover node %s: %w", p, err))
		}
		removed++
	}
	l.unsure = false
	return removed, nil
}

func (l *Leftovers) tidyErr(err error) error {
	if IsLost(err) {
		l.unsure = false
		return LockLost(err)
	}
	return err
}

// Delete deletes paths, nodes of this lock that no call uses, on ctx. If a
// delete fails, the failure is suspected (Tidy finds them again) and its
// error returned.
func (l *Leftovers) Delete(ctx context.Context, paths []string) error {
	for _, p := range paths {
		if err := l.s.Delete(ctx, p); err != nil && !errors.Is(err, backends.ErrNoNode) {
			if IsLost(err) {
				return LockLost(err)
			}
			l.Suspect()
			return fmt.Errorf("removing leftover node %s: %w", p, err)
		}
	}
	return nil
}

// Create runs create on a context that outlives ctx by at most the cleanup
// timeout (Outlive), so that a caller who gives up mid-request still learns
// which node was made and can remove it. If ctx ended meanwhile, the node is removed (Remove)
// and ctx's error returned. A create error that does not prove that nothing
// was made (anything but ErrNodeExists, ErrNoNode or a lost session) is
// suspected: the node may exist, or appear later.
func (l *Leftovers) Create(ctx context.Context, create func(context.Context) (backends.Node, error)) (backends.Node, error) {
	if err := ctx.Err(); err != nil {
		return backends.Node{}, err
	}
	fctx, cancel := Outlive(ctx, l.timeout)
	n, err := create(fctx)
	cancel()
	switch {
	case err == nil:
	case IsLost(err):
		return backends.Node{}, LockLost(err)
	case errors.Is(err, backends.ErrNodeExists) || errors.Is(err, backends.ErrNoNode):
		return backends.Node{}, err
	default:
		l.Suspect()
		return backends.Node{}, err
	}
	if cerr := ctx.Err(); cerr != nil {
		if rerr := l.Remove(ctx, n.Path); rerr != nil {
			return backends.Node{}, fmt.Errorf("%w (removing %s: %v)", cerr, n.Path, rerr)
		}
		return backends.Node{}, cerr
	}
	return n, nil
}

// Remove deletes path, a node of this lock, on a fresh context bounded by
// the cleanup timeout (see the package's Remove). If that fails, the node
// is suspected, for the lock's next call to remove.
func (l *Leftovers) Remove(ctx context.Context, path string) error {
	err := Remove(ctx, l.s, path, l.timeout)
	if err != nil {
		l.Suspect()
	}
	return err
}

// Release deletes path, the node the lock is held by, as the package's
// Release does. If the delete and its retry both fail, the node is
// suspected, for the lock's next call to remove.
func (l *Leftovers) Release(ctx context.Context, path string) error {
	return l.suspectFailed(Release(ctx, l.s, path, l.timeout))
}

// Dequeue is Release with Session.Dequeue as the delete, for a node made
// by Session.Enqueue.
func (l *Leftovers) Dequeue(ctx context.Context, me backends.Node) error {
	return l.suspectFailed(ReleaseWith(ctx, l.s, l.timeout, func(ctx context.Context) error {
		return l.s.Dequeue(ctx, me)
	}))
}

func (l *Leftovers) suspectFailed(err error) error {
	if err != nil && !IsLost(err) {
		l.Suspect()
	}
	return err
}

// ownedBy reports whether name is a node of the lock whose names start with
// prefix (see Own).
func ownedBy(name, prefix string) bool {
	if strings.HasPrefix(name, prefix) {
		return true
	}
	rest, ok := strings.CutPrefix(name, SeqPrefix)
	tag, tagged := strings.CutPrefix(prefix, SeqPrefix)
	if !ok || !tagged {
		return false
	}
	for _, m := range []recipes.Mode{recipes.Read, recipes.Write} {
		if strings.HasPrefix(rest, Kind(m)+tag) {
			return true
		}
	}
	return false
}
