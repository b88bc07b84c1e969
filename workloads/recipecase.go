package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// recipeCase is what the election and barrier workloads share around their
// own loop: the result under construction, the clients, the meter, and the
// end of the case (closing sessions, lost sessions, leftovers), done the
// same way as the lock workload's.
type recipeCase struct {
	c       Case
	res     results.Result
	meter   *Meter
	baseRSS uint64
	clients *Clients
	closed  bool
}

// newRecipeCase validates c and fills the result's identity. extra is how
// many sessions beyond c.Clients the case opens (for the connection limit).

func newRecipeCase(spec Spec, c Case, extra int) (*recipeCase, error) {
	rc := &recipeCase{c: c, res: newResult(spec, c)}
	if err := c.Validate(); err != nil {
		return rc, err
	}

	if err := CheckClientLimit(c.Cluster, c.Clients+extra); err != nil {
		return rc, err
	}
	return rc, nil
}

// open opens n sessions (the case's clients, or extra ones such as the
// observers workload's candidates) with the case's progress and events.
func (rc *recipeCase) open(ctx context.Context, n int) (*Clients, error) {
	if rc.meter == nil {
		rc.meter = NewMeter(rc.c.Backend, rc.c.Cluster, WithServerPIDs(rc.c.ServerPIDs))
		rc.baseRSS = baseRSS()
	}
	log := rc.c.log()
	cl, err := OpenClients(ctx, rc.c.Backend, n, WithOpenProgress(log.Progress), WithSessionEvents(log.Event))
	if err != nil && ctx.Err() != nil {
		rc.res.StoppedBy = StoppedByInterrupted
	}
	return cl, err
}

// closeAll closes every session in cls on a fresh bounded context; a
// failure becomes a note.
func (rc *recipeCase) closeAll(ctx context.Context, cls ...*Clients) {
	for _, cl := range cls {
		if cl == nil {
			continue
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		if err := cl.Close(cctx); err != nil {
			rc.res.Notes = append(rc.res.Notes, err.Error())
		}
		cancel()
	}
}

// finish notes sessions lost during the case (beyond expected, the ones
// the workload ended itself) and checks the namespace for leftovers once
// every session is closed; keep lists persistent directories to ignore.
func (rc *recipeCase) finish(ctx context.Context, lost, expected int64, keep ...string) {
	if lost > expected {
		rc.res.SessionsLost = lost - expected
		rc.res.Notes = append(rc.res.Notes, fmt.Sprintf("%d sessions were lost during the case%s", lost-expected, results.LossCause(rc.res.Load)))
	}
	admin, ok := rc.c.Backend.(backends.Admin)
	if !ok {
		rc.res.Notes = append(rc.res.Notes, "leftovers not checked: the backend has no Admin")
		return
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leftoverGrace+10*time.Second)
	defer cancel()
	left, err := FindLeftovers(lctx, admin, rc.c.Namespace, leftoverGrace, keep...)
	switch {
	case err != nil:
		rc.res.Notes = append(rc.res.Notes, fmt.Sprintf("leftovers not checked: %v", err))
	case len(left) > 0:
		rc.res.Notes = append(rc.res.Notes, fmt.Sprintf("%d nodes left in the namespace after every session closed (first: %s)", len(left), left[0]))
		rc.c.log().Leftovers(left)
	}
}

// fill writes the meter's figures over ops successful operations, wasted
// wake-ups (watch events beyond needed useful ones), and the note on
// uninstrumented variants.
func (rc *recipeCase) fill(out Outcome, ops int64, instrumented bool, needed int64) {
	res := &rc.res
	res.Started = out.Started()
	rc.meter.Fill(res, out.Before, out.After, ops, instrumented, rc.baseRSS)
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
func (rc *recipeCase) count(kind string, err error) {
	if rc.res.Errors[kind] == 0 {
		rc.res.Notes = append(rc.res.Notes, fmt.Sprintf("first %s error: %v", kind, err))
	}
	rc.res.Errors[kind]++
}

// done finalises the result's bookkeeping.
func (rc *recipeCase) done() results.Result {
	if rc.meter != nil {
		rc.meter.Stop()
	}
	if rc.res.Elapsed > 0 {
		rc.res.Throughput = float64(rc.res.Ops.Succeeded) / rc.res.Elapsed.Seconds()
	}
	if rc.res.Safety.Violations > 0 {
		rc.res.Notes = append(rc.res.Notes, fmt.Sprintf("SAFETY VIOLATED %d times", rc.res.Safety.Violations))
	}
	if len(rc.res.Errors) == 0 {
		rc.res.Errors = nil
	}
	return rc.res
}

// bound returns ctx bounded by the case's --duration, if it has one: the
// loops of the simple-barrier, twophase and membership workloads start
// their operations under it.
func (rc *recipeCase) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if rc.c.Config.Duration > 0 {
		return context.WithTimeout(ctx, rc.c.Config.Duration)
	}
	return context.WithCancel(ctx)
}

// stoppedBy says why a loop under runCtx (from bound) over the case's ctx
// ended: interrupted, a failure, --duration, or its operation count.
func stoppedBy(ctx, runCtx context.Context, failed bool) results.StopReason {
	switch {
	case ctx.Err() != nil:
		return StoppedByInterrupted
	case failed:
		return StoppedByError
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return StoppedByDuration
	}
	return StoppedByOps
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
