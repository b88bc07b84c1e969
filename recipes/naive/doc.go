// Package naive holds the herd-prone recipes zkbench measures against the
// herd-free ones in recipes/fair. They are correct (at most one holder,
// leader or barrier crossing) but wasteful: one change wakes every waiter,
// and all but one go back to sleep. They are written once against
// backends.Session and run unchanged on ZooKeeper and etcd.
package naive

import "errors"

// ErrHeld is returned by Acquire on a lock this client already holds.
var ErrHeld = errors.New("naive: lock already held by this client")
