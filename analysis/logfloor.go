package analysis

import (
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
)

// LogSyncs is the log syncs an operation of res made on each member: the
// servers' write-ahead log syncs (backends.MetricLogSyncs) over the
// members, over the operations that succeeded. A member syncs its own log
// for every write it commits, the followers of a 3-member cluster too, so
// the count is a member's, not the cluster's. Below the writes an operation
// makes, the servers committed several writes with one sync (group
// commit). False where the servers were not counted whole or do not count
// their syncs.
func LogSyncs(run *results.Run, res *results.Result) (float64, bool) {
	return perMemberPerOp(run, res, backends.MetricLogSyncs)
}

// LogFloor is the shortest mean time an operation of res could have taken
// for the members' log syncs alone: a member's sync time an operation (the
// servers' backends.MetricLogSyncSeconds over the members, over the
// operations that succeeded). A member syncs its log one batch at a time
// (etcd's raft loop waits for each fsync before it takes the next
// proposals), so operations cannot follow each other faster than their
// syncs took, whatever else the member does; like CPUFloor it bounds the
// mean time between operations (1/throughput), not a percentile, and holds
// at the case's own batching. Measured where the servers time their syncs
// (etcd; ZooKeeper times them in whole milliseconds).
func LogFloor(run *results.Run, res *results.Result) (time.Duration, bool) {
	secs, ok := perMemberPerOp(run, res, backends.MetricLogSyncSeconds)
	return time.Duration(secs * float64(time.Second)), ok
}

// perMemberPerOp is the server counter metric's delta per successful
// operation (serverPerOp) divided by run's members.
func perMemberPerOp(run *results.Run, res *results.Result, metric string) (float64, bool) {
	v, ok := serverPerOp(res, metric)
	members := len(run.Cluster.Members)
	if !ok || members == 0 {
		return 0, false
	}
	return v / float64(members), true
}

// MeanLogSync is the mean time of one log sync of res's servers.
func MeanLogSync(res *results.Result) (time.Duration, bool) {
	secs, ok := res.Server[backends.MetricLogSyncSeconds]
	n := res.Server[backends.MetricLogSyncs]
	if !ok || res.ServerPartial || n <= 0 {
		return 0, false
	}
	return time.Duration(secs / n * float64(time.Second)), true
}
