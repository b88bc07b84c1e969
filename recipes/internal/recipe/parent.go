package recipe

import (
	"context"
	"errors"

	"github.com/zkbench/zkbench/backends"
)

// Parent is the path under which a lock makes its nodes. It is made once
// per lock, on the first create, not on every Acquire: EnsurePath costs a
// round trip (an exists on ZooKeeper) even when the path is there. If a
// later create finds it missing (backends.ErrNoNode: someone removed it),
// it is made again and the create retried once. On etcd, which has no
// parents, it costs nothing.
//
// A Parent is used by the goroutine that uses its lock.
type Parent struct {
	s    backends.Session
	path string
	made bool
}

// NewParent returns the parent path of a lock on session s. It makes no
// request.
func NewParent(s backends.Session, path string) *Parent { return &Parent{s: s, path: path} }

// Create runs create on ctx: after making the parent path if this is the
// first call, and again, once, after making it if create returned
// ErrNoNode. Only a successful EnsurePath counts as made.
func (p *Parent) Create(ctx context.Context, create func(context.Context) (backends.Node, error)) (backends.Node, error) {
	if !p.made {
		if err := p.s.EnsurePath(ctx, p.path); err != nil {
			return backends.Node{}, err
		}
		p.made = true
	}
	n, err := create(ctx)
	if !errors.Is(err, backends.ErrNoNode) {
		return n, err
	}
	if err := p.s.EnsurePath(ctx, p.path); err != nil {
		return backends.Node{}, err
	}
	return create(ctx)
}
