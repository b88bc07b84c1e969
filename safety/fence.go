// Package safety checks what coordination recipes promise, from inside the
// process that runs the clients: at most one lock holder at a time (Checker),
// at most one leader acting at a time (ElectionChecker), and what fencing
// tokens buy when the promise breaks under faults (Register).
//
// Every type here is safe for concurrent use and cheap: each call takes one
// short mutex and allocates nothing on the success path, so checks run in
// every benchmark, not only in tests.
package safety

import (
	"fmt"
	"slices"
	"sync"

	"github.com/zkbench/zkbench/results"
)

// DefaultMaxDetails bounds the findings a checker describes one by one.
const DefaultMaxDetails = 10

// findings describes a checker's first findings one by one, at most max.
type findings struct {
	max  int
	list []string
}

// add describes one finding, unless max are described already.
func (f *findings) add(format string, args ...any) {
	if len(f.list) < f.max {
		f.list = append(f.list, fmt.Sprintf(format, args...))
	}
}

// Register is a shared resource that lock holders write to, such as a file
// or a row a critical section updates. It shows what fencing buys: a holder
// that was paused past its session's expiry may still believe it holds the
// lock and write after the lock was granted to someone else.
//
// Fenced, the register is a fenced resource: it remembers the highest
// fencing token of any write it accepted and rejects a write carrying an
// older token (counted as Prevented). Like a real fenced store, it knows only
// the tokens that reached it: a stale write that arrives before the new
// holder's first write is accepted (and counted as a violation), so a
// workload should have each new holder write as soon as it is granted.
//
// Unfenced, it accepts every write, and counts as a violation each write
// whose token is older than the newest token it knows of, from a write or a
// Grant: a late write from a holder whose lock was already granted to
// someone else.
type Register struct {
	fenced bool

	mu         sync.Mutex
	lastToken  int64 // highest token of an accepted write
	lastClient int
	granted    int64 // highest token granted (Grant)
	grantedTo  int
	writes     int64
	accepted   int64
	prevented  int64
	violations int64
	details    findings
}

// RegisterOption configures a Register.
type RegisterOption func(*Register)

// WithRegisterDetails bounds the findings described one by one. Default
// DefaultMaxDetails.
func WithRegisterDetails(n int) RegisterOption { return func(r *Register) { r.details.max = n } }

// NewRegister returns an empty register, fenced or not.
func NewRegister(fenced bool, opts ...RegisterOption) *Register {
	r := &Register{fenced: fenced, details: findings{max: DefaultMaxDetails}, lastClient: -1, grantedTo: -1}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Fenced reports the register's mode.
func (r *Register) Fenced() bool { return r.fenced }

// Grant tells the register that the lock was granted to client with token.
// It does not move the fence (a real store does not see grants); it lets the
// register recognise a later write with an older token as stale.
func (r *Register) Grant(token int64, client int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token > r.granted {
		r.granted, r.grantedTo = token, client
	}
}

// Write is client's write carrying fencing token. It reports whether the
// register accepted it: always when unfenced; when fenced, unless token is
// older than the newest token of an accepted write.
func (r *Register) Write(token int64, client int) (accepted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes++
	if r.fenced && token < r.lastToken {
		r.prevented++
		r.details.add("client %d's write with token %d rejected: client %d already wrote with token %d",
			client, token, r.lastClient, r.lastToken)
		return false
	}
	r.accepted++
	switch {
	case token < r.lastToken:
		r.violations++
		r.details.add("client %d's late write with token %d accepted after client %d wrote with token %d",
			client, token, r.lastClient, r.lastToken)
	case token < r.granted:
		r.violations++
		r.details.add("client %d's late write with token %d accepted after the lock was granted to client %d with token %d",
			client, token, r.grantedTo, r.granted)
	}
	if token >= r.lastToken {
		r.lastToken, r.lastClient = token, client
	}
	return true
}

// FenceStats are a Register's counts.
type FenceStats struct {
	Writes   int64 `json:"writes"`
	Accepted int64 `json:"accepted"`
	// Prevented: stale writes the fence rejected.
	Prevented int64 `json:"prevented"`
	// Violations: stale writes accepted (late writes from a holder whose
	// lock had been granted to someone else).
	Violations int64 `json:"violations"`
}

// Stats returns the counts so far.
func (r *Register) Stats() FenceStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return FenceStats{Writes: r.writes, Accepted: r.accepted, Prevented: r.prevented, Violations: r.violations}
}

// Safety returns the findings as a results.Safety: Checked counts writes.
func (r *Register) Safety() results.Safety {
	r.mu.Lock()
	defer r.mu.Unlock()
	return results.Safety{
		Checked:    r.writes,
		Violations: r.violations,
		Prevented:  r.prevented,
		Details:    slices.Clone(r.details.list),
	}
}
