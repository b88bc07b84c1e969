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

// roundMarks are one round's counts and times, a phaseMarks for Enter and
// one for Leave.
type roundMarks [2]phaseMarks

// barrierPhase indexes roundMarks.
type barrierPhase int

const (
	enterPhase barrierPhase = iota
	leavePhase
)

// passed is what a participant through the phase did, in violations.
func (p barrierPhase) passed() string { return [...]string{"entered", "left"}[p] }

// phaseMarks are one phase's calls (of Enter or Leave) and passes through.
type phaseMarks struct {
	called, passed          int
	firstCalled, lastCalled time.Duration
	lastPassed              time.Duration
}

// NewBarrierChecker returns a checker for rounds of n participants.
func NewBarrierChecker(n int) *BarrierChecker { return &BarrierChecker{n: n} }

// Arrive records that a participant calls Enter of round r at at.
func (c *BarrierChecker) Arrive(r int, at time.Duration) { c.call(r, enterPhase, at) }

// Entered records that participant who passed Enter of round r at at.
func (c *BarrierChecker) Entered(r, who int, at time.Duration) { c.pass(r, enterPhase, who, at) }

// Leaving records that a participant calls Leave of round r at at.
func (c *BarrierChecker) Leaving(r int, at time.Duration) { c.call(r, leavePhase, at) }

// Left records that participant who passed Leave of round r at at.
func (c *BarrierChecker) Left(r, who int, at time.Duration) { c.pass(r, leavePhase, who, at) }

// phase returns the marks of phase p of round r. The caller holds c.mu.
func (c *BarrierChecker) phase(r int, p barrierPhase) *phaseMarks {
	for len(c.rounds) <= r {
		c.rounds = append(c.rounds, roundMarks{})
	}
	return &c.rounds[r][p]
}

func (c *BarrierChecker) call(r int, p barrierPhase, at time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.phase(r, p)
	if m.called == 0 {
		m.firstCalled = at
	}
	m.called++
	m.lastCalled = max(m.lastCalled, at)
}

func (c *BarrierChecker) pass(r int, p barrierPhase, who int, at time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.phase(r, p)
	m.passed++
	m.lastPassed = max(m.lastPassed, at)
	c.check(m.called, p.passed(), r, who, at)
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
		enter, leave := m[enterPhase], m[leavePhase]
		if enter.called > 0 {
			out.BegunRounds++
		}
		if leave.passed < c.n {
			continue
		}
		out.CompleteRounds++
		out.CompletedAt = append(out.CompletedAt, leave.lastPassed)
		results.Record(out.EnterRelease, enter.lastPassed-enter.lastCalled)
		results.Record(out.LeaveRelease, leave.lastPassed-leave.lastCalled)
		results.Record(out.Round, leave.lastPassed-enter.firstCalled)
	}
	return out
}
