package workloads

import (
	"context"
	"errors"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/ctxsleep"
	"github.com/zkbench/zkbench/recipes"
)

// The steps every workload's clients share.

const (
	// releaseTimeout bounds one Release, which runs on a fresh context so
	// that a stopping case still lets its lock go.
	releaseTimeout = 10 * time.Second
	// errorBackoff is the pause after a failed acquisition, so a broken
	// client does not spin.
	errorBackoff = 10 * time.Millisecond
)

// errorKind names an error for Result.Errors.
func errorKind(err error) string {
	switch {
	case errors.Is(err, backends.ErrUnknownOutcome):
		return "unknown_outcome"
	case errors.Is(err, backends.ErrSessionLost):
		return "session_lost"
	case errors.Is(err, recipes.ErrLockLost):
		return "lock_lost"
	case errors.Is(err, recipes.ErrNotHeld):
		return "not_held"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, backends.ErrNoNode):
		return "no_node"
	case errors.Is(err, backends.ErrNodeExists):
		return "node_exists"
	}
	return "other"
}

func sessionEnded(s backends.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// sleepCtx sleeps for d and reports false if ctx ended first: the shared
// ctxsleep.Sleep, under the name the workloads' many callers use.
var sleepCtx = ctxsleep.Sleep
