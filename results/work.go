package results

import "time"

// Work is what the critical sections of a case did to the store they
// protect (the ledger workload): operations of Steps writes and a commit,
// the crashes that interrupted them, and what a checker over the final
// store and the history found.
type Work struct {
	// Steps is K, the writes of one operation before its commit.
	Steps int `json:"steps"`
	// Committed counts operations committed (commit events; for the
	// store's own count see Anomalies and Notes). Recovered are the ones a
	// holder committed for another whose work a crash had interrupted.
	Committed int64 `json:"committed"`
	Recovered int64 `json:"recovered,omitempty"`
	// Aborted counts critical sections whose work stopped before its
	// commit without a crash: the fence rejected the holder, or a request
	// failed.
	Aborted int64 `json:"aborted,omitempty"`
	// Requests and Bytes are the store requests and their payload bytes
	// (paths and data, both ways) every holder's work made, lock traffic
	// excluded; divided by Committed they are the cost of an operation.
	Requests int64 `json:"requests"`
	Bytes    int64 `json:"bytes"`
	// Anomalies are the checker's findings, by kind.
	Anomalies WorkAnomalies `json:"anomalies"`
	// Crashes are the workers killed during the case, in order.
	Crashes []Crash `json:"crashes,omitempty"`
}

// WorkAnomalies are what the ledger's checker counts, by kind. A whole
// store has none of the first four.
type WorkAnomalies struct {
	// LostUpdates: account writes the history records as applied that the
	// final balances do not hold (a stale read overwrote them).
	LostUpdates int64 `json:"lost_updates"`
	// AppliedTwice: steps (or commits) of one operation applied more than
	// once.
	AppliedTwice int64 `json:"applied_twice"`
	// PartialVisible: operations left with some of their writes in the
	// store and never committed (nor pending for the next holder to
	// finish), or committed without every step.
	PartialVisible int64 `json:"partial_visible"`
	// Mismatched: accounts whose final balance differs from the store's
	// count of committed operations.
	Mismatched int64 `json:"mismatched"`
	// StaleAccepted and StaleRejected: writes by a holder whose lock had
	// passed on (a newer token had been granted), that the store took or
	// that the fence refused.
	StaleAccepted int64 `json:"stale_accepted"`
	StaleRejected int64 `json:"stale_rejected,omitempty"`
	// Pending: an operation the store's intent names as under way at the
	// end (its holder crashed and no holder came after to finish it).
	Pending int64 `json:"pending,omitempty"`
	// Unreported: account writes the final balances hold beyond those the
	// history records (a worker killed after its write reached the server,
	// before it reported it).
	Unreported int64 `json:"unreported,omitempty"`
}

// Violations is the sum of the kinds a safe work never shows.
func (a WorkAnomalies) Violations() int64 {
	return a.LostUpdates + a.AppliedTwice + a.PartialVisible + a.Mismatched + a.StaleAccepted
}

// How a crash ended (Crash.Ended).
const (
	CrashCompleted = "completed" // a later holder finished the operation
	CrashNothing   = "nothing"   // none of its writes had been made: nothing to undo
	CrashPending   = "pending"   // recorded as under way, not finished when the case ended
	CrashPartial   = "partial"   // part of it stayed in the store, never finished
	CrashIdle      = "idle"      // the client held no lock: no work interrupted
)

// Crash is one worker client killed during a case.
type Crash struct {
	Client int `json:"client"`
	// At is the kill, from the start of the case's workers.
	At time.Duration `json:"at_ns"`
	// Fault is the fault that killed it: "kill-client" or "kill-holder".
	Fault string `json:"fault"`
	// Op and Step are the operation it was doing and its last step
	// reported (empty, 0: it held no lock, or had done no step).
	Op   string `json:"op,omitempty"`
	Step int    `json:"step,omitempty"`
	// Ended says what became of the operation (Crash*).
	Ended string `json:"ended"`
	// Recovery is the kill to the next grant of the lock (0: none came
	// before the case ended, or the client held no lock).
	Recovery time.Duration `json:"recovery_ns,omitempty"`
}
