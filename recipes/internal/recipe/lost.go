package recipe

import (
	"errors"
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
)

// A lost session ends every recipe's hold, each under its own sentinel:
// locks report recipes.ErrLockLost (LockLost), elections
// recipes.ErrLeadershipLost and barriers recipes.ErrBarrierBroken (LostAs,
// WrapLost). Every such error also matches backends.ErrSessionLost.

// LockLost reports the end of the session as a lock error: the result
// matches both recipes.ErrLockLost and backends.ErrSessionLost with
// errors.Is. cause, if not nil, is kept in the chain. The lock recipes use
// it; the election and barrier recipes use LostAs and WrapLost.
func LockLost(cause error) error {
	switch {
	case cause == nil:
		cause = backends.ErrSessionLost
	case errors.Is(cause, recipes.ErrLockLost):
		return cause
	case !errors.Is(cause, backends.ErrSessionLost):
		cause = fmt.Errorf("%w: %w", backends.ErrSessionLost, cause)
	}
	return fmt.Errorf("%w: %w", recipes.ErrLockLost, cause)
}

// IsLost reports whether err means the session (and so every lock it held or
// queued for) is gone.
func IsLost(err error) bool {
	return errors.Is(err, backends.ErrSessionLost) || errors.Is(err, recipes.ErrLockLost)
}

// LostAs returns an error that matches both sentinel (the recipe's own, such
// as recipes.ErrLeadershipLost or recipes.ErrBarrierBroken) and
// backends.ErrSessionLost with errors.Is: the session ended.
func LostAs(sentinel error) error {
	return fmt.Errorf("%w: %w", sentinel, backends.ErrSessionLost)
}

// WrapLost turns err into the recipe's error: a lost session becomes
// sentinel (still matching backends.ErrSessionLost, with err's chain kept),
// anything else is returned as is.
func WrapLost(sentinel, err error) error {
	if err == nil || errors.Is(err, sentinel) {
		return err
	}
	if errors.Is(err, backends.ErrSessionLost) {
		return fmt.Errorf("%w: %w", sentinel, err)
	}
	return err
}
