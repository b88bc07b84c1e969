package workloads

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// ParamChurn: membership changes (joins plus leaves) per second
// (membership). Default 10.
const ParamChurn = "churn"

// membershipSettle bounds how long the views may take to agree with the
// membership: 30 s, and 10 ms a member beyond 3,000 members. Every view
// is a listing of every member, so agreement takes time in n² for the
// re-listing variant: 5,000 and 10,000 members on one 2-core machine
// took more than 30 s to agree on the first group.
func membershipSettle(n int) time.Duration {
	return max(30*time.Second, time.Duration(n)*10*time.Millisecond)
}

// initialSettle bounds the views' agreement on the group all members
// joined, before the churn (a test shortens it): membershipSettle, or 2 µs
// a name listed if longer, since every member starts by listing the whole
// group, n² names in all (10,000 members on one local etcd member and
// this 2-core machine listed about 78 members' groups a second: 128 s).
var initialSettle = func(n int) time.Duration {
	return max(membershipSettle(n), time.Duration(n)*time.Duration(n)*2*time.Microsecond)
}

// MembershipWorkload runs group membership among N members, each on its
// own session and each keeping a view of the group: all join, then a
// churner makes ParamChurn changes a second, each a random member leaving
// (if in) or joining again (if out), with that member's own session. The
// case's Ops count changes; --duration (or --ops) bounds the churn.
//
// Convergence ("converge") is, for each change, the time from the start of the change's
// write until every member's view equals the membership after it
// ("converge_reply": from the write's reply, for the changes every view
// had after it; those that beat it are counted in a note, not as zeros); a change
// followed by the next one before every view agreed is counted as
// superseded, not converged; each change is counted once, converged or
// superseded (one that restores a membership every view still shows, by
// undoing a change no view had seen, converges as it begins). Per change it records the notifications,
// requests and bytes of every member (and per member, PerOp
// "*_per_participant"), and the view updates each member saw
// ("view_updates_per_participant"). The delta variant's watch bypasses the
// instrument: its notifications and bytes come from the group's own count
// (recipes.GroupCounter). Safety: once the churn stops every view agrees
// with the true membership within membershipSettle (30 s, longer for
// thousands of members); each member that does not is a
// violation.
type MembershipWorkload struct{}

// NewMembership returns the membership workload.
func NewMembership() *MembershipWorkload { return &MembershipWorkload{} }

// membershipSpec declares the group membership workload.
func membershipSpec() Spec {
	return Spec{
		Name:    "membership",
		Summary: "one join or leave (--churn a second) until every member's view agrees",
		Unit:    figures.Change,
		Variants: fromFamily(variants.Groups(),
			VariantSpec{Name: variants.Relist, Class: figures.Naive},
			VariantSpec{Name: variants.Delta, Class: figures.Other}),
		Latencies: []figures.Latency{figures.LatencyConverge, figures.LatencyConvergeReply},
		Params:    []Param{{Key: ParamChurn, Type: ParamPerSecond, Default: "10", Help: "changes (joins plus leaves) per second"}},
		New:       func() Workload { return NewMembership() },
	}
}

// Run runs one membership case. See Workload.Run.
func (w *MembershipWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	return drive(ctx, membershipSpec(), c, 0, &membershipCase{})
}

// membershipCase is one membership case: its churn, and what collect
// needs of it.
type membershipCase struct {
	g         *groupRun
	v         variants.Variant[recipes.GroupFactory]
	agreed    bool
	d         deliveries
	changeErr error
	watchErrs []error
	footprint *results.WatchFootprint
}

func (m *membershipCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c := d.c
	s := d.settings()
	v := variantOf(s, variants.Groups())
	if s.err == nil && !v.Supports(c.Backend.Kind()) {
		_, err := v.New(nil, "")
		return measure.Outcome{}, fmt.Errorf("%w: %s on %s: %w", ErrUnknownVariant, v.Name, c.Backend.Kind(), err)
	}
	churn := s.float(ParamChurn)
	if s.err != nil {
		return measure.Outcome{}, s.err
	}
	m.v = v
	clients, err := d.open(ctx, c.Clients, nil)
	if err != nil {
		return measure.Outcome{}, err
	}
	n := c.Clients
	group := c.Namespace + "/group"
	d.keep = []string{group}
	g := newGroupRun(n)
	m.g = g
	members := make([]recipes.Group, n)
	for i := range members {
		if members[i], err = v.New(clients.Sessions[i], group); err != nil {
			return measure.Outcome{}, err
		}
		if err := members[i].Join(ctx, memberID(i)); err != nil {
			return measure.Outcome{}, fmt.Errorf("member %d join: %w", i, err)
		}
		g.in[i] = true
	}
	g.setTruth(time.Now())
	unwatched := d.baseline(ctx)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var watchers sync.WaitGroup
	m.watchErrs = make([]error, n)
	gate := make(chan struct{}, firstListings)
	for i := range members {
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			err := follow(wctx, members[i], i, g, gate)
			if wctx.Err() == nil {
				m.watchErrs[i] = err
			}
		}()
	}
	if !g.waitAgreed(ctx, initialSettle(n)) {
		stopWatch()
		watchers.Wait()
		if ctx.Err() != nil {
			return measure.Outcome{}, ctx.Err()
		}
		// A measured failure, not the run's: the sweep goes on, and the
		// case says where the group stopped holding together.
		g.mu.Lock()
		agreed, heard := g.agreed, 0
		for _, h := range g.heard {
			if h {
				heard++
			}
		}
		g.mu.Unlock()
		why := fmt.Sprintf("%d never reported a view", n-heard)
		failed := 0
		for i, err := range m.watchErrs {
			if err != nil {
				if failed == 0 {
					why += fmt.Sprintf("; member %d's watch failed: %v", i, err)
				}
				failed++
			}
		}
		if failed > 1 {
			why += fmt.Sprintf(" (and %d more)", failed-1)
		}
		d.count("not_agreed", fmt.Errorf("%d of the %d views did not agree on the group every member joined within %v (%s): the case has no churn to measure",
			n-agreed, n, initialSettle(n), why))
		return measure.Outcome{}, errNoInterval
	}
	m.footprint = measure.Footprint(unwatched, d.hold(ctx), n)
	c.log().Progress(fmt.Sprintf("  %d members joined and agree; churn %.3g changes/s", n, churn))
	bound := d.bound(ctx)
	defer bound.Release()
	start := time.Now()
	var o measure.Outcome
	o.Before, o.Start, o.Base = d.snapshot(ctx, clients), 0, start
	deliveredBefore := delivered(members)
	g.mu.Lock()
	g.updates = 0 // count the churn's view updates only
	g.mu.Unlock()
	c.Live.Start()
	tick := time.NewTicker(time.Duration(float64(time.Second) / churn))
	defer tick.Stop()
	for changes := int64(0); c.Config.Ops <= 0 || changes < c.Config.Ops; changes++ {
		select {
		case <-bound.Ctx().Done():
		case <-tick.C:
		}
		if bound.Ctx().Err() != nil {
			break
		}
		// A change runs to its end on a fresh bounded context: one cut by
		// the case's end would leave the truth unknown.
		// The truth changes as the write begins, so that no view can
		// match it before convergence is timed from there.
		i := rand.IntN(n)
		leaving := g.in[i]
		g.in[i] = !leaving
		g.setTruth(time.Now())
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), membershipSettle(n))
		var err error
		if leaving {
			err = members[i].Leave(cctx, memberID(i))
		} else {
			err = members[i].Join(cctx, memberID(i))
		}
		cancel()
		if err != nil {
			m.changeErr = fmt.Errorf("member %d: %w", i, err)
			break
		}
		g.replied(time.Now())
		c.Live.Op()
	}
	m.agreed = g.waitAgreed(ctx, membershipSettle(n))
	o.End, o.After = time.Since(start), d.snapshot(ctx, clients)
	m.d = delivered(members).sub(deliveredBefore)
	stopWatch()
	watchers.Wait()
	o.StoppedBy = bound.Stop(m.changeErr != nil).Reason()
	return o, nil
}

func memberID(i int) string { return fmt.Sprintf("m-%05d", i) }

// groupRun is the truth and every member's view, as fingerprints: the XOR
// of a hash of each member's name, so that a change costs O(1) and a view
// O(its size).
type groupRun struct {
	mu       sync.Mutex
	n        int
	in       []bool // the churner's own copy of who is in
	truth    uint64
	changeAt time.Time
	view     []uint64
	agreed   int    // views that equal truth
	heard    []bool // views reported at least once
	// settled: the current change has converged (or is the initial
	// group). A change is counted once, converged or superseded: a view
	// that leaves the truth and comes back (a late notification of an
	// earlier change) does not time it again.
	settled bool
	updates int64

	changes, converged, superseded int64
	converge                       *hdrhistogram.Histogram
	// replyAt is when the current change's write returned (zero until
	// it has); convergeReply times convergence from there, and
	// beforeReply counts the changes every view had before it.
	replyAt       time.Time
	convergeReply *hdrhistogram.Histogram
	beforeReply   int64
}

func newGroupRun(n int) *groupRun {
	return &groupRun{n: n, in: make([]bool, n), view: make([]uint64, n), heard: make([]bool, n), converge: results.NewRecorder(), convergeReply: results.NewRecorder()}
}

// replied records that the current change's write returned at `at`.
func (g *groupRun) replied(at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.replyAt = at
}

// convergedAt records the current change's convergence at `at`: from the
// write's start, and from its reply if it had one by then.
func (g *groupRun) convergedAt(at time.Time) {
	g.converged++
	results.Record(g.converge, at.Sub(g.changeAt))
	if g.replyAt.IsZero() {
		g.beforeReply++
		return
	}
	results.Record(g.convergeReply, at.Sub(g.replyAt))
}

func nameHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// setTruth records a change whose write begins at `at` (the first call: the initial
// group, not counted as a change).
func (g *groupRun) setTruth(at time.Time) {
	var fp uint64
	for i, in := range g.in {
		if in {
			fp ^= nameHash(memberID(i))
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	first := g.changeAt.IsZero()
	if !first {
		g.changes++
		if !g.settled {
			g.superseded++
		}
	}
	g.truth, g.changeAt, g.replyAt = fp, at, time.Time{}
	g.agreed = 0
	for _, v := range g.view {
		if v == fp {
			g.agreed++
		}
	}
	// A change that restores a membership every view still shows (it
	// undid one that no view had seen yet) has converged as it begins.
	g.settled = first || g.agreed == g.n
	if !first && g.settled {
		g.convergedAt(time.Now())
	}
}

// firstListings bounds the members that may be starting their watch at
// once: each start lists the whole group, and N members listing N names
// at the same instant queue O(N²) bytes in the servers and the clients
// together (10,000 members: about a gigabyte), which only the start pays;
// the churn, which is measured, is not gated.
const firstListings = 64

// follow keeps member i's view in g until ctx ends: from each change
// alone where the variant reports changes (recipes.ChangeWatcher, O(1) a
// change), else from the whole view Watch reports. It starts once it
// holds a place in gate and gives it back at its first report.
func follow(ctx context.Context, m recipes.Group, i int, g *groupRun, gate chan struct{}) error {
	select {
	case gate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	var once sync.Once
	started := func() { once.Do(func() { <-gate }) }
	defer started()
	seen := func(all []string) {
		g.seen(i, all)
		started()
	}
	if cw, ok := m.(recipes.ChangeWatcher); ok {
		return cw.WatchChanges(ctx, seen, func(joined, left []string) { g.changed(i, joined, left) })
	}
	return m.Watch(ctx, seen)
}

// seen records member i's new view, whole.
func (g *groupRun) seen(i int, members []string) {
	var fp uint64
	for _, m := range members {
		fp ^= nameHash(m)
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setView(i, fp, now)
}

// changed records that members joined and left member i's view.
func (g *groupRun) changed(i int, joined, left []string) {
	var d uint64
	for _, m := range joined {
		d ^= nameHash(m)
	}
	for _, m := range left {
		d ^= nameHash(m)
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setView(i, g.view[i]^d, now)
}

// setView records fp as member i's view from `now` on; g.mu is held.
func (g *groupRun) setView(i int, fp uint64, now time.Time) {
	g.updates++
	g.heard[i] = true
	was := g.view[i] == g.truth
	g.view[i] = fp
	switch is := fp == g.truth; {
	case is && !was:
		g.agreed++
		if g.agreed == g.n && !g.settled {
			g.settled = true
			g.convergedAt(now)
		}
	case was && !is:
		g.agreed--
	}
}

// waitAgreed waits until every view equals the truth, for at most bound.
func (g *groupRun) waitAgreed(ctx context.Context, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for {
		g.mu.Lock()
		all := g.agreed == g.n
		g.mu.Unlock()
		if all {
			return true
		}
		if time.Now().After(deadline) || !sleepCtx(ctx, time.Millisecond) {
			return false
		}
	}
}

// deliveries are what the groups counted themselves (recipes.GroupCounter),
// and how many of the groups watch.
type deliveries struct {
	recipes.Delivered
	watchers int64
}

func (d deliveries) sub(o deliveries) deliveries {
	return deliveries{recipes.Delivered{Events: d.Events - o.Events, Bytes: d.Bytes - o.Bytes,
		RecursiveDeletes: d.RecursiveDeletes - o.RecursiveDeletes}, d.watchers}
}

func delivered(members []recipes.Group) deliveries {
	var d deliveries
	for _, m := range members {
		if c, ok := m.(recipes.GroupCounter); ok {
			n := c.Delivered()
			d.Events += n.Events
			d.Bytes += n.Bytes
			d.RecursiveDeletes += n.RecursiveDeletes
			d.watchers++
		}
	}
	return d
}

// check compares the groups' own count of notifications with the
// servers' (figures.WatchEventsCheck), for a variant past the instrument:
// each group counts every event that reached it on the wire, on one watch
// stream (etcd) or connection. Empty where the servers' counts are not
// whole or agree.
func (d deliveries) check(res *results.Result) string {
	if _, ok := res.Server[backends.MetricWatchEvents]; !ok || res.ServerPartial {
		return ""
	}
	w := &backends.Witness{RecursiveDeleteEvents: d.RecursiveDeletes}
	if res.Backend == backends.Etcd {
		w.WireWatchEvents, w.WatchStreams = d.Events, d.watchers
	}
	return figures.WatchEventsCheck.Note(res.Backend, figures.Totals{WatchEvents: d.Events, Witness: w}, res.Server)
}

// collect fills the case's result.
func (m *membershipCase) collect(dr *driver, o measure.Outcome) {
	res := &dr.res
	res.Watch = m.footprint
	if m.changeErr != nil {
		dr.count("change", m.changeErr)
	}
	for i, err := range m.watchErrs {
		if err != nil {
			dr.count("watch", fmt.Errorf("member %d: %w", i, err))
		}
	}
	g, v, agreed, d := m.g, m.v, m.agreed, m.d
	g.mu.Lock()
	defer g.mu.Unlock()
	res.Ops = results.Ops{Issued: g.changes, Succeeded: g.changes}
	res.Safety = results.Safety{Checked: int64(g.n)}
	if !agreed {
		res.Safety.Violations = int64(g.n - g.agreed)
		res.Safety.Details = append(res.Safety.Details, fmt.Sprintf("%d of %d views did not agree with the membership within %v of the churn's end", g.n-g.agreed, g.n, membershipSettle(g.n)))
	}
	addHistogram(res, figures.LatencyConverge, g.converge)
	addHistogram(res, figures.LatencyConvergeReply, g.convergeReply)
	if g.beforeReply > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d of %d converged changes were in every view before the change's write returned: in converge only", g.beforeReply, g.converged))
	}
	// Every member must hear every change: no notification is wasted.
	dr.fill(o, g.changes, v.ClientCounts, 1<<62)
	if g.changes == 0 {
		return
	}
	ch, n := float64(g.changes), float64(g.n)
	if !v.ClientCounts {
		res.PerOp[figures.WatchEvents.Key] = float64(d.Events) / ch
		res.PerOp[figures.BytesReceived.Key] = float64(d.Bytes) / ch
		res.Notes = append(res.Notes, "delta: client-side notifications and bytes received are the group's own count of what its watch delivered (recipes.GroupCounter); its requests are not counted")
		if n := d.check(res); n != "" {
			res.Notes = append(res.Notes, n)
		}
	}
	for _, f := range figures.Counts() {
		if val, ok := res.PerOp[f.Key]; ok {
			res.PerOp[figures.PerParticipant(f).Key] = val / n
		}
	}
	res.PerOp[figures.ViewUpdatesPerMember.Key] = float64(g.updates) / ch / n
	res.PerOp[figures.Superseded.Key] = float64(g.superseded) / ch
	if g.superseded > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d of %d changes were superseded by the next before every view agreed (not in the converge histogram)", g.superseded, g.changes))
	}
}
