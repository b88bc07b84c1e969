package safety

import (
	"fmt"
	"time"

	"github.com/zkbench/zkbench/results"
)

// ElectionChecker checks a leader election: terms must not overlap (at most
// one leader at a time, checked like a lock by a Checker), and a leader must
// not act once another is leading. Elected and Deposed bracket a term; Act
// records one leader action (a write, a heartbeat, a decision) and is where
// two leaders acting at once is caught, which is what does the damage.
//
// Safe for concurrent use.
type ElectionChecker struct {
	terms *Checker

	// guarded by terms.mu
	acts, concurrentActs, actsWithoutTerm int64
}

// NewElectionChecker returns a checker with no leader. Options are the
// Checker's; the noun defaults to "leadership".
func NewElectionChecker(opts ...CheckerOption) *ElectionChecker {
	return &ElectionChecker{terms: NewChecker(append([]CheckerOption{WithNoun("leadership")}, opts...)...)}
}

// Elected records that client became leader at offset at, for a term
// identified by a fencing token (the leader node's create revision). It
// returns how many other clients were leading then (0 when safe).
func (e *ElectionChecker) Elected(client int, term int64, at time.Duration) int {
	return e.terms.Enter(client, term, at)
}

// Deposed records that client stopped leading (resigned, or saw its session
// end). It reports whether client was leading.
func (e *ElectionChecker) Deposed(client int, at time.Duration) bool {
	return e.terms.Exit(client, at)
}

// Act records that client acted as leader of term at offset at. It reports
// whether the act was safe: client leads, alone. An act while another client
// leads too, or by a leader whose term is older than a newer leader's, is a
// concurrent act; an act by a client that does not lead is an act without a
// term. Both are violations.
func (e *ElectionChecker) Act(client int, term int64, at time.Duration) bool {
	c := e.terms
	c.mu.Lock()
	defer c.mu.Unlock()
	e.acts++
	if c.find(client) < 0 {
		e.actsWithoutTerm++
		c.details.add("at %v client %d acted as leader of term %d without leading", at.Round(time.Microsecond), client, term)
		return false
	}
	if len(c.inside) == 1 {
		return true
	}
	e.concurrentActs++
	for _, o := range c.inside {
		if o.Client != client {
			c.details.add("at %v client %d acted as leader of term %d while client %d led term %d",
				at.Round(time.Microsecond), client, term, o.Client, o.Token)
			break
		}
	}
	return false
}

// ElectionReport is what an ElectionChecker found.
type ElectionReport struct {
	// Terms is the term checker's report: Violations are overlapping terms.
	Terms           Report `json:"terms"`
	Acts            int64  `json:"acts"`
	ConcurrentActs  int64  `json:"concurrent_acts"`
	ActsWithoutTerm int64  `json:"acts_without_term"`
}

// Report returns the findings so far.
func (e *ElectionChecker) Report() ElectionReport {
	r := e.terms.Report()
	e.terms.mu.Lock()
	defer e.terms.mu.Unlock()
	return ElectionReport{Terms: r, Acts: e.acts, ConcurrentActs: e.concurrentActs, ActsWithoutTerm: e.actsWithoutTerm}
}

// Safety returns the findings as a results.Safety: Checked counts terms,
// Violations overlapping terms, token regressions and unsafe acts.
func (e *ElectionChecker) Safety() results.Safety {
	r := e.Report()
	return results.Safety{
		Checked:    r.Terms.Entered,
		Violations: r.Terms.Violations + r.Terms.TokenRegressions + r.ConcurrentActs + r.ActsWithoutTerm,
		Details:    r.Terms.Details,
	}
}

func (r ElectionReport) String() string {
	return fmt.Sprintf("%d terms, %d overlapping, %d acts, %d concurrent, %d without a term",
		r.Terms.Entered, r.Terms.Violations, r.Acts, r.ConcurrentActs, r.ActsWithoutTerm)
}
