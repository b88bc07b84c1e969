package workloads

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/safety"
	"github.com/zkbench/zkbench/workloads/measure"
)

// The lock workload's files: lock.go (the case: its driver loop, collect
// and the shards' end), lockopen.go (its clients, here and in worker
// processes), lockclient.go (one client's loop, the same in both),
// lockworker.go and lockproc.go (a worker process and this process's side
// of it), lockevents.go (the typed, numbered events a worker reports) and
// lockrecord.go (the recorder every client's events go to), and
// lockchecker.go (exclusion, FIFO order and handoff, which the handoff
// workload shares).

// LockWorkload is the lock benchmark: N clients, each on its own session
// with its own Lock from the variant's factory, contend for one lock at
// <namespace>/lock.
//
// Closed loop (Rate 0): each client acquires, holds for Hold, releases,
// thinks for Think, and again. Open loop (Rate > 0): acquisitions are
// scheduled at Rate per second in total; an idle client takes the next
// scheduled time, sleeps until it, and acquires; latency runs from the
// scheduled time, so time spent queued behind busy clients counts (no
// coordinated omission). Think does not apply in the open loop.
//
// It records acquire latency and the handoff gap (a release to the next
// grant of a client already waiting) as histograms, grants per interval,
// client-side requests and watch events per acquisition (backends/
// instrument; absent for variants that bypass it) beside the servers'
// counter deltas, wasted wake-ups (watch events that did not end a wait),
// FIFO inversions, Jain's index over per-client grants, mutual-exclusion
// violations and errors by kind.
//
// Every holder also writes to one shared register (safety.Register) with its
// grant's fencing token: right after it is granted, and again just before it
// releases, without first looking at whether its lock was lost meanwhile —
// as a holder that wakes from a pause acts before it learns anything. A
// write whose token is older than one already granted or written is stale:
// its holder's lock had passed on. ParamFence chooses the register: "off"
// (default) accepts stale writes and counts each as a violation, "on" is a
// fenced store that rejects them (Safety.Prevented). The register lives in
// this process and costs one short lock per write.
type LockWorkload struct{}

// NewLock returns the lock workload.
func NewLock() *LockWorkload { return &LockWorkload{} }

// fenceParam is the fenced register's parameter (lock, revoke).
func fenceParam() Param {
	return Param{Key: ParamFence, Type: ParamChoice, Choices: []string{FenceOff, FenceOn}, Default: FenceOff,
		Help: "holders write to a shared register with their fencing token after each grant and before each release; " +
			"off: it accepts stale writes (a holder's whose lock passed on) and counts them as violations; on: it rejects them (counted as prevented)"}
}

// DefaultLockHold is the lock workload's hold in a closed-loop run that
// leaves it Auto (zkbench run without --hold).
const DefaultLockHold = 50 * time.Millisecond

// lockSpec declares the lock workload.
func lockSpec() Spec {
	return Spec{
		Name:    "lock",
		Summary: "one acquisition (acquire, hold --hold, release, think --think)",
		Unit:    figures.Acquisition,
		Variants: fromFamily(variants.Locks(),
			VariantSpec{Name: variants.Naive, Class: figures.Naive},
			VariantSpec{Name: variants.NaiveChildren, Class: figures.Naive},
			VariantSpec{Name: variants.Fair, Class: figures.HerdFree},
			VariantSpec{Name: variants.Native, Class: figures.Baseline}),
		Defaults: []string{variants.Naive, variants.Fair},
		Latencies: []figures.Latency{figures.LatencyAcquire, figures.LatencyHandoff,
			figures.LatencyReleaseCall, figures.LatencyHandoffNotify, figures.LatencyHandoffDecide},
		Params: []Param{fenceParam()},
		Knobs:  []Knob{KnobHold, KnobThink, KnobRate, KnobWarmup},
		// A critical section of its own keeps the default run below what
		// a 2-core machine carries with the embedded server in the process
		// (the README's default run: the busiest case, naive at 50
		// clients, used 34% of 2 cores).
		DefaultHold: DefaultLockHold,
		Abilities:   Abilities{Shards: true, ClientProcesses: true, Planned: true},
		New:         func() Workload { return NewLock() },
	}
}

// ListedName is the longest child name a ZooKeeper listing of the named
// lock variants holds (workloads.ListedNamer).
func (*LockWorkload) ListedName(names []string) int {
	var vs []variants.Variant[variants.LockMaker]
	for _, name := range names {
		v, err := variants.Locks().Lookup(name)
		if err != nil {
			return 0
		}
		vs = append(vs, v)
	}
	return variants.LongestListedName(vs...)
}

// Run runs one lock case. See Workload.Run.
func (lw *LockWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	return drive(ctx, lockSpec(), c, 0, &lockCase{})
}

// lockCase is one lock case: its clients in this process and in worker
// processes, their recorders, and the checkers they share.
type lockCase struct {
	v        variants.Variant[variants.LockMaker]
	clients  *measure.Clients
	procs    []*lockProc
	recs     []*lockRecorder
	load     acquireLoad
	checker  *LockChecker
	fence    *safety.Register
	released time.Time // when the shards' intervals started together
	base     time.Time // the workers' start, which their offsets count from
	// ledger, when set, makes the case the ledger workload's: its holders
	// do the ledger's work on the herd-free lock (see ledger.go).
	ledger *ledgerCase
	// missedKills are kill-holder faults that found no holder mid-work
	// before the case ended.
	missedKills int
}

func (lc *lockCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c := d.c
	lockVariant, fenceMode := c.Variant, FenceOff
	var work *WorkSpec
	if lc.ledger != nil {
		lockVariant, work = variants.Fair, &lc.ledger.spec
	}
	v, err := variants.Locks().Lookup(lockVariant)
	if err != nil {
		return measure.Outcome{}, fmt.Errorf("%w: %w", ErrUnknownVariant, err)
	}
	lc.v = v
	if lc.ledger == nil {
		if fenceMode, err = lockSpec().String(c.Config, ParamFence); err != nil {
			return measure.Outcome{}, err
		}
	}
	if c.Shard != nil {
		if c.Processes != nil || c.Config.Ops > 0 {
			return measure.Outcome{}, fmt.Errorf("%w: a shard of a case is bounded by time, with every client in this process", ErrBadCase)
		}
		d.meterOptions = append(d.meterOptions, measure.WithShardOf(c.Shard.Scrape))
	}
	log := c.log()
	lockPath := c.Namespace + "/lock"
	d.keep = []string{lockPath}
	if lc.ledger != nil {
		d.keep = append(d.keep, lc.ledger.nodes()...)
	}
	d.startMeter()
	clients, ids, procs, err := lockClients(ctx, d, lockPath, lockVariant, work)
	if err != nil {
		return measure.Outcome{}, err
	}
	lc.clients, lc.procs = clients, procs
	d.atEnd(func() {
		for _, p := range procs {
			p.kill() // no-op for a worker that has exited
		}
	})
	if c.Shard != nil {
		// The shards' measured intervals start together: once every
		// shard's sessions are open.
		if err := c.Shard.Sync.Ready(ctx); err != nil {
			return measure.Outcome{}, err
		}
		lc.released = time.Now()
	}

	window := measure.NewWindow(c.Config, c.Live)
	window.Anchor = lc.released // zero unless a shard
	checker := NewLockChecker()
	fence := safety.NewRegister(fenceMode == FenceOn, safety.WithRegisterDetails(maxViolationDetails))
	load := newAcquireLoad(c)
	lc.checker, lc.fence, lc.load = checker, fence, load
	// Every client's events go to its own recorder: an in-process
	// client's loop records straight into it, a worker process's events
	// reach it through its lockProc.
	recs := make([]*lockRecorder, c.Clients)
	lc.recs = recs
	loops := make([]*lockClient, len(ids))
	for j, id := range ids {
		l, err := v.New(clients.Sessions[j], lockPath)
		if err != nil {
			return measure.Outcome{}, fmt.Errorf("workloads: lock %s for client %d: %w", c.Variant, id, err)
		}
		recs[id] = newLockRecorder(c.firstClient()+id, window, checker, fence, load.acquire, load.interval, true)
		if c.Shard != nil {
			recs[id].sections = &results.Sections{}
		}
		loops[j] = &lockClient{lock: l, session: clients.Sessions[j], hold: c.Config.Hold, think: c.Config.Think,
			pace: load.pace, now: window.Now}
		if lc.ledger != nil {
			loops[j].work = &ledgerWork{spec: lc.ledger.spec, s: clients.Sessions[j], client: id, now: window.Now}
		}
	}
	for _, p := range procs {
		recs[p.client] = newLockRecorder(p.client, window, checker, fence, load.acquire, load.interval, false)
	}
	if lc.ledger != nil {
		for _, r := range recs {
			r.ledger = lc.ledger.history
		}
	}
	var crasher *Crasher
	if c.Processes != nil && c.Processes.Crasher != nil && len(procs) > 0 {
		crasher = c.Processes.Crasher
		killStep := 0
		if lc.ledger != nil {
			killStep = KillStep(lc.ledger.spec.Steps)
		}
		crasher.attach(procs, window.Now, killStep)
		d.atEnd(func() { crasher.detach() })
	}
	log.Progress(fmt.Sprintf("  %d clients connected; measuring", c.Clients))
	start := func(runCtx context.Context) <-chan struct{} {
		var wg sync.WaitGroup
		for _, p := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.run(runCtx, recs[p.client], log)
			}()
		}
		// Worker processes ask first (see ClientProcesses): the clients
		// here start once each worker's first acquisition has ended.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range procs {
				p.awaitFirst(runCtx)
			}
			for j, id := range ids {
				rec := recs[id]
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := loops[j].run(runCtx, rec); err != nil {
						rec.note = fmt.Sprintf("client %d stopped: %v", id, err)
					}
				}()
			}
		}()
		done := make(chan struct{})
		go func() {
			wg.Wait()
			close(done)
		}()
		return done
	}
	opened := false
	out, err := d.measure(ctx, window, start, func() measure.Snapshot {
		if !opened {
			opened = true
			checker.OpenWindow()
		}
		return d.snapshot(ctx, clients)
	}, drainNames{plural: "clients", stuck: func(limit time.Duration) error {
		return fmt.Errorf("workloads: %d lock workers did not stop within %v of the end of the case", c.Clients, limit)
	}})
	if crasher != nil {
		lc.missedKills = crasher.detach()
	}
	if err == nil && lc.ledger != nil {
		// Every holder has stopped: the store is as the case left it.
		lc.ledger.readStore(ctx, clients.Sessions)
	}
	return out, err
}

// end lines the shards up once this one's clients are gone: shard 0
// checks the namespace for every shard, after every shard's end.
func (lc *lockCase) end(ctx context.Context, d *driver) {
	c := d.c
	if c.Shard == nil {
		return
	}
	res := &d.res
	res.Shard = shardRecord(c.Shard, lc.released, lc.base, lc.recs)
	// Every shard's clients are gone before the namespace is looked at;
	// an interrupted case still lines up (the wait has its own bound).
	if err := c.Shard.Sync.Done(context.WithoutCancel(ctx)); err != nil {
		res.Shard.Incomplete = err.Error()
		res.Notes = append(res.Notes, "case incomplete: "+err.Error())
	}
	d.noLeftoverCheck = c.Shard.Index != 0
}

// shardRecord is what shard sh keeps of a case for the merge: its clients,
// its clock, each client's grants and every critical section.
func shardRecord(sh *CaseShard, released, base time.Time, recs []*lockRecorder) *results.ShardCase {
	sc := &results.ShardCase{
		Index: sh.Index, Count: sh.Count, FirstClient: sh.FirstClient, Clients: len(recs), Host: sh.Host,
		Released: released.UTC(), Base: base.UTC(), Scraped: sh.Scrape,
		PerClient: make([]int64, len(recs)), Sections: &results.Sections{},
	}
	for i, rec := range recs {
		sc.PerClient[i] = rec.ops.Succeeded
		if s := rec.sections; s != nil {
			sc.Sections.Client = append(sc.Sections.Client, s.Client...)
			sc.Sections.Token = append(sc.Sections.Token, s.Token...)
			sc.Sections.Enter = append(sc.Sections.Enter, s.Enter...)
			sc.Sections.Exit = append(sc.Sections.Exit, s.Exit...)
		}
	}
	return sc
}

// collect merges the clients' recorders and the snapshots into the
// result, and notes what the worker processes did not measure.
func (lc *lockCase) collect(d *driver, out measure.Outcome) {
	res, recs, checker, fence := &d.res, lc.recs, lc.checker, lc.fence
	lc.base = out.Base
	tot := addAcquisitions(res, lc.load, recs, out.End)
	var waited int64
	for _, rec := range recs {
		waited += rec.waited
	}
	if res.Elapsed > 0 {
		res.Throughput = float64(res.Ops.Succeeded) / res.Elapsed.Seconds()
	}
	chk := checker.Result()
	res.Safety = chk.Safety
	overlaps := chk.Safety.Violations
	stale := addFence(&res.Safety, fence)
	res.Fairness = results.Fairness{FIFOInversions: chk.FIFOInversions, Jain: results.JainIndex(tot.perClient)}
	addHistogram(res, figures.LatencyHandoff, chk.Handoff)
	addHandoffPath(res, chk.Path)

	d.fill(out, res.Ops.Succeeded, lc.v.ClientCounts, waited)
	tot.note(res)
	if overlaps > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("MUTUAL EXCLUSION VIOLATED %d times", overlaps))
	}
	if f := res.Safety.Fence; stale > 0 && f.Fenced {
		res.Notes = append(res.Notes, fmt.Sprintf("%d stale writes (a holder writing after its lock had passed on): the fence rejected %d, accepted %d that arrived before the new holder's first write",
			stale, f.Rejected, stale-f.Rejected))
	} else if stale > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("STALE WRITES ACCEPTED %d times: holders wrote after their lock had passed on (no fence: --fence on would reject them)", stale))
	}
	d.safetyNoted = true
	// Sessions the worker processes lost are theirs to report; the
	// meter knows when this process's were lost.
	for _, p := range lc.procs {
		if p.lost {
			d.lostElsewhere++
		}
		if p.note != "" {
			res.Notes = append(res.Notes, p.note)
		}
	}
	if len(lc.procs) > 0 {
		res.Notes = append(res.Notes, procNote(lc.procs, lc.ledger != nil))
	}
	d.lossCause = func(l *results.Load) string { return d.meter.LossCause(l, lc.clients.LostAt()) }
	if lc.missedKills > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d kill-holder faults found no worker client holding the lock mid-work before the case ended: nothing was killed for them", lc.missedKills))
	}
	if lc.ledger != nil {
		lc.ledger.collect(res, d.c.Config.Params)
	}
}

// pacer hands out the scheduled start times of the open loop: slot k starts
// phase + k intervals after the workers started, whoever takes it. The
// shards of a case each pace their share of the rate, their phases spread
// over one interval so that together they keep the whole schedule.
type pacer struct {
	interval time.Duration
	phase    time.Duration
	next     atomic.Int64
}

func (p *pacer) slot() time.Duration {
	return p.phase + time.Duration(p.next.Add(1)-1)*p.interval
}

// backlog counts the slots due before end that no client took, and the
// scheduled time of the oldest. Call it once the workers have returned.
func (p *pacer) backlog(end time.Duration) (n int64, oldest time.Duration) {
	if end <= p.phase {
		return 0, 0
	}
	next := p.next.Load()
	due := int64((end - p.phase + p.interval - 1) / p.interval) // slots k with phase + k*interval < end
	if due <= next {
		return 0, 0
	}
	return due - next, p.phase + time.Duration(next)*p.interval
}

// addFence adds what the register saw to s and returns how many writes were
// stale. A register nobody wrote to (no grant carried a token) leaves s as
// it was.
func addFence(s *results.Safety, fence *safety.Register) (stale int64) {
	st := fence.Stats()
	if st.Writes == 0 {
		return 0
	}
	stale = st.Prevented + st.Violations
	s.Violations += st.Violations
	s.Prevented = st.Prevented
	s.Fence = &results.Fence{Fenced: fence.Fenced(), Writes: st.Writes, Stale: stale, Rejected: st.Prevented}
	for _, d := range fence.Safety().Details {
		if len(s.Details) < 2*maxViolationDetails {
			s.Details = append(s.Details, "register: "+d)
		}
	}
	return stale
}
