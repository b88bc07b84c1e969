package workloads

import (
	"slices"
	"sync"
	"time"

	"github.com/zkbench/zkbench/results"
)

// ledgerHistory is what every holder of a ledger case reported, on the
// case's clock: grants, the steps and commits of the work, and the crashes
// of worker clients. Safe for concurrent use.
//
// Whether a write came from a holder whose lock had passed on is decided in
// the order events arrive here, not by their times: a holder's last write
// is recorded before its exit, and its exit before its release (a worker
// waits for the ack of its exit), so a write that arrives after a newer
// token's grant is one its holder made after the lock passed on. Times
// would not tell as well: a worker's clock is the case's shifted by when it
// read the start.
type ledgerHistory struct {
	mu      sync.Mutex
	newest  int64 // the newest token granted so far
	grants  []ledgerGrant
	steps   []ledgerStep
	commits []ledgerCommit
	aborted int64
	reqs    int64
	bytes   int64
	crashes []ledgerCrash
}

type ledgerGrant struct {
	At     time.Duration
	Client int
	Token  int64
}

type ledgerStep struct {
	At      time.Duration
	Client  int
	Op      string
	Step    int // K+1: the commit's write
	Token   int64
	Outcome string
	Stale   bool // a newer token had been granted when it arrived
}

type ledgerCommit struct {
	At        time.Duration
	Client    int
	Op        string
	Token     int64
	Recovered bool
	Stale     bool
}

// ledgerCrash is a worker killed at At while holding (or not) the lock;
// Op and Step are its last step reported in the critical section it was in.
type ledgerCrash struct {
	At      time.Duration
	Client  int
	Fault   string
	Holding bool
	Op      string
	Step    int
}

func (h *ledgerHistory) grant(at time.Duration, client int, token int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.grants = append(h.grants, ledgerGrant{at, client, token})
	h.newest = max(h.newest, token)
}

// work records one evStep, evCommit or evAbort of client.
func (h *ledgerHistory) work(client int, ev lockEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	stale := ev.Token != 0 && h.newest > ev.Token
	switch ev.Kind {
	case evStep:
		h.steps = append(h.steps, ledgerStep{ev.At, client, ev.Op, ev.Step, ev.Token, ev.Outcome, stale})
	case evCommit:
		h.commits = append(h.commits, ledgerCommit{ev.At, client, ev.Op, ev.Token, ev.Recovered, stale})
	case evAbort:
		h.aborted++
	}
	h.reqs += ev.Reqs
	h.bytes += ev.Bytes
}

func (h *ledgerHistory) crash(c ledgerCrash) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.crashes = append(h.crashes, c)
}

// ledgerStore is the store as the case left it: the committed count, each
// account (index s-1 for account s; absent: zero) and the intent.
type ledgerStore struct {
	Head     storeRecord
	Accounts []storeRecord
	Intent   storeRecord // Count 1: pending
}

// checkLedger checks the history of a case of the work variant with K steps
// against the store it left, and accounts for each crash. The store is read
// once every holder has stopped.
func checkLedger(h *ledgerHistory, variant string, steps int, st ledgerStore) results.Work {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := results.Work{Steps: steps, Aborted: h.aborted, Requests: h.reqs, Bytes: h.bytes}
	committed := map[string][]ledgerCommit{}
	recovered := map[string]bool{}
	for _, c := range h.commits {
		committed[c.Op] = append(committed[c.Op], c)
		recovered[c.Op] = recovered[c.Op] || c.Recovered
	}
	// An idempotent operation may be committed twice (its owner crashed
	// after the head's write, before the intent's): the second is a no-op.
	w.Committed = int64(len(committed))
	for _, r := range recovered {
		if r {
			w.Recovered++
		}
	}
	// What each operation wrote: step s -> times applied. A txn commit
	// applies every step it staged, in one write.
	applied := map[string]map[int]int{}
	add := func(op string, s int) {
		if applied[op] == nil {
			applied[op] = map[int]int{}
		}
		applied[op][s]++
	}
	// What each operation's steps were found done by a holder that
	// replayed them (the idempotent work): the store held the write, made
	// by a holder whose report may never have come (a worker killed after
	// its write reached the server, before it reported it).
	replayed := map[string]map[int]bool{}
	perAccount := make([]int64, steps)
	grants := slices.Clone(h.grants)
	slices.SortFunc(grants, func(a, b ledgerGrant) int { return cmpDuration(a.At, b.At) })
	for _, s := range h.steps {
		stale := s.Stale
		switch s.Outcome {
		case stepApplied:
			add(s.Op, s.Step)
			if s.Step >= 1 && s.Step <= steps {
				perAccount[s.Step-1]++
			}
			if stale {
				w.Anomalies.StaleAccepted++
			}
		case stepRejected:
			w.Anomalies.StaleRejected++
		case stepReplayed:
			if replayed[s.Op] == nil {
				replayed[s.Op] = map[int]bool{}
			}
			replayed[s.Op][s.Step] = true
		}
	}
	for _, c := range h.commits {
		if variant == WorkTxn {
			for s := 1; s <= steps; s++ {
				add(c.Op, s)
				perAccount[s-1]++
			}
			if c.Stale {
				w.Anomalies.StaleAccepted++
			}
		}
	}
	for s := range steps {
		var bal int64
		if s < len(st.Accounts) {
			bal = st.Accounts[s].Count
		}
		switch {
		case bal < perAccount[s]:
			w.Anomalies.LostUpdates += perAccount[s] - bal
		case bal > perAccount[s]:
			w.Anomalies.Unreported += bal - perAccount[s]
		}
		if bal != st.Head.Count {
			w.Anomalies.Mismatched++
		}
	}
	pending := ""
	if st.Intent.Count == 1 {
		pending = st.Intent.Op
		w.Anomalies.Pending = 1
	}
	for op, byStep := range applied {
		for _, n := range byStep {
			if n > 1 {
				w.Anomalies.AppliedTwice += int64(n - 1)
			}
		}
		if op == pending {
			continue
		}
		done := len(byStep)
		for st := range replayed[op] {
			if byStep[st] == 0 {
				done++ // in the store, unreported
			}
		}
		if len(committed[op]) == 0 || done < steps {
			w.Anomalies.PartialVisible++
		}
	}
	for _, cs := range committed {
		// Only the idempotent work commits an operation twice, and its
		// second commit finds the head naming it: a no-op. Anywhere else a
		// second commit counted the operation twice in the head.
		if len(cs) > 1 && variant != WorkIdempotent {
			w.Anomalies.AppliedTwice += int64(len(cs) - 1)
		}
	}
	for _, c := range h.crashes {
		cr := results.Crash{Client: c.Client, At: c.At, Fault: c.Fault, Op: c.Op, Step: c.Step}
		switch {
		case !c.Holding:
			cr.Ended = results.CrashIdle
		case c.Op != "" && ownCommit(committed[c.Op], c.Client):
			// It committed before it died: nothing was interrupted.
			cr.Ended = results.CrashNothing
		case c.Op != "" && laterCommit(committed[c.Op], c.Client, c.At):
			cr.Ended = results.CrashCompleted
		case c.Op == "" || len(applied[c.Op]) == 0:
			cr.Ended = results.CrashNothing
		case c.Op == pending:
			cr.Ended = results.CrashPending
		default:
			cr.Ended = results.CrashPartial
		}
		if c.Holding {
			for _, g := range grants {
				if g.At >= c.At {
					cr.Recovery = g.At - c.At
					break
				}
			}
		}
		w.Crashes = append(w.Crashes, cr)
	}
	slices.SortFunc(w.Crashes, func(a, b results.Crash) int { return cmpDuration(a.At, b.At) })
	return w
}

func ownCommit(cs []ledgerCommit, client int) bool {
	return slices.ContainsFunc(cs, func(c ledgerCommit) bool { return c.Client == client })
}

func laterCommit(cs []ledgerCommit, client int, at time.Duration) bool {
	return slices.ContainsFunc(cs, func(c ledgerCommit) bool { return c.Client != client && c.At >= at })
}

func cmpDuration(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
