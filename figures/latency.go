package figures

import (
	"cmp"
	"slices"
)

// Latency names one latency histogram of a case: a key of
// results.Result.Latency. Each workload declares the ones it records,
// primary first (workloads.Spec.Latencies), and a result stores that order
// (results.Result.Latencies), so a reader knows which latency stands for
// the case without knowing the workload.
type Latency string

// The latencies the workloads record (docs/figures.md says how each is
// measured).
const (
	// Locks.
	LatencyAcquire         Latency = "acquire"          // request to grant
	LatencyHandoff         Latency = "handoff"          // a release to the next waiter's grant
	LatencyReleaseCall     Latency = "release_call"     // a holder's release call: its commit and reply (workloads.HandoffPath)
	LatencyHandoffNotify   Latency = "handoff_notify"   // a release's start to the next holder's last watch event before its grant
	LatencyHandoffDecide   Latency = "handoff_decide"   // that event to the next holder's grant
	LatencyAcquireRead     Latency = "acquire_read"     // a shared lock's read acquisitions
	LatencyAcquireWrite    Latency = "acquire_write"    // a shared lock's write acquisitions
	LatencyWriterOvertaken Latency = "writer_overtaken" // a waiting writer overtaken by later readers
	LatencyRevoke          Latency = "revoke"           // a revoker's ask to the holder's release
	LatencyRevokeToGrant   Latency = "revoke_to_grant"  // a revoker's ask to the next grant
	LatencyRecovery        Latency = "recovery"         // a holder killed mid-work to the next grant (ledger)
	// Elections.
	LatencyFailover   Latency = "failover"     // a leader lost to a new leader acting
	LatencyLostNotice Latency = "lost_notice"  // a leader's session ended to its learning of it
	LatencyObserve    Latency = "observe"      // a leader change to each observer knowing it
	LatencyObserveAll Latency = "observe_last" // a leader change to the last observer knowing it
	LatencyTermWait   Latency = "term_wait"    // a candidate's requeue to its next term
	// Double barriers.
	LatencyEnter        Latency = "enter"         // a participant's Enter
	LatencyLeave        Latency = "leave"         // a participant's Leave
	LatencyEnterRelease Latency = "enter_release" // the last arrival to the last participant through Enter
	LatencyLeaveRelease Latency = "leave_release" // the last Leave call to the last participant out
	LatencyRound        Latency = "round"         // one round, first arrival to last departure
	// The config center.
	LatencyWrite         Latency = "write"          // the writer's Set
	LatencyPropagate     Latency = "propagate"      // a write's reply to each client's reload after it
	LatencyPropagateLast Latency = "propagate_last" // a write's reply to the last client's reload
	// LatencyPropagateStart and LatencyPropagateLastStart count from the
	// start of the writer's call: every reload is in them, also those that
	// beat the reply. (etcd's benchmark watch-latency counts from the put's
	// reply, an event that beat it as 0: cmd/watchcompare rebuilds that
	// reading from these and LatencyPropagate.)
	LatencyPropagateStart     Latency = "propagate_start"      // a write's start to each client's reload
	LatencyPropagateLastStart Latency = "propagate_last_start" // a write's start to the last client's reload
	// Simple barriers.
	LatencyPass    Latency = "pass"    // the barrier's removal to each waiter through
	LatencyRelease Latency = "release" // the barrier's removal to the last waiter through
	LatencyWait    Latency = "wait"    // a waiter's whole wait
	// Two-phase commit.
	LatencyDecide      Latency = "decide"      // a transaction's start to each site's decision
	LatencyTransaction Latency = "transaction" // a transaction's start to the last site's decision
	// Group membership.
	LatencyConverge      Latency = "converge"       // a change's write to every member's view agreeing
	LatencyConvergeReply Latency = "converge_reply" // a change's write's reply to every view agreeing
	// Queues.
	LatencyDelivery Latency = "delivery" // an item's scheduled put to the Take that returned it
	LatencyPut      Latency = "put"      // a producer's put
	LatencyTake     Latency = "take"     // one Take call
	LatencyAck      Latency = "ack"      // one Ack
)

// SortLatencies sorts names in the order declared (primary first), then
// any not declared by name. declared may be nil.
func SortLatencies(names []Latency, declared []Latency) {
	rank := func(s Latency) int {
		if i := slices.Index(declared, s); i >= 0 {
			return i
		}
		return len(declared)
	}
	slices.SortFunc(names, func(a, b Latency) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b)) })
}
