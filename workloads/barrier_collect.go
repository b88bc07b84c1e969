package workloads

import (
	"fmt"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// collect turns the participants' recorders, the checker and the snapshots
// into the case's result.
func (bc *barrierCase) collect(d *driver, o measure.Outcome) {
	res, parts := &d.res, bc.parts
	chk := bc.checker.Result()
	res.Ops = results.Ops{Issued: chk.BegunRounds, Succeeded: chk.CompleteRounds, Failed: chk.BegunRounds - chk.CompleteRounds}
	res.Safety = chk.Safety
	enter, leave := results.NewRecorder(), results.NewRecorder()
	var passes, enterReqs, leaveReqs, enterWoke, leaveWoke int64
	for i, p := range parts {
		enter.Merge(p.enter)
		leave.Merge(p.leave)
		passes += p.rounds
		enterReqs += p.enterReqs
		leaveReqs += p.leaveReqs
		enterWoke += p.enterWoke
		leaveWoke += p.leaveWoke
		for k, n := range p.errs {
			res.Errors[k] += n
		}
		if p.firstErr != nil && len(res.Notes) < 5 {
			res.Notes = append(res.Notes, fmt.Sprintf("participant %d: %v", i, p.firstErr))
		}
	}
	addHistogram(res, figures.LatencyEnter, enter)
	addHistogram(res, figures.LatencyLeave, leave)
	addHistogram(res, figures.LatencyEnterRelease, chk.EnterRelease)
	addHistogram(res, figures.LatencyLeaveRelease, chk.LeaveRelease)
	addHistogram(res, figures.LatencyRound, chk.Round)
	res.Series = d.seriesAt(o, chk.CompletedAt)

	// The herd-free barrier's best case: N-1 wake-ups to enter (the ready
	// node) and N to leave (the lowest once, everyone once when it goes).
	n := int64(len(parts))
	d.fill(o, res.Ops.Succeeded, true, res.Ops.Succeeded*(2*n-1))
	for _, f := range figures.Counts() {
		if v, ok := res.PerOp[f.Key]; ok {
			res.PerOp[figures.PerParticipant(f).Key] = v / float64(n)
		}
	}
	if passes > 0 {
		res.PerOp[figures.RequestsPerEnter.Key] = float64(enterReqs) / float64(passes)
		res.PerOp[figures.RequestsPerLeave.Key] = float64(leaveReqs) / float64(passes)
		res.PerOp[figures.WatchEventsPerEnter.Key] = float64(enterWoke) / float64(passes)
		res.PerOp[figures.WatchEventsPerLeave.Key] = float64(leaveWoke) / float64(passes)
	}
	if res.Ops.Failed > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d of %d rounds did not finish (stopped by %s)", res.Ops.Failed, res.Ops.Issued, res.StoppedBy))
	}
}
