package figures

// Unit is a workload's unit operation, what Throughput and the
// per-operation figures count: "acquisition", "round".
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
)

// Plural is u with an s: "acquisitions".
func (u Unit) Plural() string { return string(u) + "s" }

// workloadUnits declares each workload's unit operation, under its current
// name (workloads.Names) and the names older results files used.
var workloadUnits = map[string]Unit{
	"lock":               Acquisition,
	"failover":           Failover,
	"election-failover":  Failover,
	"handoff":            Handoff,
	"election-handoff":   Handoff,
	"observers":          Term,
	"election-observers": Term,
	"election":           Term,
	"barrier":            Round,
	"double-barrier":     Round,
	// config workload
	"config": Update,
	// The shared lock workloads.
	"rwlock": Acquisition,
	"revoke": Revocation,
	// issue 12
	"simple-barrier": Round,
	"twophase":       Transaction,
	"membership":     Change,
	"queue":          Item, // queue (issue 11)
}

// Change is the membership workload's unit: a member joining or leaving
// (issue 12).
const Change Unit = "change"

// Transaction is the twophase workload's unit: a two-phase commit decided
// (issue 12).
const Transaction Unit = "transaction"

// UnitOf is workload's unit operation; Operation for a workload that
// declares none.
func UnitOf(workload string) Unit {
	if u, ok := workloadUnits[workload]; ok {
		return u
	}
	return Operation
}

// Declares reports whether workload has a unit of its own declared here.
func Declares(workload string) bool {
	_, ok := workloadUnits[workload]
	return ok
}
