package workloads

import (
	"fmt"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/results"
)

// BarrierChecker watches every participant of a double barrier, round by
// round, on the clock all clients share:
//
//   - safety: nobody passes Enter before all N participants of the round
//     called Enter, and nobody passes Leave before all N called Leave
//     (finished their computation); every early pass is a violation;
//   - per round: the release of Enter (from the last arrival to the last
//     participant through), the release of Leave (from the last call to
//     the last return), and the whole round (first arrival to last return).
//
// It is safe for concurrent use; each call takes one short lock.
type BarrierChecker struct {
	mu     sync.Mutex
	n      int
	rounds []roundMarks

	checked, violations int64
	details             []string
}

// roundMarks are one round's counts and times.
type roundMarks struct {
	arrived, entered, leaving, left int
	firstArrive, lastArrive         time.Duration
	lastEntered                     time.Duration
	lastLeaving, lastLeft           time.Duration
}

// NewBarrierChecker returns a checker for rounds of n participants.
func NewBarrierChecker(n int) *BarrierChecker { return &BarrierChecker{n: n} }

func (c *BarrierChecker) round(r int) *roundMarks {
	for len(c.rounds) <= r {
		c.rounds = append(c.rounds, roundMarks{})
	}
	return &c.rounds[r]
}

// Arrive records that a participant calls Enter of round r at at.
func (c *BarrierChecker) Arrive(r int, at time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.round(r)
	if m.arrived == 0 {
		m.firstArrive = at
	}
	m.arrived++
	m.lastArrive = max(m.lastArrive, at)
}

// Entered records that participant who passed Enter of round r at at.
func (c *BarrierChecker) Entered(r, who int, at time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.round(r)
	m.entered++
	m.lastEntered = max(m.lastEntered, at)
	c.check(m.arrived, "entered", r, who, at)
}

// Leaving records that a participant calls Leave of round r at at.
func (c *BarrierChecker) Leaving(r int, at time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.round(r)
	m.leaving++
	m.lastLeaving = max(m.lastLeaving, at)
}

// Left records that participant who passed Leave of round r at at.
func (c *BarrierChecker) Left(r, who int, at time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.round(r)
	m.left++
	m.lastLeft = max(m.lastLeft, at)
	c.check(m.leaving, "left", r, who, at)
}

func (c *BarrierChecker) check(started int, what string, r, who int, at time.Duration) {
	c.checked++
	if started >= c.n {
		return
	}
	c.violations++
	if len(c.details) < maxViolationDetails {
		c.details = append(c.details, fmt.Sprintf("at %v participant %d %s round %d with %d of %d there",
			at.Round(time.Microsecond), who, what, r, started, c.n))
	}
}

// BarrierCheckerResult is what a BarrierChecker found over complete rounds.
type BarrierCheckerResult struct {
	Safety                      results.Safety
	EnterRelease, LeaveRelease  *hdrhistogram.Histogram
	Round                       *hdrhistogram.Histogram
	CompleteRounds, BegunRounds int64
	// CompletedAt are the complete rounds' ends (last Leave returned).
	CompletedAt []time.Duration
}

// Result returns the findings so far.
func (c *BarrierChecker) Result() BarrierCheckerResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := BarrierCheckerResult{
		Safety:       results.Safety{Checked: c.checked, Violations: c.violations, Details: append([]string(nil), c.details...)},
		EnterRelease: results.NewRecorder(), LeaveRelease: results.NewRecorder(), Round: results.NewRecorder(),
	}
	for _, m := range c.rounds {
		if m.arrived > 0 {
			out.BegunRounds++
		}
		if m.left < c.n {
			continue
		}
		out.CompleteRounds++
		out.CompletedAt = append(out.CompletedAt, m.lastLeft)
		results.Record(out.EnterRelease, m.lastEntered-m.lastArrive)
		results.Record(out.LeaveRelease, m.lastLeft-m.lastLeaving)
		results.Record(out.Round, m.lastLeft-m.firstArrive)
	}
	return out
}
