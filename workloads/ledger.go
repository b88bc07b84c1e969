package workloads

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// The ledger workload: the lock workload's clients on the herd-free lock,
// whose critical section does work in steps on a store on the same servers
// (ledgerwork.go), so that a holder that crashes mid-work — a kill-client
// or kill-holder fault, SIGKILL of its worker process — leaves that work
// part done while the server releases its lock only when its session
// expires. Its variants are the work's: naive, idempotent and txn (etcd).
// The checker (ledgerchecker.go) reads the store once every holder has
// stopped and holds it against the history of grants, steps, commits and
// crashes.

// ParamSteps: the writes of one ledger operation before its commit.
const ParamSteps = "steps"

// DefaultLedgerHold is the ledger's hold in a closed-loop run that leaves
// it Auto: spread between the steps of the work, so that a fault at a
// random moment is likely to find a holder mid-work.
const DefaultLedgerHold = 30 * time.Millisecond

// errNoTxn says why the txn variant does not run on ZooKeeper.
var errNoTxn = errors.New("zkbench's ZooKeeper session has no guarded multi-node write, a multi-node transaction " +
	"that writes only if the head still holds a value (ZooKeeper's multi with a version check on the head would be " +
	"the same guarantee); use naive or idempotent")

func ledgerSpec() Spec {
	return Spec{
		Name: "ledger",
		Summary: "one ledger operation under the herd-free lock: acquire, --steps account writes and a commit " +
			"(spread over --hold), release, think --think",
		Unit: figures.Acquisition, // each grant does one operation of its own
		Variants: []VariantSpec{
			// Every variant runs on the herd-free lock: the class is
			// the lock's.
			{Name: WorkNaive, Class: figures.HerdFree},
			{Name: WorkIdempotent, Class: figures.HerdFree},
			{Name: WorkTxn, Class: figures.HerdFree, Backends: []backends.Kind{backends.Etcd}, Why: errNoTxn},
		},
		Latencies: []figures.Latency{figures.LatencyAcquire, figures.LatencyRecovery, figures.LatencyHandoff},
		Params: []Param{{Key: ParamSteps, Type: ParamCount, Default: "3",
			Help: "account writes in one ledger operation before its commit (a kill-holder fault kills a holder halfway through them; at least 2 for it)"}},
		Knobs:       []Knob{KnobHold, KnobThink, KnobWarmup},
		DefaultHold: DefaultLedgerHold,
		Abilities:   Abilities{ClientProcesses: true, Steps: true},
		New:         func() Workload { return NewLedger() },
	}
}

// LedgerWorkload is the ledger benchmark (see ledgerSpec and ledgerwork.go).
type LedgerWorkload struct{}

// NewLedger returns the ledger workload.
func NewLedger() *LedgerWorkload { return &LedgerWorkload{} }

// Run runs one ledger case. See Workload.Run.
func (*LedgerWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	spec := ledgerSpec()
	steps, err := spec.Int(c.Config, ParamSteps)
	if err != nil {
		return newResult(spec, c), err
	}
	if c.Config.Rate > 0 {
		return newResult(spec, c), fmt.Errorf("%w: the ledger workload runs the closed loop only (no --rate)", ErrBadCase)
	}
	lg := &ledgerCase{
		spec:    WorkSpec{Variant: c.Variant, Steps: steps, Store: c.Namespace + "/ledger", Pause: c.Config.Hold / time.Duration(steps)},
		history: &ledgerHistory{},
	}
	return drive(ctx, spec, c, 0, &lockCase{ledger: lg})
}

// ledgerCase is a ledger case's part beyond the lock's: the work its
// holders do, what they reported, and the store they left.
type ledgerCase struct {
	spec    WorkSpec
	history *ledgerHistory
	store   ledgerStore
	readErr error
}

// nodes are the store's persistent nodes, which the leftover check keeps.
func (lg *ledgerCase) nodes() []string {
	out := []string{lg.spec.Store, headPath(lg.spec.Store), intentPath(lg.spec.Store)}
	for s := 1; s <= lg.spec.Steps; s++ {
		out = append(out, accountPath(lg.spec.Store, s))
	}
	return out
}

// storeReadTimeout bounds reading the store at the end of a case.
const storeReadTimeout = 15 * time.Second

// readStore reads the store through the first of sessions that still
// lives.
func (lg *ledgerCase) readStore(ctx context.Context, sessions []backends.Session) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeReadTimeout)
	defer cancel()
	lg.readErr = errors.New("no session left to read it with")
	for _, s := range sessions {
		select {
		case <-s.Done():
			continue
		default:
		}
		st, err := readLedgerStore(rctx, s, lg.spec)
		lg.store, lg.readErr = st, err
		if err == nil {
			return
		}
	}
}

func readLedgerStore(ctx context.Context, s backends.Session, spec WorkSpec) (ledgerStore, error) {
	read := func(p string) (storeRecord, error) {
		data, _, err := s.Get(ctx, p)
		if errors.Is(err, backends.ErrNoNode) {
			return storeRecord{}, nil
		}
		if err != nil {
			return storeRecord{}, err
		}
		return decodeRecord(data)
	}
	var st ledgerStore
	var err error
	if st.Head, err = read(headPath(spec.Store)); err != nil {
		return st, err
	}
	if st.Intent, err = read(intentPath(spec.Store)); err != nil {
		return st, err
	}
	for i := 1; i <= spec.Steps; i++ {
		r, err := read(accountPath(spec.Store, i))
		if err != nil {
			return st, err
		}
		st.Accounts = append(st.Accounts, r)
	}
	return st, nil
}

// collect checks the case's history against its store and writes the
// ledger's figures and notes into res.
func (lg *ledgerCase) collect(res *results.Result, params map[string]string) {
	if lg.readErr != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("ledger store not checked: reading it failed: %v", lg.readErr))
		return
	}
	w := checkLedger(lg.history, lg.spec.Variant, lg.spec.Steps, lg.store)
	res.Work = &w
	if w.Committed > 0 {
		res.PerOp[figures.WorkRequests.Key] = float64(w.Requests) / float64(w.Committed)
		res.PerOp[figures.WorkBytes.Key] = float64(w.Bytes) / float64(w.Committed)
	}
	rec := results.NewRecorder()
	ended := map[string]int{}
	for _, c := range w.Crashes {
		ended[c.Ended]++
		if c.Recovery > 0 {
			results.Record(rec, c.Recovery)
		}
	}
	addHistogram(res, figures.LatencyRecovery, rec)
	a := w.Anomalies
	res.Notes = append(res.Notes, fmt.Sprintf("ledger (%s, %d steps): %d operations committed (%d finished by a later holder), store count %d; "+
		"%s store requests and %s bytes per operation", lg.spec.Variant, lg.spec.Steps, w.Committed, w.Recovered, lg.store.Head.Count,
		perOp(w.Requests, w.Committed), perOp(w.Bytes, w.Committed)))
	if len(w.Crashes) > 0 {
		var parts []string
		for _, k := range []string{results.CrashCompleted, results.CrashNothing, results.CrashPending, results.CrashPartial, results.CrashIdle} {
			if ended[k] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", ended[k], k))
			}
		}
		line := fmt.Sprintf("%d worker clients killed, their operations ended: %s", len(w.Crashes), strings.Join(parts, ", "))
		if rec.TotalCount() > 0 {
			timeout := "the session timeout (ZooKeeper) or lease TTL (etcd)"
			if t := params["session_timeout"]; t != "" {
				timeout = "the session timeout, " + t
			} else if t := params["lease_ttl"]; t != "" {
				timeout = "the lease TTL, " + t
			}
			line += fmt.Sprintf("; a killed holder's lock is freed only when the server ends its session, so the kill to the next grant (recovery: %v to %v) "+
				"is about %s: up to that after the victim's last keep-alive, plus the server's expiry check",
				time.Duration(rec.Min()).Round(time.Millisecond), time.Duration(rec.Max()).Round(time.Millisecond), timeout)
		}
		res.Notes = append(res.Notes, line)
	}
	if v := a.Violations(); v > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("LEDGER ANOMALIES %d: %d lost updates, %d steps applied twice, %d partial operations left visible, %d accounts off the committed count, %d stale writes accepted",
			v, a.LostUpdates, a.AppliedTwice, a.PartialVisible, a.Mismatched, a.StaleAccepted))
	}
	if a.StaleRejected > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d stale writes rejected by the fence (a holder whose lock had passed on)", a.StaleRejected))
	}
	if a.Pending > 0 {
		res.Notes = append(res.Notes, "an operation was still pending in the store's intent when the case ended (its holder crashed and no holder came after to finish it)")
	}
	if a.Unreported > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d account writes in the store that no holder reported (a worker killed after its write reached the server)", a.Unreported))
	}
}

func perOp(n, ops int64) string {
	if ops == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(n)/float64(ops))
}
