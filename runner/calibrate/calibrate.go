// Package calibrate measures a cluster's raw capacity with plain session
// calls, no recipe: how many writes and reads per second it commits, one
// round trip, one write, and one write-plus-notification. A report sets each
// recipe's load against these numbers to say how close it runs to the
// server's limit. For the herd-free lock the bound is what its handoff
// needs at the least: one write commit plus one notification
// (Calibration.Bound), measured back to back and, with WithPace, after the
// pause a workload leaves between handoffs.
package calibrate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
)

// Errors, checked with errors.Is.
var (
	// ErrNamespace: the namespace is not inside zkbench's own (/zkbench/<id>).
	ErrNamespace = errors.New("calibrate: namespace outside /zkbench/<id>")
	// ErrPhaseFailed: a phase completed no operation.
	ErrPhaseFailed = errors.New("calibrate: phase failed")
)

// Option configures Run.
type Option func(*options)

type options struct {
	phase    time.Duration
	sessions int
	maxOps   int64
	opTimout time.Duration
	pace     time.Duration
	// contended adds the watch_notify_contended phase.
	contended bool
}

// WithPhaseDuration bounds each phase (default 2 s).
func WithPhaseDuration(d time.Duration) Option { return func(o *options) { o.phase = d } }

// WithSessions sets the concurrency of the concurrent phases (default 16
// sessions, each its own connection as the backend makes them).
func WithSessions(n int) Option { return func(o *options) { o.sessions = n } }

// WithMaxOps bounds the operations of each phase (default 200,000), whichever
// of time and count comes first.
func WithMaxOps(n int64) Option { return func(o *options) { o.maxOps = n } }

// WithPace adds a seventh phase, watch_notify_paced: watch_notify with a
// pause of d between the watch and the delete (a lock's hold: the servers
// and the clients idle that long before each handoff). 0, the default,
// leaves it out.
func WithPace(d time.Duration) Option { return func(o *options) { o.pace = d } }

// WithContention adds a phase, watch_notify_contended: watch_notify with
// a third session's create sent just before each delete (a closed loop
// without a hold: the previous holder enqueues again as the next one
// releases, and the two writes reach the servers together).
func WithContention() Option { return func(o *options) { o.contended = true } }

// WithOpTimeout bounds a single call (default 10 s); a call that takes longer
// counts as an error.
func WithOpTimeout(d time.Duration) Option { return func(o *options) { o.opTimout = d } }

// Dir is the folder below the namespace that calibration uses and removes.
const Dir = "calibrate"

// cleanupTimeout bounds the removal of the calibration folder.
const cleanupTimeout = 15 * time.Second

// Run measures the cluster behind b inside ns+"/calibrate" (ns must be a
// run namespace, /zkbench/<id>), in six phases (WithPace and WithContention
// add one each), each bounded by the phase duration and the op count:
//
//   - sequential_create, sequential_get, sequential_delete: one session,
//     one call at a time: the latency of one commit and one round trip;
//   - watch_notify: one session watches a node (ExistsW), another deletes
//     it; the time from the delete call to the watch event is one commit
//     plus one notification;
//   - concurrent_write: Sessions sessions each create and delete their own
//     node in a loop: committed writes per second;
//   - concurrent_read: Sessions sessions get one node in a loop: reads per
//     second.
//
// Cancelling ctx stops the phase in progress; Run then removes what it made
// on a fresh, bounded context, closes its sessions and returns ctx's error.
// Run always removes ns+"/calibrate" before returning.
func Run(ctx context.Context, b backends.Backend, ns string, opts ...Option) (*results.Calibration, error) {
	o := options{phase: 2 * time.Second, sessions: 16, maxOps: 200_000, opTimout: 10 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	o.sessions = max(o.sessions, 1)
	dir := path.Join(ns, Dir)
	if !backends.InNamespace(ns) || !backends.InNamespace(dir) {
		return nil, fmt.Errorf("%w: %q", ErrNamespace, ns)
	}
	c := &calibrator{b: b, dir: dir, o: o}
	defer c.close()
	cal, err := c.run(ctx)
	if cerr := c.cleanup(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return cal, nil
}

type calibrator struct {
	b        backends.Backend
	dir      string
	o        options
	sessions []backends.Session
}

func (c *calibrator) close() {
	for _, s := range c.sessions {
		_ = s.Close()
	}
}

// cleanup removes the calibration folder on a fresh context: it runs after
// a cancel too.
func (c *calibrator) cleanup() error {
	admin, ok := c.b.(backends.Admin)
	if !ok {
		return nil // ephemeral nodes go with the sessions; nothing persistent without Admin
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := admin.DeleteTree(ctx, c.dir); err != nil && !errors.Is(err, backends.ErrNoNode) {
		return fmt.Errorf("calibrate: remove %s: %w", c.dir, err)
	}
	return nil
}

func (c *calibrator) open(ctx context.Context, n int) error {
	for len(c.sessions) < n {
		s, err := c.b.NewSession(ctx)
		if err != nil {
			return fmt.Errorf("calibrate: open session %d: %w", len(c.sessions)+1, err)
		}
		c.sessions = append(c.sessions, s)
	}
	return nil
}

func (c *calibrator) run(ctx context.Context) (*results.Calibration, error) {
	cal := &results.Calibration{
		Backend: c.b.Kind(), StartedAt: time.Now().UTC(),
		PhaseDuration: c.o.phase, Sessions: c.o.sessions,
	}
	if err := c.open(ctx, max(2, c.o.sessions)); err != nil {
		return nil, err
	}
	s0, s1 := c.sessions[0], c.sessions[1]
	for _, p := range []string{c.dir + "/seq", c.dir + "/w", c.dir + "/r"} {
		if err := s0.EnsurePath(ctx, p); err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
	}
	readPath := c.dir + "/r/node"
	if _, err := s0.Create(ctx, readPath, make([]byte, 64)); err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}

	// Sequential creates, then gets, then deletes of the same nodes.
	var created []string
	create, err := c.sequential(ctx, "sequential_create", "write", func(ctx context.Context, i int64) (time.Duration, error) {
		p := c.dir + "/seq/n-" + strconv.FormatInt(i, 10)
		return timed(func() error {
			_, err := s0.Create(ctx, p, nil)
			if err == nil {
				created = append(created, p)
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	get, err := c.sequential(ctx, "sequential_get", "read", func(ctx context.Context, _ int64) (time.Duration, error) {
		return timed(func() error { _, _, err := s0.Get(ctx, readPath); return err })
	})
	if err != nil {
		return nil, err
	}
	del, err := c.sequential(ctx, "sequential_delete", "write", func(ctx context.Context, i int64) (time.Duration, error) {
		if i >= int64(len(created)) {
			return 0, errDone
		}
		return timed(func() error { return s0.Delete(ctx, created[i]) })
	})
	if err != nil {
		return nil, err
	}
	notifyPath := c.dir + "/notify"
	notify, err := c.sequential(ctx, "watch_notify", "notify", func(ctx context.Context, _ int64) (time.Duration, error) {
		return notifyOnce(ctx, s0, s1, notifyPath, 0)
	})
	if err != nil {
		return nil, err
	}
	var paced *phase
	if c.o.pace > 0 {
		paced, err = c.sequential(ctx, "watch_notify_paced", "notify", func(ctx context.Context, _ int64) (time.Duration, error) {
			return notifyOnce(ctx, s0, s1, notifyPath, c.o.pace)
		})
		if err != nil {
			return nil, err
		}
	}
	var contended *phase
	if c.o.contended {
		if err := c.open(ctx, 3); err != nil {
			return nil, err
		}
		s2 := c.sessions[2]
		contended, err = c.sequential(ctx, "watch_notify_contended", "notify", func(ctx context.Context, i int64) (time.Duration, error) {
			return notifyBehind(ctx, s0, s1, s2, notifyPath, c.dir+"/w/contend")
		})
		if err != nil {
			return nil, err
		}
	}
	write, err := c.concurrent(ctx, "concurrent_write", "write", func(ctx context.Context, s backends.Session, id int, _ int64) (int64, error) {
		p := c.dir + "/w/s-" + strconv.Itoa(id)
		if _, err := s.Create(ctx, p, nil); err != nil {
			if errors.Is(err, backends.ErrNodeExists) {
				_ = s.Delete(ctx, p) // left by a create whose outcome was unknown
			}
			return 0, err
		}
		if err := s.Delete(ctx, p); err != nil {
			return 1, err
		}
		return 2, nil
	})
	if err != nil {
		return nil, err
	}
	read, err := c.concurrent(ctx, "concurrent_read", "read", func(ctx context.Context, s backends.Session, _ int, _ int64) (int64, error) {
		if _, _, err := s.Get(ctx, readPath); err != nil {
			return 0, err
		}
		return 1, nil
	})
	if err != nil {
		return nil, err
	}

	phases := []*phase{create, get, del, notify, write, read}
	if paced != nil {
		phases = append(phases, paced)
		cal.NotifyPace = c.o.pace
		cal.PacedNotifyLatency = time.Duration(paced.hist.ValueAtQuantile(50))
	}
	if contended != nil {
		phases = append(phases, contended)
		cal.ContendedNotifyLatency = time.Duration(contended.hist.ValueAtQuantile(50))
	}
	for _, p := range phases {
		h, err := results.NewHistogram(p.hist)
		if err != nil {
			return nil, err
		}
		p.out.Latency = h
		cal.Phases = append(cal.Phases, p.out)
	}
	commit := results.NewRecorder()
	commit.Merge(create.hist)
	commit.Merge(del.hist)
	cal.WriteLatency = time.Duration(commit.ValueAtQuantile(50))
	cal.RTT = time.Duration(get.hist.ValueAtQuantile(50))
	cal.NotifyLatency = time.Duration(notify.hist.ValueAtQuantile(50))
	cal.HandoffBound = cal.Bound()
	cal.WritesPerSec = write.out.Rate
	cal.ReadsPerSec = read.out.Rate
	return cal, nil
}

// errDone ends a sequential phase early (nothing left to do).
var errDone = errors.New("calibrate: phase done")

type phase struct {
	out  results.CalibrationPhase
	hist *hdrhistogram.Histogram
}

func (p *phase) finish(start time.Time) error {
	p.out.Elapsed = time.Since(start)
	if p.out.Elapsed > 0 {
		p.out.Rate = float64(p.out.Ops) / p.out.Elapsed.Seconds()
	}
	if p.out.Ops == 0 {
		return fmt.Errorf("%w: %s completed no operation (%d errors)", ErrPhaseFailed, p.out.Name, p.out.Errors)
	}
	return nil
}

func timed(f func() error) (time.Duration, error) {
	t := time.Now()
	err := f()
	return time.Since(t), err
}

// sequential runs op one call at a time from one session until the phase
// duration or op count is reached, recording the latency each op measures.
func (c *calibrator) sequential(ctx context.Context, name, kind string, op func(context.Context, int64) (time.Duration, error)) (*phase, error) {
	p := &phase{out: results.CalibrationPhase{Name: name, Kind: kind, Sessions: 1}, hist: results.NewRecorder()}
	start := time.Now()
	end := start.Add(c.o.phase)
	for i := int64(0); i < c.o.maxOps && time.Now().Before(end); i++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", name, err)
		}
		octx, cancel := context.WithTimeout(ctx, c.o.opTimout)
		d, err := op(octx, i)
		cancel()
		switch {
		case errors.Is(err, errDone):
			return p, p.finish(start)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("calibrate: %s: %w", name, ctx.Err())
		case err != nil:
			p.out.Errors++
		default:
			p.out.Ops++
			results.Record(p.hist, d)
		}
	}
	return p, p.finish(start)
}

// notifyOnce: s1 makes the node, s0 watches it, both idle for pause, s1
// deletes it; the latency recorded is from the delete call to the event at
// s0.
func notifyOnce(ctx context.Context, s0, s1 backends.Session, p string, pause time.Duration) (time.Duration, error) {
	return notifyWith(ctx, s0, s1, p, pause, nil)
}

// notifyWith is notifyOnce calling beforeDelete (nil: nothing) just before
// the delete.
func notifyWith(ctx context.Context, s0, s1 backends.Session, p string, pause time.Duration, beforeDelete func()) (time.Duration, error) {
	if _, err := s1.Create(ctx, p, nil); err != nil {
		if errors.Is(err, backends.ErrNodeExists) {
			_ = s1.Delete(ctx, p) // left by an iteration that failed
		}
		return 0, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	exists, _, events, err := s0.ExistsW(wctx, p)
	if err != nil {
		_ = s1.Delete(ctx, p)
		return 0, err
	}
	if !exists {
		return 0, fmt.Errorf("calibrate: %s vanished before the delete", p)
	}
	if pause > 0 {
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			_ = s1.Delete(context.WithoutCancel(ctx), p)
			return 0, ctx.Err()
		}
	}
	if beforeDelete != nil {
		beforeDelete()
	}
	t := time.Now()
	if err := s1.Delete(ctx, p); err != nil {
		return 0, err
	}
	select {
	case ev, ok := <-events:
		if !ok {
			return 0, fmt.Errorf("calibrate: watch on %s closed without an event: %w", p, ctx.Err())
		}
		if ev.Type != backends.EventDeleted {
			return 0, fmt.Errorf("calibrate: watch on %s saw %v, want deleted", p, ev.Type)
		}
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return time.Since(t), nil
}

// notifyBehind is notifyOnce with s2's create of side sent just before
// s1's delete (the goroutine that makes it has started when the delete's
// call does), and side removed again after the event, outside the time
// recorded. An iteration that fails before the delete makes no create.
func notifyBehind(ctx context.Context, s0, s1, s2 backends.Session, p, side string) (time.Duration, error) {
	var created chan error
	d, err := notifyWith(ctx, s0, s1, p, 0, func() {
		created = make(chan error, 1)
		started := make(chan struct{})
		go func() {
			close(started)
			_, err := s2.Create(ctx, side, nil)
			created <- err
		}()
		<-started
	})
	if created == nil {
		return d, err
	}
	// The create is bounded by ctx: the wait ends.
	cerr := <-created
	if cerr == nil || errors.Is(cerr, backends.ErrNodeExists) {
		// ErrNodeExists: left by an iteration whose delete failed.
		if derr := s2.Delete(ctx, side); cerr == nil {
			cerr = derr
		}
	}
	return d, cmp.Or(err, cerr)
}

// concurrent runs op in a loop on every session until the phase ends; op
// returns how many operations it completed (a create+delete pair is two).
func (c *calibrator) concurrent(ctx context.Context, name, kind string, op func(context.Context, backends.Session, int, int64) (int64, error)) (*phase, error) {
	p := &phase{out: results.CalibrationPhase{Name: name, Kind: kind, Sessions: c.o.sessions}, hist: results.NewRecorder()}
	start := time.Now()
	end := start.Add(c.o.phase)
	perSession := max(c.o.maxOps/int64(c.o.sessions), 1)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, s := range c.sessions[:c.o.sessions] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := results.NewRecorder()
			var ops, errs int64
			for i := int64(0); ops < perSession && time.Now().Before(end) && ctx.Err() == nil; i++ {
				octx, cancel := context.WithTimeout(ctx, c.o.opTimout)
				t := time.Now()
				n, err := op(octx, s, id, i)
				d := time.Since(t)
				cancel()
				ops += n
				if err != nil {
					if ctx.Err() == nil {
						errs++
					}
					continue
				}
				results.Record(h, d)
			}
			mu.Lock()
			p.out.Ops += ops
			p.out.Errors += errs
			p.hist.Merge(h)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", name, err)
	}
	return p, p.finish(start)
}
