package recipe

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkbench/zkbench/backends"
)

// The tokens a grant or a term carries: Leadership.Token is the leader
// node's create revision (CreateRev); recipes.Grant.Token is a fencing token,
// the lock node's create revision for a single-node lock (LockToken) and
// SeqToken for a queue lock's sequential node.

// CreateRev returns n's create revision, reading the node once if the call
// that returned n did not report it (ZooKeeper listings leave it zero). The
// elections' Leadership.Token is it. Errors are the Get's, unmapped.
func CreateRev(ctx context.Context, s backends.Session, n backends.Node) (int64, error) {
	if n.CreateRev != 0 {
		return n.CreateRev, nil
	}
	_, got, err := s.Get(ctx, n.Path)
	if err != nil {
		return 0, err
	}
	if got.CreateRev == 0 {
		return 0, fmt.Errorf("recipe: %s has no create revision", n.Path)
	}
	return got.CreateRev, nil
}

// LockToken is the fencing token of a single-node lock whose node is n: its
// create revision (CreateRev). A node already gone, or a lost session,
// returns a LockLost error: the lock is not held.
func LockToken(ctx context.Context, s backends.Session, n backends.Node) (int64, error) {
	t, err := CreateRev(ctx, s, n)
	if errors.Is(err, backends.ErrNoNode) || IsLost(err) {
		return 0, LockLost(err)
	}
	return t, err
}

// SeqToken is the fencing token of a queue lock's node n, just made by
// CreateSequential: its create revision where the create reported one
// (etcd), else its sequence number + 1 (ZooKeeper, whose create cannot
// return the czxid without a read). Sequence numbers grow with every node
// made under the lock's parent, which is all a fencing token for that one
// lock needs; +1 because a token of 0 means none. It costs no request. If
// the parent is removed and made again, the sequence restarts: tokens are
// comparable only within one life of the parent.
func SeqToken(n backends.Node) int64 {
	if n.CreateRev != 0 {
		return n.CreateRev
	}
	return n.Seq + 1
}
