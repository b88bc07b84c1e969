package workloads

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Crasher kills the worker processes of a case's clients with SIGKILL, for
// the kill-client and kill-holder faults: no release, no session close, no
// last word — the server ends the session when it times out (ZooKeeper's
// session timeout, etcd's lease TTL), and only then does the lock pass on.
// A killed client does not come back: its worker is not restarted, and the
// case goes on with the others.
//
// One Crasher serves a whole run (the fault target holds it); each case
// that runs clients in worker processes attaches its workers while it runs.
// Safe for concurrent use.
type Crasher struct {
	mu       sync.Mutex
	procs    map[int]*lockProc
	now      func() time.Duration
	killStep int // kill-holder kills after this step (0: no steps)
	armed    int // kill-holder faults waiting for a holder mid-work
}

// NewCrasher returns a Crasher with no case attached.
func NewCrasher() *Crasher { return &Crasher{} }

// ErrNoVictim: a kill fault found no running worker to kill (between
// cases, or the client's worker had exited).
var ErrNoVictim = errors.New("workloads: no running worker process to kill")

// procCrash is how a worker was killed: by which fault, and when on the
// case's clock.
type procCrash struct {
	fault string
	at    time.Duration
}

// KillClient SIGKILLs client c's worker process now.
func (k *Crasher) KillClient(c int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.procs[c]
	if p == nil {
		return fmt.Errorf("client %d: %w", c, ErrNoVictim)
	}
	k.killLocked(p, "kill-client")
	return nil
}

// KillHolder arms one kill: the next worker client that reports the
// kill step of an operation in its critical section (see attach) is
// killed before it goes on, its operation part done. It fails if no case
// with steps runs now.
func (k *Crasher) KillHolder() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killStep == 0 || len(k.procs) == 0 {
		return fmt.Errorf("kill-holder: %w in a case whose holders work in steps", ErrNoVictim)
	}
	k.armed++
	return nil
}

// KillStep is the step after which kill-holder kills a holder of an
// operation of steps writes: halfway, rounded up, and never the last, so
// that some of the work is done and some is not; 0 for fewer than 2 steps
// (no crash can fall between them).
func KillStep(steps int) int {
	if steps < 2 {
		return 0
	}
	return min((steps+1)/2, steps-1)
}

// attach makes procs the workers kills act on, now the case's clock, and
// killStep (0: the case's holders do no steps) the step kill-holder waits
// for.
func (k *Crasher) attach(procs []*lockProc, now func() time.Duration, killStep int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.procs = map[int]*lockProc{}
	for _, p := range procs {
		k.procs[p.client] = p
		p.crasher = k
	}
	k.now, k.killStep, k.armed = now, killStep, 0
}

// detach ends the case: it returns how many kill-holder faults found no
// holder mid-work before it ended.
func (k *Crasher) detach() (missed int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	missed = k.armed
	k.procs, k.now, k.killStep, k.armed = nil, nil, 0, 0
	return missed
}

// atStep is called by p's event loop for each step it reports, before the
// ack the worker waits for: if a kill-holder is armed and this is the kill
// step of a step that was done, p is killed and atStep reports true (no
// ack is sent).
func (k *Crasher) atStep(p *lockProc, ev lockEvent) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.armed == 0 || k.procs[p.client] != p || ev.Step != k.killStep || ev.Outcome == stepRejected {
		return false
	}
	k.armed--
	k.killLocked(p, "kill-holder")
	return true
}

func (k *Crasher) killLocked(p *lockProc, fault string) {
	if p.crash.Load() != nil {
		return
	}
	p.crash.Store(&procCrash{fault: fault, at: k.now()})
	delete(k.procs, p.client)
	_ = p.cmd.Process.Kill()
}

// Victims lists the clients whose workers can be killed now.
func (k *Crasher) Victims() []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []int
	for c := range k.procs {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

// crashOf is how p was killed by a fault, or nil.
func (p *lockProc) crashOf() *procCrash { return p.crash.Load() }
