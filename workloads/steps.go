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

// errorKinds name errors for Result.Errors: the first that an error
// matches names it, and one that matches none is "other".
var errorKinds = []struct {
	err  error
	kind string
}{
	{backends.ErrUnknownOutcome, "unknown_outcome"},
	{backends.ErrSessionLost, "session_lost"},
	{recipes.ErrLockLost, "lock_lost"},
	{recipes.ErrNotHeld, "not_held"},
	{context.DeadlineExceeded, "timeout"},
	{backends.ErrNoNode, "no_node"},
	{backends.ErrNodeExists, "node_exists"},
}

// errorKind names an error for Result.Errors (errorKinds).
func errorKind(err error) string {
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return k.kind
		}
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
