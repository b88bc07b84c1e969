package measure

import (
	"sync/atomic"
	"time"
)

// Live is a case's progress as it runs, for a status line: operations
// completed in the measured interval so far and when the workers started.
// A nil *Live ignores every call, so workloads call it unconditionally.
// Safe for concurrent use.
type Live struct {
	ops     atomic.Int64
	started atomic.Int64 // unix ns; 0: not yet
}

// Op counts one operation completed in the measured interval.
func (l *Live) Op() {
	if l != nil {
		l.ops.Add(1)
	}
}

// Start marks the moment the case's workers started (after its sessions
// opened); the first call counts.
func (l *Live) Start() {
	if l != nil {
		l.started.CompareAndSwap(0, time.Now().UnixNano())
	}
}

// Ops is the count of operations so far.
func (l *Live) Ops() int64 {
	if l == nil {
		return 0
	}
	return l.ops.Load()
}

// Started is when the workers started, and whether they have.
func (l *Live) Started() (time.Time, bool) {
	if l == nil {
		return time.Time{}, false
	}
	ns := l.started.Load()
	return time.Unix(0, ns), ns != 0
}
