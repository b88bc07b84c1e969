package recipetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
)

// Sizes of the double barrier tests.
const (
	barrierParticipants = 5
	barrierRounds       = 3
)

// RunDoubleBarrierSuite runs every double barrier subtest for variant v on
// backend b: nobody passes Enter before N arrived, nobody passes Leave
// before all called it, over several rounds; the notification count per
// participant (one where herd-free, one per arrival where not); cleanup
// after a cancelled Enter and after a participant's session ends inside.
// Each subtest works in a fresh namespace removed when it ends. With only,
// just the subtests so named run (see pick).
func RunDoubleBarrierSuite(t *testing.T, b backends.Backend, v variants.Variant[recipes.DoubleBarrierFactory], only ...string) {
	subtests := []subtest[*barrierEnv]{
		{"Rounds", testBarrierRounds},
		{"StaggeredWakeups", testBarrierStaggered},
		{"CancelCleansUp", testBarrierCancel},
		{"SessionLostInside", testBarrierSessionLost},
	}
	runSuite(t, b, "barrier", subtests, only, func(e *env) *barrierEnv { return &barrierEnv{env: e, v: v} })
}

// testBarrierRounds: N participants run R rounds concurrently (each round
// on its own path), with random delays before Enter, in the computation and
// before Leave. Nobody passes Enter before all N began it, nobody passes
// Leave before all N began it, and no node is left afterwards.
func testBarrierRounds(e *barrierEnv) {
	ps := e.newParticipants(barrierParticipants)
	x := &crossing{}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	errs := concurrently(len(ps), func(i int) error {
		p := ps[i]
		for r := range barrierRounds {
			db := e.v.New(p.s, e.round(r), barrierParticipants)
			if err := x.cross(ctx, p.id, r, "Enter", db.Enter); err != nil {
				return err
			}
			if err := x.cross(ctx, p.id, r, "Leave", db.Leave); err != nil {
				return err
			}
		}
		return nil
	})
	for _, err := range errs {
		e.t.Error(err)
	}
	for _, v := range x.violations {
		e.t.Error(v)
	}
	e.listBecomes(e.path, 0)
}

// testBarrierStaggered: participants enter one at a time, each a quiet
// window after the previous, then leave one at a time the same way. Nobody
// passes before the last began; a herd-free barrier wakes each participant
// at most once per phase, a herd-prone one wakes the first participant once
// per later arrival (and the first to leave once per later departure).
func testBarrierStaggered(e *barrierEnv) {
	n := barrierParticipants
	ps := e.newParticipants(n)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	dbs := make([]recipes.DoubleBarrier, n)
	for i, p := range ps {
		dbs[i] = e.v.New(p.s, e.round(0), n)
	}
	enters := e.oneByOne(ctx, "Enter", "arrived", ps, dbs, recipes.DoubleBarrier.Enter)
	leaves := e.oneByOne(ctx, "Leave", "leaving", ps, dbs, recipes.DoubleBarrier.Leave)
	var ew, lw []int
	events := int64(0)
	for i, p := range ps {
		ew, lw = append(ew, enters[i].p.Wakeups), append(lw, leaves[i].p.Wakeups)
		events += p.events()
	}
	e.t.Logf("%s, N=%d: Enter wake-ups %v, Leave wake-ups %v, %.1f notifications per participant",
		e.v.Name, n, ew, lw, float64(events)/float64(n))
	if e.v.HerdFree {
		for i := range n {
			if ew[i] > 1 || lw[i] > 1 {
				e.t.Errorf("participant %d woke %d times entering and %d leaving, want at most 1 each", i, ew[i], lw[i])
			}
		}
	} else if ew[0] < n-2 || lw[0] < n-2 {
		e.t.Errorf("first participant woke %d times entering and %d leaving, want one per later arrival/departure (>= %d)",
			ew[0], lw[0], n-2)
	}
	e.listBecomes(e.path, 0)
}

// oneByOne starts phase what of each participant in turn, a quiet window
// apart, fails if any passes before the last one started (so many are
// said to be doing so), and waits for them all. On a herd-prone variant
// each step wakes every participant still waiting, and the next step waits
// until each has armed its watch again: a step that came sooner would
// reach a watch already spent, one wake-up for two steps (a loaded machine
// can take longer than the quiet window to list again).
func (e *barrierEnv) oneByOne(ctx context.Context, what, doing string, ms []*member, dbs []recipes.DoubleBarrier,
	step func(recipes.DoubleBarrier, context.Context) (recipes.Passage, error)) []*phase {
	e.t.Helper()
	n := len(dbs)
	phs := make([]*phase, n)
	armed := make([]int64, n)
	for i, db := range dbs {
		for j := range i {
			armed[j] = ms[j].armed()
		}
		phs[i] = startPhase(ctx, func(ctx context.Context) (recipes.Passage, error) { return step(db, ctx) })
		time.Sleep(quietWindow)
		for j := range i + 1 {
			if phs[j].finished() && i < n-1 {
				e.t.Fatalf("participant %d passed %s with %d of %d %s (err %v)", j, what, i+1, n, doing, phs[j].err)
			}
		}
		if e.v.HerdFree || i == n-1 {
			continue
		}
		for j := range i {
			e.eventually(settleBound, fmt.Sprintf("participant %d never armed its watch again after participant %d's %s",
				j, i, what), func() bool { return ms[j].armed() > armed[j] || phs[j].finished() })
		}
	}
	e.waitAll(what, phs)
	return phs
}

// testBarrierCancel: a participant whose Enter is cancelled returns ctx's
// error promptly and removes its node; Leave without Enter fails with
// ErrNotEntered.
func testBarrierCancel(e *barrierEnv) {
	ps := e.newParticipants(2)
	members := e.round(0) + "/members"
	a, b := e.v.New(ps[0].s, e.round(0), 3), e.v.New(ps[1].s, e.round(0), 3)
	actx, acancel := context.WithCancel(context.Background())
	bctx, bcancel := context.WithTimeout(context.Background(), opTimeout)
	defer bcancel()
	pa, pb := startPhase(actx, a.Enter), startPhase(bctx, b.Enter)
	e.listBecomes(members, 2)
	time.Sleep(quietWindow)
	e.cancelled("Enter", acancel, pa.done, &pa.err)
	if names := e.list(members); len(names) != 1 {
		e.t.Errorf("after cancel the members are %q, want only the other participant's", names)
	}
	if pb.finished() {
		e.t.Fatalf("the other participant passed Enter alone: %v", pb.err)
	}
	if _, err := a.Leave(bctx); !errors.Is(err, recipes.ErrNotEntered) {
		e.t.Errorf("Leave after a failed Enter: %v, want ErrNotEntered", err)
	}
	bcancel()
	<-pb.done
	e.listBecomes(members, 0)
}

// testBarrierSessionLost: a participant whose session ends after Enter no
// longer holds up the others' Leave.
func testBarrierSessionLost(e *barrierEnv) {
	n := 3
	ps := e.newParticipants(n)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	dbs := make([]recipes.DoubleBarrier, n)
	enters := make([]*phase, n)
	for i, p := range ps {
		dbs[i] = e.v.New(p.s, e.round(0), n)
		enters[i] = startPhase(ctx, dbs[i].Enter)
	}
	e.waitAll("Enter", enters)
	if err := ps[n-1].raw.Close(); err != nil {
		e.t.Fatalf("closing a participant's session: %v", err)
	}
	leaves := make([]*phase, n-1)
	for i := range n - 1 {
		leaves[i] = startPhase(ctx, dbs[i].Leave)
	}
	e.waitAll("Leave", leaves)
	e.listBecomes(e.path, 0)
}
