package schedule

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkbench/zkbench/internal/ctxsleep"
)

// Recorder receives the timeline events of injected faults (kind "fault").
// workloads.RunLog is one. Implementations must be safe for concurrent use.
type Recorder interface {
	// Event records something that happened now; client is -1 for none.
	Event(kind, what string, client int)
}

// Report counts what a Run did.
type Report struct {
	// Injected counts faults started, by action.
	Injected map[Action]int `json:"injected"`
	// Undone counts undo steps taken (restarts, resumes, restores), at a
	// fault's end or at the end of the run.
	Undone int `json:"undone"`
	// Skipped counts faults the run ended before.
	Skipped int `json:"skipped"`
	// Failures lists actions that returned an error.
	Failures []string `json:"failures,omitempty"`
}

// Total is the number of faults injected.
func (r Report) Total() int {
	n := 0
	for _, v := range r.Injected {
		n += v
	}
	return n
}

// RunOption configures Run.
type RunOption func(*runner)

// WithUndoTimeout bounds the undo of the faults still in force when the
// run's context ends. Default 60s (a ZooKeeper restart waits for the server
// to rejoin).
func WithUndoTimeout(d time.Duration) RunOption { return func(r *runner) { r.undoTimeout = d } }

// Run fires each fault at start+At against t, undoes it at start+At+For,
// records every step with rec (kind "fault"), and returns when ctx is done.
//
// Faults run concurrently, each on its own schedule: a slow action (a
// restart waits for the server to serve) does not delay the others. An
// action that fails is recorded ("<fault> failed: <error>") and counted; the
// run goes on. When ctx ends, faults not yet started are skipped, and every
// fault still in force is undone on a fresh context bounded by the undo
// timeout — paused processes first, then cuts and latency, then restarts —
// so that the run can clean up and the next case starts from a whole cluster.
func Run(ctx context.Context, start time.Time, faults []Fault, t Target, rec Recorder, opts ...RunOption) Report {
	r := &runner{
		t:           t,
		rec:         rec,
		undoTimeout: 60 * time.Second,
		inForce:     map[string]undo{},
		report:      Report{Injected: map[Action]int{}},
	}
	for _, o := range opts {
		o(r)
	}
	var wg sync.WaitGroup
	for id, f := range faults {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.fire(ctx, start, id, f)
		}()
	}
	<-ctx.Done()
	wg.Wait()
	r.undoAll(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.report
}

// undo is one way back from a fault in force, owned by the fault that made
// it (a later fault on the same thing takes it over).
type undo struct {
	owner int
	order int // undo-at-end order: 0 resumes, 1 network, 2 restarts
	what  string
	fn    func(ctx context.Context) error
}

type runner struct {
	t           Target
	rec         Recorder
	undoTimeout time.Duration

	mu      sync.Mutex
	inForce map[string]undo // by resource: "server:1", "latency", "cut:3", ...
	report  Report
}

func (r *runner) event(what string, client int) {
	if r.rec != nil {
		r.rec.Event("fault", what, client)
	}
}

func (r *runner) failed(f Fault, what string, err error) {
	msg := fmt.Sprintf("%s failed: %v", what, err)
	r.mu.Lock()
	r.report.Failures = append(r.report.Failures, msg)
	r.mu.Unlock()
	r.event(msg, f.Client)
}

// sleepUntil waits for t or ctx; it reports whether t came first.
func sleepUntil(ctx context.Context, t time.Time) bool { return ctxsleep.Sleep(ctx, time.Until(t)) }

func (r *runner) fire(ctx context.Context, start time.Time, id int, f Fault) {
	if !sleepUntil(ctx, start.Add(f.At)) {
		r.mu.Lock()
		r.report.Skipped++
		r.mu.Unlock()
		return
	}
	detail, err := r.apply(ctx, id, f)
	if err != nil {
		r.failed(f, f.Name(), err)
		return
	}
	r.mu.Lock()
	r.report.Injected[f.Action]++
	r.mu.Unlock()
	what := f.Name()
	if detail != "" {
		what += ": " + detail
	}
	r.event(what, f.Client)
	if f.For == 0 || !sleepUntil(ctx, start.Add(f.End())) {
		return // in force until undone by another fault or the end of the run
	}
	r.undoOwned(ctx, id, f)
}

// ownIfDone registers u, the way back from a fault on resource key, if
// the action that made the fault succeeded (err is nil); it returns err.
func (r *runner) ownIfDone(err error, key string, u undo) error {
	if err == nil {
		r.mu.Lock()
		r.inForce[key] = u
		r.mu.Unlock()
	}
	return err
}

func (r *runner) drop(keys ...string) {
	r.mu.Lock()
	for _, k := range keys {
		delete(r.inForce, k)
	}
	r.mu.Unlock()
}

func (r *runner) isDown(i int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.inForce[serverKey(i)]
	return ok
}

func serverKey(i int) string       { return "server:" + strconv.Itoa(i) }
func pausedServerKey(i int) string { return "pause-server:" + strconv.Itoa(i) }
func partitionKey(i int) string    { return "partition-server:" + strconv.Itoa(i) }
func cutKey(c int) string          { return "cut:" + strconv.Itoa(c) }
func pausedClientKey(c int) string { return "pause-client:" + strconv.Itoa(c) }

const latencyKey = "latency"

func (r *runner) killServer(ctx context.Context, id, i int) error {
	return r.ownIfDone(r.t.KillServer(ctx, i), serverKey(i), undo{owner: id, order: 2, what: "restart-server:" + strconv.Itoa(i), fn: func(ctx context.Context) error {
		return r.t.RestartServer(ctx, i)
	}})
}

// apply starts fault f and registers its undo; detail says what it hit.
func (r *runner) apply(ctx context.Context, id int, f Fault) (detail string, err error) {
	t := r.t
	switch f.Action {
	case KillServer:
		return "", r.killServer(ctx, id, f.Server)
	case RestartServer:
		if err := t.RestartServer(ctx, f.Server); err != nil {
			return "", err
		}
		r.drop(serverKey(f.Server), pausedServerKey(f.Server), partitionKey(f.Server))
		return "", nil
	case KillLeader:
		i, err := t.Leader(ctx)
		if err != nil {
			return "", fmt.Errorf("find the leader: %w", err)
		}
		return fmt.Sprintf("server %d", i), r.killServer(ctx, id, i)
	case KillServers:
		victims := r.pickVictims(ctx, f.Count)
		var killed []string
		for _, i := range victims {
			if err := r.killServer(ctx, id, i); err != nil {
				return "servers " + strings.Join(killed, ","), fmt.Errorf("server %d: %w", i, err)
			}
			killed = append(killed, strconv.Itoa(i))
		}
		if len(victims) < f.Count {
			return fmt.Sprintf("servers %s (only %d were up)", strings.Join(killed, ","), len(victims)), nil
		}
		return "servers " + strings.Join(killed, ","), nil
	case PauseServer:
		i := f.Server
		return "", r.ownIfDone(t.PauseServer(i), pausedServerKey(i), undo{owner: id, order: 0, what: "resume-server:" + strconv.Itoa(i), fn: func(context.Context) error {
			return t.ResumeServer(i)
		}})
	case PartitionServer, PartitionLeader:
		pt, ok := t.(Partitioner)
		if !ok {
			return "", fmt.Errorf("%w: servers cannot be partitioned here", ErrUnsupported)
		}
		i, detail := f.Server, ""
		if f.Action == PartitionLeader {
			l, err := t.Leader(ctx)
			if err != nil {
				return "", fmt.Errorf("find the leader: %w", err)
			}
			i, detail = l, fmt.Sprintf("server %d", l)
		}
		return detail, r.ownIfDone(pt.PartitionServer(ctx, i), partitionKey(i), undo{owner: id, order: 1, what: "heal-server:" + strconv.Itoa(i), fn: func(ctx context.Context) error {
			return pt.HealServer(ctx, i)
		}})
	case Latency:
		return "", r.ownIfDone(t.SetLatency(f.Base, f.Jitter), latencyKey, undo{owner: id, order: 1, what: "latency off", fn: func(context.Context) error {
			return t.SetLatency(0, 0)
		}})
	case CutClient, CutAll:
		c := f.Client // -1 for cut-all
		return "", r.ownIfDone(t.Cut(c), cutKey(c), undo{owner: id, order: 1, what: "restore " + f.Name(), fn: func(context.Context) error {
			return t.Restore(c)
		}})
	case ResetConns:
		n, err := t.Reset(f.Client)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d connections", n), nil
	case PauseClient:
		c := f.Client
		return "", r.ownIfDone(t.PauseClient(c), pausedClientKey(c), undo{owner: id, order: 0, what: "resume-client:" + strconv.Itoa(c), fn: func(context.Context) error {
			return t.ResumeClient(c)
		}})
	case ExpireSession:
		return "", t.ExpireSession(ctx, f.Client)
	case KillClient, KillHolder:
		k, ok := t.(Killer)
		if !ok {
			return "", fmt.Errorf("%w: clients cannot be killed here", ErrUnsupported)
		}
		if f.Action == KillHolder {
			return "armed: the next holder mid-work", k.KillHolder()
		}
		return "", k.KillClient(f.Client)
	}
	return "", fmt.Errorf("%w: action %q", ErrUnsupported, f.Action)
}

// pickVictims chooses n running servers: followers first in index order,
// then the leader (unknown leader: index order).
func (r *runner) pickVictims(ctx context.Context, n int) []int {
	leader, err := r.t.Leader(ctx)
	if err != nil {
		leader = -1
	}
	var up []int
	for i := range r.t.Limits().Servers {
		if !r.isDown(i) && i != leader {
			up = append(up, i)
		}
	}
	if leader >= 0 && !r.isDown(leader) {
		up = append(up, leader)
	}
	return up[:min(n, len(up))]
}

// undoOwned undoes what fault id still owns, at its end.
func (r *runner) undoOwned(ctx context.Context, id int, f Fault) {
	r.undoTogether(ctx, func(u undo) bool { return u.owner == id }, id, "end "+f.Name(),
		func(string) int { return f.Client })
}

// undoTogether runs, concurrently, the undo of every key in force that
// matches, as undoKey with owner and why; client names the client of a
// key's events. Together, because kill-servers restarts its servers
// together: one alone may lack a quorum.
func (r *runner) undoTogether(ctx context.Context, match func(undo) bool, owner int, why string, client func(key string) int) {
	r.mu.Lock()
	var keys []string
	for k, u := range r.inForce {
		if match(u) {
			keys = append(keys, k)
		}
	}
	r.mu.Unlock()
	slices.Sort(keys)
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.undoKey(ctx, k, owner, why, client(k))
		}()
	}
	wg.Wait()
}

// undoKey runs the undo of key if owner still owns it. If ctx ends during the
// undo, it stays in force for the end-of-run sweep.
func (r *runner) undoKey(ctx context.Context, key string, owner int, why string, client int) {
	r.mu.Lock()
	u, ok := r.inForce[key]
	if !ok || (owner >= 0 && u.owner != owner) {
		r.mu.Unlock()
		return
	}
	delete(r.inForce, key)
	r.mu.Unlock()
	if err := u.fn(ctx); err != nil {
		if ctx.Err() != nil && owner >= 0 {
			r.mu.Lock()
			if _, taken := r.inForce[key]; !taken {
				r.inForce[key] = u
			}
			r.mu.Unlock()
			return
		}
		r.failed(Fault{Client: client}, why+": "+u.what, err)
		return
	}
	r.mu.Lock()
	r.report.Undone++
	r.mu.Unlock()
	r.event(why+": "+u.what, client)
}

// undoAll undoes everything still in force, in order: resumes, then
// network, then restarts (together).
func (r *runner) undoAll(parent context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), r.undoTimeout)
	defer cancel()
	for order := range 3 {
		r.undoTogether(ctx, func(u undo) bool { return u.order == order }, -1, "end of run", clientOf)
	}
}

// clientOf returns the client a resource key names, or -1.
func clientOf(key string) int {
	for _, p := range []string{"cut:", "pause-client:"} {
		if s, ok := strings.CutPrefix(key, p); ok {
			if c, err := strconv.Atoi(s); err == nil {
				return c
			}
		}
	}
	return -1
}
