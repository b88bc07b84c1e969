package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// errStepTimeout: a failover or an observation took longer than
// ParamStepTimeout.
var errStepTimeout = errors.New("workloads: step timed out")

// failovers elects the first leader, lets the candidates settle, and then
// kills the leader min(K, N-1) times, each time waiting for the next leader
// and for quiet. The measured interval runs from the snapshot after the
// first election settled to the one after the last failover settled, so
// that it holds exactly the failovers' own cost.
func (e *electionRun) failovers(ctx context.Context) measure.Outcome {
	o, _ := e.failoversWith(ctx, failoverSteps{
		measured: e.clients,
		quiet:    []quietGroup{{e.clients, e.waiting}},
		succeeded: func(ctx context.Context, killed int, t0 time.Duration, next elected) time.Duration {
			if e.set.kill != KillCrash { // a crashed leader notices nothing
				e.recordLostNotice(ctx, killed, t0)
			}
			return next.at
		},
	})
	return o
}

// failoverSteps is what a workload brings to the failover loop.
type failoverSteps struct {
	// measured are the clients the interval's snapshots count; quiet, those
	// waited for until they are asleep and quiet after every election.
	measured *measure.Clients
	quiet    []quietGroup
	// known, if set, waits after an election until the workload's clients
	// know the new leader: the failover succeeds only then.
	known func(ctx context.Context, leader elected) error
	// succeeded records the failover begun at t0 that ended the term of
	// candidate killed and elected next, beyond its failover latency; it
	// returns the offset at which the failover ended, for the series.
	succeeded func(ctx context.Context, killed int, t0 time.Duration, next elected) time.Duration
}

// quietGroup is clients the failover loop waits for after an election:
// until every one that waiting says waits has a watch open (a waiter the
// election woke has looked and gone back to sleep), then until their
// requests are quiet for ParamSettle.
type quietGroup struct {
	clients *measure.Clients
	waiting func(i int) bool
}

// failoversWith runs the failover loop: it elects the first leader and
// waits for quiet, then kills the leader min(K, candidates-1) times, each
// time awaiting the next leader (and s.known) and quiet. It returns the
// outcome, and the candidates' notifications over the measured interval.
func (e *electionRun) failoversWith(ctx context.Context, s failoverSteps) (measure.Outcome, int64) {
	o := measure.Outcome{StoppedBy: StoppedByError}
	res := &e.d.res
	leader, err := e.awaitWin(ctx)
	if err == nil && s.known != nil {
		err = s.known(ctx, leader)
	}
	if err != nil {
		e.countErr(errorKind(err), fmt.Errorf("first election: %w", err))
		return o, 0
	}
	unarmed := 0 // settles after which some waiter had no watch open
	settle := func() {
		armed := true
		for _, g := range s.quiet {
			if e.instrumented && !awaitArmed(ctx, g.clients, g.waiting, e.set.stepTimeout) && ctx.Err() == nil {
				armed = false
			}
			quiesce(ctx, g.clients, e.set.settle, e.set.stepTimeout)
		}
		if !armed {
			unarmed++
		}
	}
	var ended measure.Stop
	settle()
	o.Before, o.Start, o.Base = e.d.snapshot(ctx, s.measured), e.now(), e.start
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
		if e.set.kill == KillCrash {
			victim := find[sessionCrasher](e.clients.Sessions[leader.candidate])
			if victim != nil && !sleepCtx(ctx, crashWait(victim.Timeout())) {
				break
			}
		}
		res.Ops.Issued++
		t0 := e.now()
		if e.set.kill != KillExpire { // it acts no more, nor tidies up
			e.checker.End(leader.candidate, t0)
			e.dead[leader.candidate].Store(true)
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
			if s.known != nil {
				err = s.known(ctx, next)
			}
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
		e.series.Add(s.succeeded(ctx, leader.candidate, t0, next) - o.Start)
		settle()
		leader = next
	}
	if unarmed > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("after %d of %d elections some waiter had no watch open within %v (it had left the election, or is still looking): the next failover may count fewer notifications than the herd makes",
			unarmed, e.killed+1, e.set.stepTimeout))
	}
	ended.Interrupted = ctx.Err() != nil
	o.StoppedBy = ended.Reason()
	o.End, o.After = e.now(), e.d.snapshot(ctx, s.measured)
	return o, e.clients.Total().WatchEvents - candBefore
}

// awaitWin waits for the next candidate to be elected.
func (e *electionRun) awaitWin(ctx context.Context) (elected, error) {
	t := time.NewTimer(e.set.stepTimeout)
	defer t.Stop()
	select {
	case w := <-e.wins:
		return w, nil
	case <-ctx.Done():
		return elected{}, ctx.Err()
	case <-t.C:
		return elected{}, fmt.Errorf("%w: %w: no leader within %v", errStepTimeout, context.DeadlineExceeded, e.set.stepTimeout)
	}
}

// recordLostNotice records when the killed leader's term ended on its side
// (its Leadership.Lost), waiting for it up to the step timeout.
func (e *electionRun) recordLostNotice(ctx context.Context, candidate int, t0 time.Duration) {
	deadline := time.Now().Add(e.set.stepTimeout)
	for {
		if at := e.lostAt[candidate].Load(); at != 0 {
			results.Record(e.lostNotice, time.Duration(at-1)-t0)
			return
		}
		if time.Now().After(deadline) || !sleepCtx(ctx, time.Millisecond) {
			return
		}
	}
}
