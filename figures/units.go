package figures

// Unit is a workload's unit operation, what Throughput and the
// per-operation figures count: "acquisition", "round". Each workload
// declares its own (workloads.Spec.Unit).
type Unit string

// Units of operation.
const (
	Acquisition Unit = "acquisition" // a lock granted
	Failover    Unit = "failover"    // a leader lost and a new one acting
	Handoff     Unit = "handoff"     // a leader resigning and the next acting
	Term        Unit = "term"        // a leader's term
	Round       Unit = "round"       // a barrier round
	Update      Unit = "update"      // a config write every client must load
	Operation   Unit = "operation"   // a workload that declares no unit
	Revocation  Unit = "revocation"  // a lock holder asked to let go, and gone
	Item        Unit = "item"        // a queue item taken
	Change      Unit = "change"      // a group member joining or leaving
	Transaction Unit = "transaction" // a two-phase commit decided
)

// Plural is u with an s: "acquisitions".
func (u Unit) Plural() string { return string(u) + "s" }

// Class is what a variant is, for ordering, colouring and the herd
// verdict: each workload declares its variants' classes
// (workloads.Spec.Variants) and every result records its own
// (results.Result.Class).
type Class string

// Variant classes, in the order summaries sort them.
const (
	Naive    Class = "naive"     // every waiter watches one thing: one change wakes them all
	HerdFree Class = "herd-free" // one change notifies a number of waiters that does not grow with N
	Baseline Class = "baseline"  // a client library's own recipe
	Other    Class = "other"     // none of these (polling, a push every client needs)
)

// Rank orders classes as summaries do: Naive first, then HerdFree,
// Baseline, Other, and anything unknown last.
func (c Class) Rank() int {
	switch c {
	case Naive:
		return 0
	case HerdFree:
		return 1
	case Baseline:
		return 2
	case Other:
		return 3
	}
	return 4
}
