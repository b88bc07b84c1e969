package fair

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/ctxsleep"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// Revocable is the ZooKeeper recipes page's revocable shared lock: RWLock
// whose every client watches its own node's data from right after the
// create, so that a revoker can ask the holder to let go by writing
// recipes.UnlockData to it (Revoker).
//
// Algorithm: as RWLock's, and right after the create the client arms an
// exists watch on its own node and reads its data (the recipes page's
// getData with a watch; the read after the arming catches a revocation
// written before it). Whenever the watch fires it reads again, and arms
// the watch again only if it was not asked to go. Data recipes.UnlockData, or the node gone (a forced revocation
// deleted it), closes the grant's Revoked channel; the holder is expected
// to clean up and Release. A waiter revoked before its grant learns it at
// the grant (Revoked is already closed).
//
// Herd behaviour: the own-node watch is one per client and only its
// revoker fires it: a revocation notifies exactly the holder it names.
// The wait is RWLock's. On ZooKeeper, whose watches cannot be removed, the
// own-node watch still armed at Release fires at the client's own delete:
// one notification per acquisition that nobody waits for
// (backends.LateWatchCounter counts it); etcd cancels it.
//
// Cost beyond RWLock: an exists and a get per acquisition, and per
// revocation a get more.
type Revocable struct {
	l      *RWLock
	cancel context.CancelFunc // stops the own-node watch
	wg     sync.WaitGroup
}

var _ recipes.Revocable = (*Revocable)(nil)

// NewRevocable returns the revocable shared lock named path on session s.
// It makes no request; options as NewRWLock's.
func NewRevocable(s backends.Session, path string, opts ...recipes.Option) *Revocable {
	return &Revocable{l: NewRWLock(s, path, opts...)}
}

// Acquire is RWLock.Acquire; the grant carries the holder's node and its
// Revoked channel. The own-node watch runs until Release, or until the
// attempt fails.
func (r *Revocable) Acquire(ctx context.Context, mode recipes.Mode) (recipes.RevocableGrant, error) {
	revoked := make(chan struct{})
	started := false
	g, err := r.l.acquire(ctx, mode, func(me backends.Node) {
		started = true
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		r.cancel = cancel
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			watchOwn(wctx, r.l.q.S, me.Path, revoked)
		}()
	})
	if err != nil {
		if started { // not a call refused before it queued (ErrHeld): that would stop the held grant's watch
			r.stop()
		}
		return recipes.RevocableGrant{}, err
	}
	me, _ := r.l.held()
	return recipes.RevocableGrant{Grant: g, Node: me.Path, Revoked: revoked}, nil
}

// Release stops the own-node watch and releases as RWLock.Release does.
// After a forced revocation the node is gone: Release then returns an
// error matching recipes.ErrLockLost.
func (r *Revocable) Release(ctx context.Context) error {
	r.stop()
	return r.l.Release(ctx)
}

func (r *Revocable) stop() {
	if r.cancel != nil {
		r.cancel()
		r.cancel = nil
	}
	r.wg.Wait()
}

// watchOwn watches node path until it says recipes.UnlockData or is gone
// (closing revoked), ctx ends or the session does. After a notification it
// reads the data before it arms the watch again, so that the ask, which
// ends the watch, leaves no watch armed (on ZooKeeper an abandoned watch
// would still fire, at the holder's own release).
func watchOwn(ctx context.Context, s backends.Session, path string, revoked chan struct{}) {
	for ctx.Err() == nil {
		exists, _, events, err := s.ExistsW(ctx, path)
		if err != nil {
			if recipe.Ended(s) || !ctxsleep.Sleep(ctx, 50*time.Millisecond) {
				return
			}
			continue
		}
		if !exists || askedToGo(ctx, s, path) {
			close(revoked)
			return
		}
		if _, err := recipe.Wait(ctx, s, events, nil); err != nil {
			return
		}
		if askedToGo(ctx, s, path) {
			close(revoked)
			return
		}
	}
}

// askedToGo reads path once: true if it is gone or says recipes.UnlockData.
// A read that fails otherwise says no: the watch that follows looks again.
func askedToGo(ctx context.Context, s backends.Session, path string) bool {
	data, _, err := s.Get(ctx, path)
	return errors.Is(err, backends.ErrNoNode) || (err == nil && string(data) == recipes.UnlockData)
}

// Revoker is recipes.Revoker for the revocable shared lock, on its own
// session. With a grace period (NewForcingRevoker) it deletes a holder's
// node that has not gone by then: the recipes page's "Freaking Laser
// Beams", which takes the lock from a holder that may still act on it.
type Revoker struct {
	s      backends.Session
	grace  time.Duration
	forces bool
}

var _ recipes.Revoker = (*Revoker)(nil)

// NewRevoker returns a revoker on s that asks and waits for the holder's
// consent.
func NewRevoker(s backends.Session) *Revoker { return &Revoker{s: s} }

// NewForcingRevoker returns a revoker on s that asks, and deletes the
// holder's node itself if it is still there grace after the ask.
func NewForcingRevoker(s backends.Session, grace time.Duration) *Revoker {
	return &Revoker{s: s, grace: grace, forces: true}
}

// Holders lists the holders of the lock at path (one listing). An absent
// path has none.
func (v *Revoker) Holders(ctx context.Context, path string) ([]string, error) {
	children, err := v.s.Children(ctx, path)
	if errors.Is(err, backends.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range recipe.Holders(children) {
		out = append(out, n.Path)
	}
	return out, nil
}

// Revoke writes recipes.UnlockData to node (backends.Updater) and waits,
// with an exists watch, until the node is gone: as long as ctx allows for
// consent, at most the grace period before deleting it when forcing.
// It returns recipes.ErrNotHolder if node is already gone.
func (v *Revoker) Revoke(ctx context.Context, node string) (forced bool, err error) {
	st, ok := v.s.(backends.Updater)
	if !ok {
		return false, fmt.Errorf("fair: revoke %s: %T cannot set data: %w", node, v.s, recipes.ErrUnsupported)
	}
	if err := st.Update(ctx, node, []byte(recipes.UnlockData)); errors.Is(err, backends.ErrNoNode) {
		return false, fmt.Errorf("fair: revoke %s: %w", node, recipes.ErrNotHolder)
	} else if err != nil {
		return false, fmt.Errorf("fair: revoke %s: %w", node, err)
	}
	wctx := ctx
	if v.forces {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, v.grace)
		defer cancel()
	}
	for {
		_, woke, err := waitGone(wctx, v.s, node)
		switch {
		case err == nil && !woke:
			return false, nil // gone
		case err == nil:
			continue // its data changed, or it went: look again
		case v.forces && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			if err := v.s.Delete(ctx, node); err != nil && !errors.Is(err, backends.ErrNoNode) {
				return false, fmt.Errorf("fair: revoke %s: forcing: %w", node, err)
			}
			return true, nil
		}
		return false, fmt.Errorf("fair: revoke %s: %w", node, recipe.WrapLost(recipes.ErrLockLost, err))
	}
}
