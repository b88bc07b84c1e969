package analysis

import (
	"time"

	"github.com/zkbench/zkbench/results"
)

// CPUFloor is the shortest mean time an operation of res could have taken
// for the servers' CPU alone: the servers' CPU an operation (their CPU a
// second over the operations a second), over the cores they could have had
// while the case ran (the machine's, less what the load generator and
// processes that are not zkbench's took over the interval). Operations that
// go through the servers one at a time, as a lock's handoffs do without a
// hold, cannot follow each other faster, whatever the servers' latency:
// each costs them that CPU, and they had no more cores. It bounds the mean
// time between operations (1/throughput), not a percentile, and holds at
// the case's own cost an operation (a server that batched more at a higher
// rate could do better).
//
// It is measured only where the servers shared the machine with the load
// generator and were measured apart from it: a local cluster of processes
// or containers, one load generator (not merged shards).
func CPUFloor(run *results.Run, res *results.Result) (time.Duration, bool) {
	if run.ClusterMode != "local" && run.ClusterMode != "docker" || run.MergedShards > 0 {
		return 0, false
	}
	if res.Load == nil {
		return 0, false
	}
	m := res.Load.Machine
	if !res.Cost.ServerCostMeasured || res.Cost.ServerCPUSeconds <= 0 || res.Throughput <= 0 || m == nil || m.Elapsed <= 0 {
		return 0, false
	}
	// The costs are over the machine's interval (the case's snapshots,
	// which take in its drain), the throughput over the measured window:
	// CPU a second over operations a second.
	secs := m.Elapsed.Seconds()
	free := float64(m.Cores) - (res.Cost.ClientCPUSeconds+m.Others)/secs
	if free <= 0 {
		return 0, false
	}
	perOp := res.Cost.ServerCPUSeconds / secs / res.Throughput
	return time.Duration(perOp / free * float64(time.Second)), true
}

// Period is res's time an operation, 1/throughput: what CPUFloor bounds.
// False where the case has no throughput.
func Period(res *results.Result) (time.Duration, bool) {
	if res.Throughput <= 0 {
		return 0, false
	}
	return time.Duration(float64(time.Second) / res.Throughput), true
}
