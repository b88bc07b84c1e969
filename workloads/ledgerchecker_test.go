package workloads

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/safety"
)

// ledgerScript builds a ledger history in the order its calls arrive, as
// the recorders would feed it.
type ledgerScript struct {
	h  *ledgerHistory
	at time.Duration
}

func newScript() *ledgerScript { return &ledgerScript{h: &ledgerHistory{}} }

func (s *ledgerScript) tick() time.Duration { s.at += 10 * time.Millisecond; return s.at }

func (s *ledgerScript) grant(client int, token int64) { s.h.grant(s.tick(), client, token) }

func (s *ledgerScript) step(client int, op string, step int, token int64, outcome string) {
	s.h.work(client, lockEvent{Kind: evStep, At: s.tick(), Op: op, Step: step, Token: token, Outcome: outcome, Reqs: 2, Bytes: 40})
}

func (s *ledgerScript) commit(client int, op string, token int64, recovered bool) {
	s.h.work(client, lockEvent{Kind: evCommit, At: s.tick(), Op: op, Token: token, Recovered: recovered, Reqs: 2, Bytes: 30})
}

// op runs a whole operation of steps by client with token, each step
// outcome (applied, staged) and a commit.
func (s *ledgerScript) op(client int, op string, token int64, steps int, outcome string) {
	for i := 1; i <= steps; i++ {
		s.step(client, op, i, token, outcome)
	}
	s.commit(client, op, token, false)
}

func (s *ledgerScript) crash(client int, fault string, holding bool, op string, step int) time.Duration {
	at := s.tick()
	s.h.crash(ledgerCrash{At: at, Client: client, Fault: fault, Holding: holding, Op: op, Step: step})
	return at
}

// store is a ledger store of steps accounts at balances, head at count.
func store(count int64, balances ...int64) ledgerStore {
	st := ledgerStore{Head: storeRecord{Count: count}}
	for _, b := range balances {
		st.Accounts = append(st.Accounts, storeRecord{Count: b})
	}
	return st
}

func TestCheckLedger(t *testing.T) {
	type want struct {
		anomalies results.WorkAnomalies
		committed int64
		recovered int64
		ended     []string
	}
	tests := []struct {
		name    string
		variant string
		build   func(s *ledgerScript) ledgerStore
		want    want
	}{
		{"clean", WorkNaive, func(s *ledgerScript) ledgerStore {
			s.grant(0, 10)
			s.op(0, "0.1", 10, 3, stepApplied)
			s.grant(1, 20)
			s.op(1, "1.1", 20, 3, stepApplied)
			return store(2, 2, 2, 2)
		}, want{committed: 2}},
		{"naive crash leaves a partial operation", WorkNaive, func(s *ledgerScript) ledgerStore {
			s.grant(0, 10)
			s.step(0, "0.1", 1, 10, stepApplied)
			s.step(0, "0.1", 2, 10, stepApplied)
			s.crash(0, "kill-holder", true, "0.1", 2)
			s.grant(1, 20)
			s.op(1, "1.1", 20, 3, stepApplied)
			return store(1, 2, 2, 1)
		}, want{anomalies: results.WorkAnomalies{PartialVisible: 1, Mismatched: 2}, committed: 1, ended: []string{results.CrashPartial}}},
		{"idempotent crash completed by the next holder", WorkIdempotent, func(s *ledgerScript) ledgerStore {
			s.grant(0, 10)
			s.step(0, "0.1", 1, 10, stepApplied)
			s.step(0, "0.1", 2, 10, stepApplied)
			s.crash(0, "kill-holder", true, "0.1", 2)
			s.grant(1, 20)
			s.step(1, "0.1", 1, 20, stepReplayed)
			s.step(1, "0.1", 2, 20, stepReplayed)
			s.step(1, "0.1", 3, 20, stepApplied)
			s.commit(1, "0.1", 20, true)
			s.op(1, "1.1", 20, 3, stepApplied)
			return store(2, 2, 2, 2)
		}, want{committed: 2, recovered: 1, ended: []string{results.CrashCompleted}}},
		{"idempotent crash after an unreported write, completed by the next holder", WorkIdempotent, func(s *ledgerScript) ledgerStore {
			// Client 0 wrote step 2 and was killed before it reported it;
			// the next holder found it done (replayed), so the operation is
			// whole in the store: not partial, one write unreported.
			s.grant(0, 10)
			s.step(0, "0.1", 1, 10, stepApplied)
			s.crash(0, "kill-client", true, "0.1", 1)
			s.grant(1, 20)
			s.step(1, "0.1", 1, 20, stepReplayed)
			s.step(1, "0.1", 2, 20, stepReplayed)
			s.step(1, "0.1", 3, 20, stepApplied)
			s.commit(1, "0.1", 20, true)
			return store(1, 1, 1, 1)
		}, want{anomalies: results.WorkAnomalies{Unreported: 1}, committed: 1, recovered: 1, ended: []string{results.CrashCompleted}}},
		{"idempotent crash pending at the end", WorkIdempotent, func(s *ledgerScript) ledgerStore {
			s.grant(0, 10)
			s.step(0, "0.1", 1, 10, stepApplied)
			s.crash(0, "kill-holder", true, "0.1", 1)
			st := store(0, 1, 0, 0)
			st.Intent = storeRecord{Count: 1, Op: "0.1", Token: 10}
			return st
		}, want{anomalies: results.WorkAnomalies{Pending: 1, Mismatched: 1}, ended: []string{results.CrashPending}}},
		{"txn crash before its transaction leaves nothing", WorkTxn, func(s *ledgerScript) ledgerStore {
			s.grant(0, 10)
			s.step(0, "0.1", 1, 10, stepStaged)
			s.step(0, "0.1", 2, 10, stepStaged)
			s.crash(0, "kill-holder", true, "0.1", 2)
			s.grant(1, 20)
			s.op(1, "1.1", 20, 3, stepStaged)
			return store(1, 1, 1, 1)
		}, want{committed: 1, ended: []string{results.CrashNothing}}},
		{"a step applied twice", WorkNaive, func(s *ledgerScript) ledgerStore {
			s.grant(0, 10)
			s.step(0, "0.1", 1, 10, stepApplied)
			s.step(0, "0.1", 1, 10, stepApplied)
			s.step(0, "0.1", 2, 10, stepApplied)
			s.step(0, "0.1", 3, 10, stepApplied)
			s.commit(0, "0.1", 10, false)
			return store(1, 2, 1, 1)
		}, want{anomalies: results.WorkAnomalies{AppliedTwice: 1, Mismatched: 1}, committed: 1}},
		{"a lost update", WorkNaive, func(s *ledgerScript) ledgerStore {
			s.grant(0, 10)
			s.op(0, "0.1", 10, 3, stepApplied)
			s.grant(1, 20)
			s.op(1, "1.1", 20, 3, stepApplied)
			// A stale read-modify-write put account 1 back to 1.
			return store(2, 1, 2, 2)
		}, want{anomalies: results.WorkAnomalies{LostUpdates: 1, Mismatched: 1}, committed: 2}},
		{"stale writes accepted and rejected", WorkIdempotent, func(s *ledgerScript) ledgerStore {
			s.grant(0, 10)
			s.step(0, "0.1", 1, 10, stepApplied)
			s.grant(1, 20) // client 0's lock passed on (it was paused)
			s.step(0, "0.1", 2, 10, stepApplied)
			s.step(0, "0.1", 3, 10, stepRejected)
			return store(0, 1, 1, 0)
		}, want{anomalies: results.WorkAnomalies{StaleAccepted: 1, StaleRejected: 1, PartialVisible: 1, Mismatched: 2}}},
		{"a client killed while it held no lock", WorkNaive, func(s *ledgerScript) ledgerStore {
			s.grant(0, 10)
			s.op(0, "0.1", 10, 3, stepApplied)
			s.crash(1, "kill-client", false, "", 0)
			return store(1, 1, 1, 1)
		}, want{committed: 1, ended: []string{results.CrashIdle}}},
		{"unreported writes of a worker killed mid-request", WorkNaive, func(s *ledgerScript) ledgerStore {
			s.grant(0, 10)
			s.crash(0, "kill-client", true, "", 0)
			return store(0, 1, 0, 0)
		}, want{anomalies: results.WorkAnomalies{Unreported: 1, Mismatched: 1}, ended: []string{results.CrashNothing}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScript()
			st := tt.build(s)
			w := checkLedger(s.h, tt.variant, 3, st)
			if w.Anomalies != tt.want.anomalies {
				t.Errorf("anomalies %+v, want %+v", w.Anomalies, tt.want.anomalies)
			}
			if w.Committed != tt.want.committed || w.Recovered != tt.want.recovered {
				t.Errorf("committed %d, recovered %d; want %d, %d", w.Committed, w.Recovered, tt.want.committed, tt.want.recovered)
			}
			if len(w.Crashes) != len(tt.want.ended) {
				t.Fatalf("crashes %+v, want %d", w.Crashes, len(tt.want.ended))
			}
			for i, c := range w.Crashes {
				if c.Ended != tt.want.ended[i] {
					t.Errorf("crash %d ended %q, want %q", i, c.Ended, tt.want.ended[i])
				}
			}
			if w.Requests == 0 || w.Bytes == 0 {
				if len(s.h.steps)+len(s.h.commits) > 0 {
					t.Errorf("requests %d, bytes %d: want the reported ones summed", w.Requests, w.Bytes)
				}
			}
		})
	}
}

// TestCheckLedgerRecovery: a holder's crash is timed to the next grant
// after it; a crash with no grant after it has no recovery, and one of a
// client that held no lock has none either.
func TestCheckLedgerRecovery(t *testing.T) {
	s := newScript()
	s.grant(0, 10)
	s.step(0, "0.1", 1, 10, stepApplied)
	at := s.crash(0, "kill-holder", true, "0.1", 1)
	s.tick()
	s.grant(1, 20)
	next := s.at
	s.op(1, "1.1", 20, 3, stepApplied)
	s.crash(2, "kill-client", false, "", 0)
	s.step(1, "1.2", 1, 20, stepApplied)
	s.crash(1, "kill-holder", true, "1.2", 1)
	w := checkLedger(s.h, WorkNaive, 3, store(1, 3, 1, 1))
	if len(w.Crashes) != 3 {
		t.Fatalf("crashes %+v", w.Crashes)
	}
	if got := w.Crashes[0].Recovery; got != next-at {
		t.Errorf("recovery %v, want %v", got, next-at)
	}
	if w.Crashes[1].Recovery != 0 || w.Crashes[2].Recovery != 0 {
		t.Errorf("recoveries %v, %v: want none (not holding; no grant after)", w.Crashes[1].Recovery, w.Crashes[2].Recovery)
	}
	if w.Anomalies.PartialVisible != 2 {
		t.Errorf("partial %d, want both crashed operations", w.Anomalies.PartialVisible)
	}
}

// TestKillStep: halfway through the steps, never the last.
func TestKillStep(t *testing.T) {
	for steps, want := range map[int]int{1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 10: 5} {
		if got := KillStep(steps); got != want {
			t.Errorf("KillStep(%d) = %d, want %d", steps, got, want)
		}
	}
}

// TestStoreRecords: what the work writes reads back.
func TestStoreRecords(t *testing.T) {
	r := storeRecord{Count: 42, Op: "3.7", Token: 1234}
	if got, err := decodeRecord(r.encode()); err != nil || got != r {
		t.Fatalf("decode(encode(%+v)) = %+v, %v", r, got, err)
	}
	if got, err := decodeRecord(encodeIntent(true, "1.2", 9)); err != nil || got != (storeRecord{Count: 1, Op: "1.2", Token: 9}) {
		t.Fatalf("pending intent = %+v, %v", got, err)
	}
	if got, err := decodeRecord(encodeIntent(false, "1.2", 9)); err != nil || got.Count != 0 {
		t.Fatalf("done intent = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "1 2", "x 1.1 3", "1 1.1 y", "maybe 1.1 3"} {
		if _, err := decodeRecord([]byte(bad)); err == nil {
			t.Errorf("decodeRecord(%q): want an error", bad)
		}
	}
}

// TestLedgerRecorder: a ledger client's recorder passes its grants and work
// to the history and remembers the holder's last step (what a crash
// interrupted); a lock client's recorder refuses work events, and a step
// outside a critical section breaks the protocol.
func TestLedgerRecorder(t *testing.T) {
	w := measuringWindow()
	checker := NewLockChecker()
	fence := safety.NewRegister(false)
	h := &ledgerHistory{}
	r := newLockRecorder(0, w, checker, fence, results.NewStripes(1), 100*ms, false)
	r.ledger = h
	feed(t, r,
		lockEvent{Kind: evAsked, At: 1 * ms, Intended: 1 * ms},
		lockEvent{Kind: evGranted, At: 2 * ms, Token: 5},
		lockEvent{Kind: evStep, At: 3 * ms, Op: "0.1", Step: 1, Token: 5, Outcome: stepApplied})
	if r.op != "0.1" || r.step != 1 || len(h.grants) != 1 || len(h.steps) != 1 {
		t.Fatalf("recorder op %q step %d, history %d grants %d steps", r.op, r.step, len(h.grants), len(h.steps))
	}
	feed(t, r,
		lockEvent{Kind: evCommit, At: 4 * ms, Op: "0.1", Token: 5, Reqs: 8, Bytes: 300},
		lockEvent{Kind: evExit, At: 5 * ms}, lockEvent{Kind: evReleased, At: 6 * ms})
	if err := r.event(lockEvent{Kind: evStep, At: 7 * ms, Op: "0.2", Step: 1}); !errors.Is(err, errLockProtocol) {
		t.Errorf("a step while idle: err %v, want errLockProtocol", err)
	}
	lock := newLockRecorder(1, w, checker, fence, results.NewStripes(1), 100*ms, false)
	feed(t, lock, lockEvent{Kind: evAsked, At: 8 * ms, Intended: 8 * ms}, lockEvent{Kind: evGranted, At: 9 * ms, Token: 6})
	if err := lock.event(lockEvent{Kind: evStep, At: 10 * ms, Op: "1.1", Step: 1}); !errors.Is(err, errLockProtocol) {
		t.Errorf("a step to a lock client's recorder: err %v, want errLockProtocol", err)
	}
	if h.reqs != 8 || h.bytes != 300 {
		t.Errorf("history counted %d requests, %d bytes; want 8, 300", h.reqs, h.bytes)
	}
}

// historySink records a holder's work events into a ledger history, as
// its recorder would.
type historySink struct {
	h      *ledgerHistory
	client int
}

func (s historySink) event(ev lockEvent) error {
	s.h.work(s.client, ev)
	return nil
}

// A holder whose lock has passed on and that works on anyway (a paused
// holder waking after the next holder's grant) writes stale, on real
// servers: the naive work's writes are taken and the checker counts them
// as stale writes accepted; the idempotent work's fence (the intent's
// token) and the txn work's (head's token) refuse it, counted as stale
// writes rejected, and the store stays whole. The grants are given by
// hand: the lock's part is the lock suites'.
func TestLedgerStaleHolder(t *testing.T) {
	const steps = 3
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range ledgerSpec().VariantNames(b.Kind()) {
			t.Run(v, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				spec := WorkSpec{Variant: v, Steps: steps, Store: testcluster.TestNamespace(t, b) + "/ledger"}
				start := time.Now()
				now := func() time.Duration { return time.Since(start) }
				h := &ledgerHistory{}
				works := make([]*ledgerWork, 2)
				for i := range works {
					s, err := b.NewSession(ctx)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = s.Close() })
					works[i] = &ledgerWork{spec: spec, s: s, client: i, now: now}
				}
				section := func(client int, token int64) {
					t.Helper()
					if err := works[client].section(ctx, token, historySink{h, client}); err != nil {
						t.Fatal(err)
					}
				}
				h.grant(now(), 0, 1)
				section(0, 1)
				h.grant(now(), 1, 2)
				section(1, 2)
				section(0, 1) // client 0's lock passed on to client 1
				st, err := readLedgerStore(ctx, works[1].s, spec)
				if err != nil {
					t.Fatal(err)
				}
				w := checkLedger(h, v, steps, st)
				a := w.Anomalies
				t.Logf("%s: store %+v, anomalies %+v, committed %d", v, st, a, w.Committed)
				switch v {
				case WorkNaive:
					if a.StaleAccepted != steps || a.StaleRejected != 0 || w.Committed != 3 {
						t.Errorf("naive: %d stale writes accepted, %d rejected, %d committed: want %d accepted (every step), 3 committed",
							a.StaleAccepted, a.StaleRejected, w.Committed, steps)
					}
				default:
					if a.StaleAccepted != 0 || a.StaleRejected != 1 || a.Violations() != 0 || w.Committed != 2 || st.Head.Count != 2 {
						t.Errorf("%s: anomalies %+v, %d committed, head %+v: want the stale holder's one write rejected, nothing else, 2 committed",
							v, a, w.Committed, st.Head)
					}
				}
			})
		}
	})
}
