package runner

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbench/zkbench/faults"
	"github.com/zkbench/zkbench/faults/schedule"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
	"github.com/zkbench/zkbench/workloads/measure"
)

// runCase runs one case with its status line, and with the faults fired at
// their times, counted from when every client of the case has its session,
// when there are any. The faults end with the case: those still in force
// are undone (servers restarted, cuts lifted) before it returns, so that
// its namespace can be removed and the next case starts whole.
func (r *Runner) runCase(ctx context.Context, c workloads.Case) (results.Result, error) {
	c.Live = &measure.Live{}
	st := r.status.beginCase(c.Live, c.Config.Warmup, c.Config.Duration, c.Config.Ops)
	defer r.status.endCase()
	lost := &sessionCounter{Recorder: c.Log, counts: map[string]int64{}, lost: &st.lost}
	c.Log = lost
	rig := r.faults
	if rig == nil || len(rig.specs) == 0 {
		return r.plan.workload.Run(ctx, c)
	}
	if rig.workers != nil {
		c.Processes = rig.workers.processes()
	}
	before := rig.sessions.Counts()
	fctx, stop := context.WithCancel(ctx)
	reports := make(chan schedule.Report, 1)
	connected := rig.startCase(c.Clients)
	go func() {
		select {
		case <-connected:
		case <-fctx.Done():
			reports <- schedule.Report{Skipped: len(rig.specs)}
			return
		}
		r.log.Event("case", "fault clock starts: every client connected", results.NoClient)
		reports <- schedule.Run(fctx, time.Now(), rig.specs, rig.target, r.log)
	}()
	res, err := r.plan.workload.Run(ctx, c)
	stop()
	rep := <-reports
	counts := map[string]int64{}
	for a, n := range rep.Injected {
		counts[string(a)] = int64(n)
	}
	for k, n := range map[string]int{"undone": rep.Undone, "skipped": rep.Skipped, "failed": len(rep.Failures)} {
		if n > 0 {
			counts[k] = int64(n)
		}
	}
	for s, n := range rig.sessions.Counts() {
		if d := n - before[s]; d > 0 && s != faults.SessionConnected {
			counts["session."+string(s)] = d
		}
	}
	for what, n := range lost.snapshot() {
		counts["session."+what] += n
	}
	res.Faults = counts
	for _, fail := range rep.Failures {
		res.Notes = append(res.Notes, "fault "+fail)
	}
	if rep.Skipped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d faults did not fire: the case ended first", rep.Skipped))
	}
	return res, err
}

// sessionCounter passes a case's events on and counts the session ones the
// workload reports itself ("lost").
type sessionCounter struct {
	workloads.Recorder
	lost   *atomic.Int64 // sessions lost, for the status line
	mu     sync.Mutex
	counts map[string]int64
}

func (l *sessionCounter) Event(kind, what string, client int) {
	l.Recorder.Event(kind, what, client)
	if kind == "session" {
		l.mu.Lock()
		l.counts[what]++
		l.mu.Unlock()
		if what == "lost" {
			l.lost.Add(1)
		}
	}
}

func (l *sessionCounter) snapshot() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.counts)
}
