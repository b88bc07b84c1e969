// Package ctxsleep is the one sleep that a context cuts short, shared by
// the workloads, the recipes and the executor.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep sleeps for d and reports false if ctx ended first. A d of zero or
// less does not sleep: it reports whether ctx is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
