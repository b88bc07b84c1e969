package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

const (
	// closeTimeout bounds closing every session of a case.
	closeTimeout = 30 * time.Second
	// leftoverGrace is how long ephemeral nodes of closed sessions may take
	// to disappear before they count as leftovers.
	leftoverGrace = 3 * time.Second
)

// caseLoop is what a workload brings to the driver: its client loop and
// its collect step. Everything around them (validation, the sessions'
// opening and closing, the bound's stop reason, lost sessions, leftovers,
// the result's bookkeeping) is the driver's, the same for every workload.
type caseLoop interface {
	// run opens the case's sessions with d.open, runs its clients for the
	// case's bounded interval (d.measure over a Window, or its own loop
	// under d.bound) and returns the interval's Outcome. An error means the
	// case could not be run: the driver closes what was opened and returns
	// the partial result with it (errNoInterval: with no error).
	run(ctx context.Context, d *driver) (measure.Outcome, error)
	// collect fills the workload's own figures into d.res once every
	// session is closed; StoppedBy and Elapsed are already the Outcome's.
	collect(d *driver, out measure.Outcome)
}

// caseEnder is an optional ability of a caseLoop: end runs after the lost
// sessions are noted and before the namespace is checked for leftovers
// (the lock's shards line up there).
type caseEnder interface {
	end(ctx context.Context, d *driver)
}

// errNoInterval, returned by a caseLoop's run, ends the case before its
// measured interval with the result as it stands (stopped by error, the
// errors counted) and no error.
var errNoInterval = errors.New("workloads: the case ended before its interval")

// driver runs one case of a workload; one is made by drive for each case.
type driver struct {
	spec    Spec
	c       Case
	res     results.Result
	meter   *measure.Meter
	baseRSS uint64
	opened  []*measure.Clients
	closed  bool

	// What the end of the case needs from the workload's run.

	// keep: persistent directories the leftover check ignores.
	keep []string
	// expectedLost: sessions the workload ended itself (killed leaders).
	expectedLost int64
	// lostElsewhere: sessions lost outside d.opened (worker processes').
	lostElsewhere int64
	// lossCause says why sessions were lost (nil: results.LossCause).
	lossCause func(*results.Load) string
	// noLeftoverCheck: another process checks the namespace (a shard
	// other than 0).
	noLeftoverCheck bool
	// safetyNoted: collect wrote its own note on safety violations.
	safetyNoted bool
	// meterOptions are the meter's options beyond the case's server PIDs.
	meterOptions []measure.MeterOption
	// cleanups run as the driver returns, last first.
	cleanups []func()
}

// atEnd has f run as the driver returns, whatever the case's end.
func (d *driver) atEnd(f func()) { d.cleanups = append(d.cleanups, f) }

// drive runs case c of the workload spec declares with loop: it validates
// c, checks that the cluster takes c.Clients+extra connections, runs the
// loop, closes every session on a fresh bounded context, collects, notes
// lost sessions, checks the namespace for leftovers and returns the
// result. See Workload.Run.
func drive(ctx context.Context, spec Spec, c Case, extra int, loop caseLoop) (results.Result, error) {
	d := &driver{spec: spec, c: c, res: newResult(spec, c)}
	if err := c.Validate(); err != nil {
		return d.res, err
	}
	if err := CheckClientLimit(c.Cluster, c.Clients+extra); err != nil {
		return d.res, err
	}
	defer func() {
		if d.meter != nil {
			d.meter.Stop()
		}
	}()
	defer func() {
		for i := len(d.cleanups) - 1; i >= 0; i-- {
			d.cleanups[i]()
		}
	}()
	defer d.closeAll(ctx)
	out, err := loop.run(ctx, d)
	switch {
	case errors.Is(err, errNoInterval):
		d.closeAll(ctx)
		return d.done(), nil
	case err != nil:
		if ctx.Err() != nil {
			d.res.StoppedBy = StoppedByInterrupted
		}
		d.closeAll(ctx)
		return d.done(), err
	}
	d.closeAll(ctx)
	d.res.StoppedBy, d.res.Elapsed = out.StoppedBy, out.Elapsed()
	loop.collect(d, out)
	d.noteLost()
	if e, ok := loop.(caseEnder); ok {
		e.end(ctx, d)
	}
	if !d.noLeftoverCheck {
		d.checkLeftovers(ctx)
	}
	return d.done(), nil
}

// open opens n sessions (the case's clients, or extra ones such as the
// observers workload's candidates) with the ramp, the instrument and the
// case's progress and session events; b, if not nil, opens them instead
// of the case's backend. The driver closes them at the end of the case.
func (d *driver) open(ctx context.Context, n int, b backends.Backend, opts ...measure.OpenOption) (*measure.Clients, error) {
	d.startMeter()
	if b == nil {
		b = d.c.Backend
	}
	log := d.c.log()
	opts = append([]measure.OpenOption{measure.WithOpenProgress(log.Progress), measure.WithSessionEvents(log.Event)}, opts...)
	cl, err := measure.OpenClients(ctx, b, n, opts...)
	if err != nil {
		return nil, err
	}
	d.opened = append(d.opened, cl)
	return cl, nil
}

// startMeter starts the case's meter, with d.meterOptions, and reads the
// process's memory before any session opens; open calls it, a workload
// that starts more than sessions (worker processes) calls it first.
func (d *driver) startMeter() {
	if d.meter != nil {
		return
	}
	d.meter = measure.NewMeter(d.c.Backend, d.c.Cluster, append([]measure.MeterOption{measure.WithServerPIDs(d.c.ServerPIDs)}, d.meterOptions...)...)
	d.baseRSS = measure.BaseRSS()
}

// holdTimeout bounds one reading of what the servers hold (a forced
// collection on every member).
const holdTimeout = 30 * time.Second

// hold reads what the servers hold now (measure.Meter.Hold): their watches
// and live heap. Outside the measured interval only: it pauses them.
func (d *driver) hold(ctx context.Context) measure.Hold {
	d.startMeter()
	hctx, cancel := context.WithTimeout(ctx, holdTimeout)
	defer cancel()
	d.c.log().Progress("  reading the servers' watches and live heap (a forced collection)")
	return d.meter.Hold(hctx, d.c.Backend)
}

// baseline reads what the servers hold twice, one reading after the
// other, before the case's clients arm their watches: measure.Footprint
// takes the heap reading's noise from the two.
func (d *driver) baseline(ctx context.Context) [2]measure.Hold {
	return [2]measure.Hold{d.hold(ctx), d.hold(ctx)}
}

// closeAll closes every session the case opened, once, on a fresh bounded
// context; a failure becomes a note.
func (d *driver) closeAll(ctx context.Context) {
	if d.closed {
		return
	}
	d.closed = true
	for _, cl := range d.opened {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		if err := cl.Close(cctx); err != nil {
			d.res.Notes = append(d.res.Notes, err.Error())
		}
		cancel()
	}
}

// bound returns ctx bounded by the case's --duration, if it has one, for a
// loop that starts its operations under it; fail ends it early for a
// failure, which its Stop then says.
func (d *driver) bound(ctx context.Context) *measure.Bound {
	return measure.NewBound(ctx, d.c.Config.Duration)
}

// drainNames name a case's workers in what measure says when they do not
// stop: plural in the note ("clients"), stuck in the error.
type drainNames struct {
	plural string
	stuck  func(limit time.Duration) error
}

// measure runs window over the workers start starts, taking its edges
// with snap. Workers still running the window's DrainTimeout after its end
// are stopped by closing every session; if even that does not stop them
// within closeTimeout, the error is names.stuck's.
func (d *driver) measure(ctx context.Context, window *measure.Window, start func(runCtx context.Context) <-chan struct{}, snap func() measure.Snapshot, names drainNames) (measure.Outcome, error) {
	out := window.Run(ctx, start, snap)
	if !out.Drained {
		d.closeAll(ctx)
		if !window.Wait(closeTimeout) {
			return out, names.stuck(window.DrainTimeout + closeTimeout)
		}
		d.res.Notes = append(d.res.Notes, "some "+names.plural+" did not stop within the drain timeout; their sessions were closed to stop them")
	}
	return out, nil
}

// measureRounds measures a case that runs its own loop, one round after
// another under bound (a barrier's rounds, two-phase commits), rather than
// workers under a Window: the interval runs from a snapshot of clients
// before loop to one after it, at offsets from base. loop gets the
// interval's start and reports whether it stopped for a failure of its own.
func (d *driver) measureRounds(ctx context.Context, clients *measure.Clients, base time.Time, bound *measure.Bound, loop func(start time.Duration) (failed bool)) measure.Outcome {
	var o measure.Outcome
	o.Before, o.Start, o.Base = d.snapshot(ctx, clients), time.Since(base), base
	d.c.Live.Start()
	failed := loop(o.Start)
	o.End, o.After = time.Since(base), d.snapshot(ctx, clients)
	o.StoppedBy = bound.Stop(failed).Reason()
	return o
}

// snapshot reads the servers and the clients cls.
func (d *driver) snapshot(ctx context.Context, cls *measure.Clients) measure.Snapshot {
	return d.meter.Snapshot(ctx, cls)
}

// noteLost notes the sessions lost during the case beyond the ones the
// workload ended itself.
func (d *driver) noteLost() {
	lost := d.lostElsewhere - d.expectedLost
	for _, cl := range d.opened {
		lost += cl.Lost()
	}
	if lost <= 0 {
		return
	}
	cause := results.LossCause
	if d.lossCause != nil {
		cause = d.lossCause
	}
	d.res.SessionsLost = lost
	d.res.Notes = append(d.res.Notes, fmt.Sprintf("%d sessions were lost during the case%s", lost, cause(d.res.Load)))
}

// checkLeftovers checks the namespace for leftovers once every session is
// closed, ignoring the persistent directories d.keep names.
func (d *driver) checkLeftovers(ctx context.Context) {
	admin, ok := d.c.Backend.(backends.Admin)
	if !ok {
		d.res.Notes = append(d.res.Notes, "leftovers not checked: the backend has no Admin")
		return
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leftoverGrace+10*time.Second)
	defer cancel()
	left, err := measure.FindLeftovers(lctx, admin, d.c.Namespace, leftoverGrace, d.keep...)
	switch {
	case err != nil:
		d.res.Notes = append(d.res.Notes, fmt.Sprintf("leftovers not checked: %v", err))
	case len(left) > 0:
		d.res.Notes = append(d.res.Notes, fmt.Sprintf("%d nodes left in the namespace after every session closed (first: %s)", len(left), left[0]))
		d.c.log().Leftovers(left)
	}
}

// fill writes the meter's figures over ops successful operations, wasted
// wake-ups (watch events beyond needed useful ones), and the note on
// uninstrumented variants.
func (d *driver) fill(out measure.Outcome, ops int64, instrumented bool, needed int64) {
	res := &d.res
	res.Started = out.Started()
	d.meter.Fill(res, out.Before, out.After, ops, instrumented, d.baseRSS)
	if !instrumented {
		res.Notes = append(res.Notes, "client-side counts not measured: this variant's requests go straight to the client library, past backends/instrument")
		return
	}
	wasted := max(0, res.Client.WatchEvents-needed)
	res.Client.WastedWakeups = wasted
	if ops > 0 {
		res.PerOp[figures.WastedWakeups.Key] = float64(wasted) / float64(ops)
	}
}

// count records one error of kind in the result, with its first message.
func (d *driver) count(kind string, err error) {
	if d.res.Errors[kind] == 0 {
		d.res.Notes = append(d.res.Notes, fmt.Sprintf("first %s error: %v", kind, err))
	}
	d.res.Errors[kind]++
}

// done finalises the result's bookkeeping.
func (d *driver) done() results.Result {
	if d.res.Elapsed > 0 {
		d.res.Throughput = float64(d.res.Ops.Succeeded) / d.res.Elapsed.Seconds()
	}
	if d.res.Safety.Violations > 0 && !d.safetyNoted {
		d.res.Notes = append(d.res.Notes, fmt.Sprintf("SAFETY VIOLATED %d times", d.res.Safety.Violations))
	}
	if len(d.res.Errors) == 0 {
		d.res.Errors = nil
	}
	return d.res
}

// newResult is the result of case c of workload spec before it runs: its
// identity and declarations, stopped by error until the workload says
// otherwise.
func newResult(spec Spec, c Case) results.Result {
	res := results.Result{
		Variant: c.Variant, Clients: c.Clients, Repeat: c.Repeat,
		StoppedBy: StoppedByError,
		Latency:   map[figures.Latency]*results.Histogram{},
		PerOp:     map[string]float64{},
		Errors:    map[string]int64{},
	}
	spec.Declare(&res)
	if c.Backend != nil {
		res.Backend = c.Backend.Kind()
	}
	return res
}

// CheckClientLimit fails when the cluster limits connections per client IP
// (ZooKeeper maxClientCnxns) below what n clients need, with a message that
// says how to fix it. All simulated clients connect from this host's one
// address, and zkbench itself needs one more connection for its checks.
func CheckClientLimit(info backends.ClusterInfo, n int) error {
	if info.Kind != backends.ZooKeeper || info.MaxClientCnxns <= 0 {
		return nil
	}
	if need := n + 1; need > info.MaxClientCnxns {
		return fmt.Errorf("%w: the ZooKeeper servers allow %d connections per client IP (maxClientCnxns) "+
			"and %d clients need %d: set maxClientCnxns=0 (unlimited) or at least %d in zoo.cfg and restart the servers, "+
			"run fewer clients, or use --cluster local, which configures it off",
			ErrBadCase, info.MaxClientCnxns, n, need, need)
	}
	return nil
}

// seriesAt is the result's series of the events that happened at the
// offsets at (from the case's base): its measured part, from o.Start.
func (d *driver) seriesAt(o measure.Outcome, at []time.Duration) results.Series {
	sr := measure.NewSeriesRecorder(measure.SeriesInterval(d.c.Config))
	for _, t := range at {
		sr.Add(t - o.Start)
	}
	return measure.MergeSeries(sr.Interval(), d.res.Elapsed, sr)
}

// addHistogram stores h as the result's latency name, unless it is empty.
func addHistogram(res *results.Result, name figures.Latency, h *hdrhistogram.Histogram) {
	if h.TotalCount() == 0 {
		return
	}
	hs, err := results.NewHistogram(h)
	if err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("%s histogram not stored: %v", name, err))
		return
	}
	res.Latency[name] = hs
}
