package recipes

import (
	"context"
	"errors"
)

// UnlockData is what a revoker writes to a holder's node to ask it to let
// go (the ZooKeeper recipes page's revocable shared lock: setData "unlock").
const UnlockData = "unlock"

// ErrNotHolder: a revocation named a node that holds no lock (it is not
// first in its queue, or already gone).
var ErrNotHolder = errors.New("recipes: not a lock holder")

// RevocableGrant is a grant of a revocable shared lock.
type RevocableGrant struct {
	Grant
	// Node is the holder's own node: what a revoker writes to.
	Node string
	// Revoked is closed once a revoker asked the holder to let go (its
	// node's data became UnlockData) or took the lock away (its node was
	// deleted). The holder is expected to finish its clean-up and Release.
	Revoked <-chan struct{}
}

// Revocable is a shared lock whose holder watches its own node, so that
// another client can ask it to release. Used by one goroutine on one
// session, as RWLock.
type Revocable interface {
	// Acquire is RWLock.Acquire; the grant also says where the holder's
	// node is and when it was asked to let go.
	Acquire(ctx context.Context, mode Mode) (RevocableGrant, error)
	// Release gives the lock up; ErrNotHeld if not held.
	Release(ctx context.Context) error
}

// Revoker asks the holders of a revocable lock to let go.
type Revoker interface {
	// Holders lists the nodes that hold the lock at path now (one writer,
	// or the readers before the first writer), in queue order.
	Holders(ctx context.Context, path string) ([]string, error)
	// Revoke asks the holder of node to let go and returns once it did or
	// ctx ended. It reports forced when the revoker deleted the node
	// itself after a grace period (a holder that had not let go by then
	// loses the lock while it may still act on it: only fencing stops its
	// late writes). ErrNotHolder if node is gone before the ask.
	Revoke(ctx context.Context, node string) (forced bool, err error)
}
