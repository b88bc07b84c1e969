package workloads

import (
	"context"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// failovers elects the first leader, waits until every observer knows it
// and everyone is quiet, then kills the leader min(K, candidates-1) times;
// each failover succeeds when every observer knows the new leader.
func (cr *crowd) failovers(ctx context.Context, observers *measure.Clients) measure.Outcome {
	e := cr.e
	o := measure.Outcome{StoppedBy: StoppedByError}
	res := &e.d.res
	leader, err := e.awaitWin(ctx)
	if err == nil {
		err = cr.allKnow(ctx, leader.lead.Token)
	}
	if err != nil {
		e.countErr(errorKind(err), fmt.Errorf("first election: %w", err))
		return o
	}
	var ended measure.Stop
	cr.settle(ctx, observers)
	o.Before, o.Start, o.Base = e.d.snapshot(ctx, observers), e.now(), e.start
	e.d.c.Live.Start()
	candBefore := e.clients.Total().WatchEvents
	cfg := e.d.c.Config
	k := min(e.set.failovers, len(e.latches)-1)
	for i := 0; i < k; i++ {
		if ctx.Err() != nil {
			break
		}
		if cfg.Duration > 0 && e.now()-o.Start >= cfg.Duration {
			ended.TimedOut = true
			break
		}
		res.Ops.Issued++
		t0 := e.now()
		if e.set.kill == KillClose {
			e.checker.End(leader.candidate, t0)
		}
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.set.stepTimeout)
		err := endSession(kctx, e.clients.Sessions[leader.candidate], e.d.c.Backend, e.set.kill)
		cancel()
		if err != nil {
			res.Ops.Failed++
			e.countErr("kill", err)
			ended.Failed = true
			break
		}
		e.killed++
		next, err := e.awaitWin(ctx)
		if err == nil {
			results.Record(e.latency, next.at-t0)
			err = cr.allKnow(ctx, next.lead.Token)
		}
		if err != nil {
			res.Ops.Failed++
			if ctx.Err() == nil {
				e.countErr(errorKind(err), fmt.Errorf("failover %d: %w", i+1, err))
				ended.Failed = true
			}
			break
		}
		res.Ops.Succeeded++
		e.d.c.Live.Op()
		cr.record(t0)
		e.series.Add(e.now() - o.Start)
		cr.settle(ctx, observers)
		leader = next
	}
	ended.Interrupted = ctx.Err() != nil
	o.StoppedBy = ended.Reason()
	o.End, o.After = e.now(), e.d.snapshot(ctx, observers)
	cr.candEvents = e.clients.Total().WatchEvents - candBefore
	return o
}

// allKnow waits until every observer has learned the leader with token.
func (cr *crowd) allKnow(ctx context.Context, token int64) error {
	deadline := time.Now().Add(cr.e.set.stepTimeout)
	for i := range cr.known {
		for cr.known[i].Load() != token {
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: %w: observer %d did not learn the new leader within %v",
					errStepTimeout, context.DeadlineExceeded, i, cr.e.set.stepTimeout)
			}
			if !sleepCtx(ctx, 500*time.Microsecond) {
				return ctx.Err()
			}
		}
	}
	return nil
}

// record adds, for the failover begun at t0, every observer's time to know
// and the last one's.
func (cr *crowd) record(t0 time.Duration) {
	var last time.Duration
	for i := range cr.knownAt {
		d := time.Duration(cr.knownAt[i].Load()) - t0
		results.Record(cr.observe, d)
		last = max(last, d)
	}
	results.Record(cr.last, last)
}

// settle waits until both the observers and the candidates are quiet.
func (cr *crowd) settle(ctx context.Context, observers *measure.Clients) {
	quiesce(ctx, observers, cr.e.set.settle, cr.e.set.stepTimeout)
	quiesce(ctx, cr.e.clients, cr.e.set.settle, cr.e.set.stepTimeout)
}
