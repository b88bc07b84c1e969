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
	var o measure.Outcome
	o, cr.candEvents = e.failoversWith(ctx, failoverSteps{
		measured: observers,
		quiet:    []quietGroup{{observers, func(i int) bool { return !cr.out[i].Load() }}, {e.clients, e.waiting}},
		known:    func(ctx context.Context, leader elected) error { return cr.allKnow(ctx, leader.lead.Token) },
		succeeded: func(_ context.Context, _ int, t0 time.Duration, _ elected) time.Duration {
			cr.record(t0)
			return e.now()
		},
	})
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
