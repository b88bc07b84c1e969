// Package naive holds the herd-prone lock recipes zkbench measures against
// the herd-free ones in recipes/fair. They are correct (at most one holder)
// but wasteful: a release wakes every waiter, and all but one go back to
// sleep. Both are written once against backends.Session and run unchanged on
// ZooKeeper and etcd.
package naive

import (
	"errors"
	"time"

	"github.com/zkbench/zkbench/recipes/internal/recipe"
)

// ErrHeld is returned by Acquire on a lock this client already holds.
var ErrHeld = errors.New("naive: lock already held by this client")

// Option configures a naive lock.
type Option func(*options)

type options struct {
	cleanupTimeout time.Duration
}

// WithCleanupTimeout bounds the fresh context on which a create runs to
// completion and on which a cancelled Acquire removes its own node.
// Default 5s; non-positive values keep the default.
func WithCleanupTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.cleanupTimeout = d
		}
	}
}

func newOptions(opts []Option) options {
	o := options{cleanupTimeout: recipe.DefaultCleanupTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
