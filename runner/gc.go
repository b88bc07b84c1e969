package runner

import (
	"fmt"
	"runtime/debug"

	"github.com/zkbench/zkbench/results"
)

// The garbage collector's goal while a run drives many clients. At
// thousands of sessions the live heap is mostly their buffers (a ZooKeeper
// session's receive buffer holds a whole listing of the queue), and the
// default goal (GOGC=100) lets garbage grow to as much again: resident
// pages, since the allocator zeroes them on reuse. go-zookeeper alone
// allocates and drops a 1.5 MiB buffer per connection it opens. Measured
// on 2 cores with 10,000 fair-lock clients on ZooKeeper at the default:
// 318 KB of RSS and 386 KB of heap a client at the end of a case, for a
// 141 KiB receive buffer and an 8 KiB send buffer. The lower goal trades
// collector CPU (mostly while sessions open) for that memory; confirm it
// with the scale runs (make bench-scale).
const (
	gcPercentFrom  = 1000 // clients above which the goal is lowered
	scaleGCPercent = 20
)

// gcSetting lowers the collector's goal for a run of more than
// gcPercentFrom clients (none if GOGC is set by the user) and records it.
func gcSetting(n int, userGOGC bool) (percent int, st results.Setting, ok bool) {
	if n <= gcPercentFrom || userGOGC {
		return 0, results.Setting{}, false
	}
	return scaleGCPercent, results.Setting{Name: "gc-percent", Value: fmt.Sprint(scaleGCPercent),
		Why: fmt.Sprintf("auto: more than %d clients, whose sessions' buffers are most of zkbench's heap; "+
			"garbage up to the default 100%% of it would be resident memory", gcPercentFrom)}, true
}

// withGCPercent sets the collector's goal to percent (0: leave it) and
// returns the function that restores it.
func withGCPercent(percent int) (restore func()) {
	if percent <= 0 {
		return func() {}
	}
	old := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(old) }
}
