package native

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// zooKeeperLock is go-zookeeper's zk.Lock on the backend session's zk.Conn.
//
// Algorithm (the library's): create a protected ephemeral sequential node
// <path>/_c_<guid>-lock-N, list the children, hold if N is lowest, else GetW
// the next lower node and list again when it fires.
//
// Herd behaviour: each waiter watches only its predecessor, so a release
// wakes one waiter (the recipe suite checks it with the servers' counts, the
// instrument seeing none of it).
//
// What the wrapper adds, because zk.Lock has no context and leaves its node
// behind on error: Lock runs in a goroutine and Acquire returns when ctx ends
// or the session is lost. It then deletes, on a fresh bounded context, every
// child of <path> this session owns (it is waiting, so none is a held lock),
// and leaves a "ghost" goroutine that waits for the abandoned Lock call to
// return and unlocks or sweeps whatever it made. The next Acquire on this
// Lock waits for the ghost first, so a sweep never races a live attempt.
// The ghost ends at the latest when the connection closes. The sweep
// assumes one Lock per session per path, as every recipe here does.
//
// Token: the lock node's sequence number (zk.Lock keeps the node private;
// it is read by reflection rather than spending a request on the czxid the
// library never reads). It grows with every grant of this lock.
type zooKeeperLock struct {
	s     backends.Session
	conn  *zk.Conn
	path  string
	opt   recipes.Options
	held  *zk.Lock
	ghost chan struct{}
}

var _ Lock = (*zooKeeperLock)(nil)

func newZooKeeperLock(s backends.Session, zs ZooKeeperSession, path string, o recipes.Options) *zooKeeperLock {
	return &zooKeeperLock{s: s, conn: zs.Conn(), path: path, opt: o}
}

func (l *zooKeeperLock) ClientCountsVisible() bool { return false }

// Acquire runs zk.Lock and returns when it does, when ctx ends (ctx's error)
// or when the session ends (an error matching recipes.ErrLockLost), cleaning
// up as described on the type.
func (l *zooKeeperLock) Acquire(ctx context.Context) (recipes.Grant, error) {
	if l.held != nil {
		return recipes.Grant{}, fmt.Errorf("native: acquire %s: %w", l.path, ErrHeld)
	}
	if l.ghost != nil {
		select {
		case <-l.ghost:
			l.ghost = nil
		case <-ctx.Done():
			return recipes.Grant{}, l.fail(ctx.Err())
		case <-l.s.Done():
			return recipes.Grant{}, l.fail(recipe.LockLost(nil))
		}
	}
	zl := zk.NewLock(l.conn, l.path, zk.WorldACL(zk.PermAll))
	done := make(chan error, 1)
	go func() { done <- zl.Lock() }()
	select {
	case err := <-done:
		if err == nil && recipe.Ended(l.s) {
			err = recipe.LockLost(nil)
		}
		if err != nil {
			return recipes.Grant{}, l.fail(l.afterError(ctx, err))
		}
		l.held = zl
		return recipes.Grant{Token: sequenceOf(zl), Lost: l.s.Done()}, nil
	case <-ctx.Done():
		return recipes.Grant{}, l.fail(l.abandon(ctx, zl, done, ctx.Err()))
	case <-l.s.Done():
		return recipes.Grant{}, l.fail(l.abandon(ctx, zl, done, recipe.LockLost(nil)))
	}
}

// afterError classifies a failed zk.Lock and removes the node it left.
func (l *zooKeeperLock) afterError(ctx context.Context, err error) error {
	if recipe.Ended(l.s) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing) {
		return recipe.LockLost(err)
	}
	if serr := l.sweep(ctx); serr != nil {
		return fmt.Errorf("%w (removing own nodes: %v)", err, serr)
	}
	return err
}

// abandon leaves zl's Lock call running in a ghost goroutine, sweeps this
// session's nodes now, and returns cause.
func (l *zooKeeperLock) abandon(ctx context.Context, zl *zk.Lock, done <-chan error, cause error) error {
	ghost := make(chan struct{})
	l.ghost = ghost
	go func() {
		defer close(ghost)
		if err := <-done; err == nil {
			_ = zl.Unlock()
			return
		}
		if !recipe.Ended(l.s) {
			_ = l.sweep(context.Background())
		}
	}()
	if recipe.IsLost(cause) {
		return cause
	}
	if err := l.sweep(ctx); err != nil {
		return fmt.Errorf("%w (removing own nodes: %v)", cause, err)
	}
	return cause
}

// sweep deletes every child of the lock path whose ephemeral owner is this
// session, on a fresh context bounded by the cleanup timeout. Only called
// while this client holds nothing on the path.
func (l *zooKeeperLock) sweep(ctx context.Context) error {
	fctx, cancel := recipe.Fresh(ctx, l.opt.CleanupTimeout)
	defer cancel()
	var children []string
	err := call(fctx, func() (err error) { children, _, err = l.conn.Children(l.path); return err })
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	owner := l.conn.SessionID()
	for _, name := range children {
		p := l.path + "/" + name
		var stat *zk.Stat
		err := call(fctx, func() (err error) { _, stat, err = l.conn.Exists(p); return err })
		if err != nil {
			return err
		}
		if stat == nil || stat.EphemeralOwner != owner {
			continue
		}
		err = call(fctx, func() error { return l.conn.Delete(p, -1) })
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return nil
}

// Release runs zk.Unlock, returning on ctx's end (the delete still lands).
// A node already gone or a dead session returns an error matching
// recipes.ErrLockLost.
func (l *zooKeeperLock) Release(ctx context.Context) error {
	zl := l.held
	l.held = nil
	return releaseCalled(ctx, l.s, l.path, zl != nil, zl.Unlock, nodeOrSessionGone)
}

// nodeOrSessionGone reports whether a failed zk.Unlock found its node or
// its session gone.
func nodeOrSessionGone(err error) bool {
	return errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing)
}

func (l *zooKeeperLock) fail(err error) error { return acquireFailed(l.path, err) }

// call runs a context-less go-zookeeper request and returns when it does or
// when ctx ends; the request itself finishes (or fails with the connection)
// in the background.
func call(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sequenceOf reads the sequence number of a held zk.Lock's node, kept in its
// unexported seq field (go-zookeeper v1.0.4).
func sequenceOf(zl *zk.Lock) int64 {
	f := reflect.ValueOf(zl).Elem().FieldByName("seq")
	if !f.IsValid() || !f.CanInt() {
		return 0
	}
	return f.Int()
}
