package recipetest

import (
	"context"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
)

// txSites is how many sites the two-phase commit suite runs.
const txSites = 5

// RunTwoPhaseSuite runs the two-phase commit subtests for variant v on
// backend b (all of them, or those named in only):
//
//   - AllCommit: every site votes commit at once; every site (and a
//     deciding coordinator) decides commit, and End leaves no node.
//   - OneAbort: one site votes abort; every site decides abort.
//   - SiteSessionLost: one joined site's session ends before it votes;
//     every other site decides abort.
//   - Notifications: the sites vote one after another; all-watch notifies
//     each site once for every vote after its own (n(n-1)/2 in all), the
//     coordinated variant each site at most once (the decision).
//   - LateVoterAfterLoss: sites 0 and 1 vote and wait, site 2's session
//     ends, then sites 3 and 4 vote: every site decides abort, the late
//     ones too (they never listed site 2).
func RunTwoPhaseSuite(t *testing.T, b backends.Backend, v variants.Variant[recipes.TwoPhase], only ...string) {
	subtests := []subtest[*txEnv]{
		{"AllCommit", func(e *txEnv) { e.run(nil, -1, false) }},
		{"OneAbort", func(e *txEnv) { e.run(map[int]bool{2: true}, -1, false) }},
		{"SiteSessionLost", func(e *txEnv) { e.run(nil, txSites-1, false) }},
		{"Notifications", func(e *txEnv) { e.run(nil, -1, true) }},
		{"LateVoterAfterLoss", func(e *txEnv) { e.run(nil, 2, false) }},
	}
	runSuite(t, b, "tx", subtests, only, func(e *env) *txEnv { return &txEnv{barrierEnv: barrierEnv{env: e}, v: v} })
}

// txEnv is one two-phase subtest: the barrier harness's sessions and
// listings, and the variant.
type txEnv struct {
	barrierEnv
	v variants.Variant[recipes.TwoPhase]
}

// run runs one transaction of txSites sites: the sites in aborts vote
// abort, site lost (if >= 0) closes its session after joining instead of
// voting, and sequential makes the sites vote one after another.
func (e *txEnv) run(aborts map[int]bool, lost int, sequential bool) {
	t := e.t
	ms := e.newParticipants(1 + txSites)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	coord := e.v.New.Coordinator(ms[0].s, e.path, txSites)
	if err := coord.Begin(ctx); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	sites := make([]recipes.TxSite, txSites)
	for i := range sites {
		sites[i] = e.v.New.Site(ms[1+i].s, e.path, i, txSites)
		if err := sites[i].Join(ctx); err != nil {
			t.Fatalf("site %d Join: %v", i, err)
		}
	}
	type outcome struct {
		d   recipes.Decision
		err error
	}
	coordDone := make(chan outcome, 1)
	go func() {
		d, err := coord.Decide(ctx)
		coordDone <- outcome{d, err}
	}()
	done := make([]chan outcome, txSites)
	vote := func(i int) {
		done[i] = make(chan outcome, 1)
		go func() {
			d, err := sites[i].Vote(ctx, !aborts[i])
			done[i] <- outcome{d, err}
		}()
	}
	// Without a loss every site votes; with one, the sites before it vote
	// first, and the sites after it only once it is lost.
	early := txSites
	if lost >= 0 {
		early = lost
	}
	for i := range early {
		vote(i)
		if sequential {
			e.listBecomes(e.path+"/"+recipes.TxVotes, i+1)
			if !e.v.HerdFree && i < early-1 {
				// Before the next vote, this site has listed both lists
				// with their watches (two a listing) and every earlier one
				// has heard this vote and listed again: a site arming late
				// folds two votes into one notification, or into none,
				// which a fixed pause cannot rule out on a loaded machine.
				for j := range i + 1 {
					m, want := ms[1+j], int64(i-j)
					for deadline := time.Now().Add(settleBound); m.events() < want || m.armed() < 2*(m.events()+1); time.Sleep(pollEvery) {
						if time.Now().After(deadline) {
							t.Fatalf("site %d after vote %d: notified %d times (want %d, one by each later vote), %d watches armed (want two a listing)",
								j, i, m.events(), want, m.armed())
						}
					}
				}
			}
		}
	}
	if lost >= 0 {
		// Once the early sites (and a deciding coordinator) have armed
		// their watches, the lost site is one they listed: all-watch sites
		// watch the sites and the votes, coordinated ones the decision.
		siteWatches := int64(2)
		if e.v.HerdFree {
			siteWatches = 1
		}
		for j := range early {
			e.eventuallyArmed(ms[1+j], siteWatches)
		}
		if e.v.HerdFree {
			e.eventuallyArmed(ms[0], 2)
		}
		if err := ms[1+lost].raw.Close(); err != nil {
			t.Fatalf("closing site %d's session: %v", lost, err)
		}
		for i := lost + 1; i < txSites; i++ {
			vote(i)
		}
	}
	want := recipes.Commit
	if len(aborts) > 0 || lost >= 0 {
		want = recipes.Abort
	}
	var siteEvents int64
	for i := range sites {
		if i == lost {
			continue
		}
		o := <-done[i]
		if o.err != nil || o.d != want {
			t.Errorf("site %d decided %q (%v), want %q", i, o.d, o.err, want)
		}
		siteEvents += ms[1+i].events()
	}
	o := <-coordDone
	if wantCoord := map[bool]recipes.Decision{true: want, false: ""}[e.v.HerdFree]; o.err != nil || o.d != wantCoord {
		t.Errorf("coordinator decided %q (%v), want %q", o.d, o.err, wantCoord)
	}
	if err := coord.End(ctx); err != nil {
		t.Fatalf("End: %v", err)
	}
	// Read through the admin's session, which on a cluster may be on a
	// member that has not applied End's deletes yet.
	e.listBecomes(e.path, 0)
	t.Logf("%s: decided %s; the sites were notified %d times, the coordinator %d", e.v.Name, want, siteEvents, ms[0].events())
	if !sequential {
		return
	}
	switch e.v.Name {
	case variants.AllWatch:
		if min := int64(txSites * (txSites - 1) / 2); siteEvents < min {
			t.Errorf("all-watch: the sites were notified %d times, want at least %d (each by every later vote)", siteEvents, min)
		}
	case variants.Coordinated:
		if siteEvents > txSites {
			t.Errorf("coordinated: the sites were notified %d times, want at most %d (the decision)", siteEvents, txSites)
		}
	}
}

// eventuallyArmed waits until m has armed at least n watches.
func (e *txEnv) eventuallyArmed(m *member, n int64) {
	e.t.Helper()
	deadline := time.Now().Add(settleBound)
	for m.armed() < n {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s armed %d watches in %v, want %d", m.id, m.armed(), settleBound, n)
		}
		time.Sleep(pollEvery)
	}
}
