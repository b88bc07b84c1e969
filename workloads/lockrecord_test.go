package workloads

import (
	"errors"
	"testing"
	"time"

	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/safety"
	"github.com/zkbench/zkbench/workloads/measure"
)

// measuringWindow is a window that measures from offset 0 on, as Run leaves
// it without a warm-up.
func measuringWindow() *measure.Window { return measure.NewMeasuringWindow() }

func feed(t *testing.T, r *lockRecorder, evs ...lockEvent) {
	t.Helper()
	for _, ev := range evs {
		if err := r.event(ev); err != nil {
			t.Fatalf("%s at %v: %v", ev.Kind, ev.At, err)
		}
	}
}

const ms = time.Millisecond

// The exit ends the critical section in the checker; released, which a
// worker sends once its release request has returned, ends the release: a
// grant to another client between the two is no overlap, and the client
// asks again only after it.
func TestLockRecorderReleased(t *testing.T) {
	w := measuringWindow()
	checker := NewLockChecker()
	fence := safety.NewRegister(true)
	worker := newLockRecorder(0, w, checker, fence, results.NewStripes(1), 100*ms, false)
	other := newLockRecorder(1, w, checker, fence, results.NewStripes(1), 100*ms, true)

	feed(t, worker,
		lockEvent{Kind: evAsked, At: 1 * ms, Intended: 1 * ms},
		lockEvent{Kind: evGranted, At: 2 * ms, Token: 1, Wakeups: 1},
		lockEvent{Kind: evWrite, At: 2 * ms, Token: 1})
	feed(t, other, lockEvent{Kind: evAsked, At: 3 * ms, Intended: 3 * ms})
	feed(t, worker, lockEvent{Kind: evWrite, At: 10 * ms, Token: 1}, lockEvent{Kind: evExit, At: 10 * ms})
	if err := worker.event(lockEvent{Kind: evAsked, At: 11 * ms}); !errors.Is(err, errLockProtocol) {
		t.Fatalf("asked again before released: err %v, want errLockProtocol", err)
	}
	// The release lets client 1 in before the worker's released is read.
	feed(t, other, lockEvent{Kind: evGranted, At: 11 * ms, Token: 2, Wakeups: 1})
	feed(t, worker, lockEvent{Kind: evReleased, At: 12 * ms})
	feed(t, other, lockEvent{Kind: evWrite, At: 11 * ms, Token: 2}, lockEvent{Kind: evExit, At: 13 * ms},
		lockEvent{Kind: evReleaseFailed, At: 14 * ms, Err: &workerError{kind: "session_lost", text: "gone"}})
	feed(t, worker, lockEvent{Kind: evAsked, At: 15 * ms, Intended: 15 * ms})

	chk := checker.Result()
	if chk.Safety.Violations != 0 || chk.Exclusion.Unbalanced != 0 || chk.Safety.Checked != 2 {
		t.Errorf("checker %+v, exclusion %+v: want 2 grants, no overlap, balanced", chk.Safety, chk.Exclusion)
	}
	if h := chk.Handoff; h.TotalCount() != 1 || time.Duration(h.Max()) > 2*ms {
		t.Errorf("handoff %d gaps, max %v: want one of 1ms, from the exit", h.TotalCount(), time.Duration(h.Max()))
	}
	if st := fence.Stats(); st.Writes != 3 || st.Prevented != 0 {
		t.Errorf("register %+v: want 3 writes, none stale", st)
	}
	if worker.ops.Succeeded != 1 || worker.waited != 0 || other.waited != 1 {
		t.Errorf("worker ops %+v waited %d, other waited %d: a worker's waits are not counted here", worker.ops, worker.waited, other.waited)
	}
	if other.errs["release_session_lost"] != 1 || other.samples["release_session_lost"] != "gone" {
		t.Errorf("errors %v %v: want the failed release counted", other.errs, other.samples)
	}
	if worker.state != stateAsking {
		t.Errorf("worker is %s after asking again", worker.state)
	}
}

// Events out of the loop's order are protocol errors, not recorded.
func TestLockRecorderRefuses(t *testing.T) {
	for name, evs := range map[string][]lockEvent{
		"released without exit":  {{Kind: evAsked}, {Kind: evGranted, Token: 1}, {Kind: evReleased}},
		"released while idle":    {{Kind: evReleased}},
		"release-failed at idle": {{Kind: evReleaseFailed, Err: errors.New("x")}},
		"granted without asking": {{Kind: evGranted, Token: 1}},
		"write while asking":     {{Kind: evAsked}, {Kind: evWrite, Token: 1}},
		"exit twice":             {{Kind: evAsked}, {Kind: evGranted}, {Kind: evExit}, {Kind: evExit}},
		"asked twice":            {{Kind: evAsked}, {Kind: evAsked}},
		"session event":          {{Kind: evSession, Session: 1}},
		"unknown kind":           {{Kind: evError + 7}},
	} {
		t.Run(name, func(t *testing.T) {
			r := newLockRecorder(0, measuringWindow(), NewLockChecker(), safety.NewRegister(false), results.NewStripes(1), 100*ms, true)
			var err error
			for _, ev := range evs {
				if err = r.event(ev); err != nil {
					break
				}
			}
			if !errors.Is(err, errLockProtocol) {
				t.Errorf("err %v, want errLockProtocol", err)
			}
		})
	}
}

// A client that stops acting mid-call (its worker died) is settled: its
// wait fails, its critical section ends.
func TestLockRecorderAbandon(t *testing.T) {
	w := measuringWindow()
	checker := NewLockChecker()
	asking := newLockRecorder(0, w, checker, safety.NewRegister(false), results.NewStripes(1), 100*ms, false)
	holding := newLockRecorder(1, w, checker, safety.NewRegister(false), results.NewStripes(1), 100*ms, false)
	feed(t, holding, lockEvent{Kind: evAsked, At: ms}, lockEvent{Kind: evGranted, At: 2 * ms})
	feed(t, asking, lockEvent{Kind: evAsked, At: 3 * ms})
	asking.abandon(5*ms, errWorkerExited)
	holding.abandon(5*ms, errWorkerExited)
	if asking.ops.Failed != 1 || asking.errs["other"] != 1 {
		t.Errorf("abandoned wait: ops %+v errors %v", asking.ops, asking.errs)
	}
	// Nobody is inside any more: a new grant overlaps nobody.
	next := newLockRecorder(2, w, checker, safety.NewRegister(false), results.NewStripes(1), 100*ms, false)
	feed(t, next, lockEvent{Kind: evAsked, At: 6 * ms}, lockEvent{Kind: evGranted, At: 7 * ms})
	if v := checker.Result().Safety.Violations; v != 0 {
		t.Errorf("%d violations after the holder was abandoned", v)
	}
}
