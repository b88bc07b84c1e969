package workloads

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// Config workload parameters (results.Config.Params).
const (
	// ParamSize: bytes of the config node's data. Default 1KB.
	ParamSize = "size"
	// ParamPoll: the polling variant's re-read interval (config and
	// simple-barrier). Default 100ms for config, 50ms for simple-barrier.
	ParamPoll = "poll"
)

// Config variants.
const (
	// ConfigPolling: every client re-reads the node every ParamPoll, with
	// no watch: the naive answer, whose cost grows with time, not changes.
	ConfigPolling = "polling"
	// ConfigOneShot: the seed's DataMonitor: exists with a watch, then
	// getData; each event re-arms (two requests and the data a change).
	ConfigOneShot = "one-shot"
	// ConfigPersistent: a watch that stays armed (backends.DataWatcher):
	// etcd's watch stream, whose events carry the data; ZooKeeper's
	// persistent watch (AddWatch, mode PERSISTENT), whose notifications
	// carry none, so the backend reads the node after each one.
	ConfigPersistent = "persistent"
)

const (
	versionBytes  = 8
	minConfigSize = 16
	defaultRate   = 10 // updates a second when --rate is 0
)

// ConfigWorkload is a configuration center: one writer updates a config
// node at Config.Rate updates a second (default 10) with ParamSize bytes;
// N clients, each on its own session, keep the current value and "hot
// reload" (take the new value) on each change they learn of.
//
// Every client must hear every change, so N notifications an update is
// the job, not a herd; the variants differ in what each costs: one-shot
// watches pay a re-arm and a read (the data) an event and may skip
// versions written while they re-arm; a persistent watch pays one
// notification carrying the data (etcd) or one notification and a read
// (ZooKeeper, whose notifications carry no data); polling pays a read an interval whether
// anything changed or not, and its latency is half the interval on
// average.
//
// The unit is an update. Propagation is counted on two clocks, both the
// writer's (the clients share its process): "propagate_start" is each
// client's reload of a version from the start of the writer's Set,
// "propagate" from its reply (the
// commit as the writer knows it), over the reloads that came after the
// reply; those that beat it are counted in BeforeReply, never as zeros.
// "propagate_last" and "propagate_last_start" are, per update, until the
// last client has it or a newer one; "write" is the writer's Set.
// VersionsSkipped counts the versions a client never loaded, per update
// over all clients. Safety checks every
// client: its versions never go back, each data has the size and stamp
// written, and it ends on the last version.
type ConfigWorkload struct{}

// NewConfig returns the config workload.
func NewConfig() *ConfigWorkload { return &ConfigWorkload{} }

// configSpec declares the config center workload.
func configSpec() Spec {
	return Spec{
		Name:    "config",
		Summary: "one config update (--size bytes at --rate) until every client has reloaded it",
		Unit:    figures.Update,
		Variants: []VariantSpec{
			{Name: ConfigPolling, Class: figures.Other},
			{Name: ConfigOneShot, Class: figures.Other},
			{Name: ConfigPersistent, Class: figures.Other},
		},
		Latencies: []figures.Latency{figures.LatencyPropagate, figures.LatencyPropagateLast,
			figures.LatencyPropagateStart, figures.LatencyPropagateLastStart, figures.LatencyWrite},
		Params: []Param{
			{Key: ParamSize, Type: ParamBytes, Default: "1KB", Help: "bytes of the config node's data (512, 64KB, 1MB; KB = 1024 bytes), at most the servers' request limit"},
			{Key: ParamPoll, Type: ParamPause, Default: "100ms", Help: "the polling variant's re-read interval"},
			{Key: ParamStepTimeout, Type: ParamPause, Default: "1m0s", Help: "bound on the clients' first read, their catch-up and a write in flight when the writer stops"},
		},
		Knobs:     []Knob{KnobRate, KnobWarmup},
		Abilities: Abilities{PlannedFanOut: true},
		New:       func() Workload { return NewConfig() },
	}
}

// LargestReply is the largest reply a session reads (workloads.ReplySizer):
// the config's data.
func (*ConfigWorkload) LargestReply(cfg results.Config) int {
	size, err := configSize(cfg)
	if err != nil {
		return 0
	}
	return size
}

// CheckRun refuses a --size the servers would refuse (workloads.RunChecker).
func (*ConfigWorkload) CheckRun(kind backends.Kind, variants []string, params map[string]string) error {
	if err := configSpec().CheckVariants(kind, variants); err != nil {
		return err
	}
	size, err := configSize(results.Config{Params: params})
	if err == nil {
		err = CheckConfigSize(kind, size)
	}
	return err
}

func configSize(cfg results.Config) (int, error) { return configSpec().Int(cfg, ParamSize) }

// configRun is one case: the writer's commits and every client's reloads.
type configRun struct {
	d       *driver
	path    string
	size    int
	base    time.Time
	starts  []time.Duration // starts[v]: offset at which version v's Set was called (under gate)
	commits []time.Duration // commits[v]: offset at which version v's Set returned (under gate)
	inDoubt int64           // the version whose Set failed, which may have committed; -1 if none
	cls     []*configClient
	wg      sync.WaitGroup
	errMu   sync.Mutex
	// gate is held by the writer through each write and its record
	// (starts, commits), and by the case while it takes the interval's
	// first snapshot with no write in flight; held says the case did.
	gate sync.Mutex
	held bool
}

// configClient is what one client saw; only its goroutine writes it
// until the case ends.
type configClient struct {
	reloads []reload
	last    atomic.Int64 // newest version loaded
	gone    atomic.Bool  // it stopped following before the case ended (its session was lost)
	bad     int64        // reloads whose data was not what was written
	back    int64        // reloads of a version older than one it had
}

type reload struct {
	v  int64
	at time.Duration
}

func (r *configRun) now() time.Duration { return time.Since(r.base) }

// Run runs one config case. See Workload.Run.
func (cw *ConfigWorkload) Run(ctx context.Context, c Case) (results.Result, error) {
	return drive(ctx, configSpec(), c, 1, &configCase{})
}

// configCase is one config case: the run, and what collect needs of it.
type configCase struct {
	r            *configRun
	writeLat     *hdrhistogram.Histogram
	first, lastV int64
	rate         float64
	size         int
	poll         time.Duration
	removeErr    error // the config node's removal, at the end of the run
	footprint    *results.WatchFootprint
}

func (cc *configCase) run(ctx context.Context, d *driver) (measure.Outcome, error) {
	c := d.c
	size, err := configSize(c.Config)
	if err == nil {
		err = CheckConfigSize(c.Backend.Kind(), size)
	}
	if err != nil {
		return measure.Outcome{}, err
	}
	poll, err := configSpec().Duration(c.Config, ParamPoll)
	if err != nil {
		return measure.Outcome{}, err
	}
	if poll <= 0 {
		return measure.Outcome{}, fmt.Errorf("%w: parameter %s: want a positive interval", ErrBadCase, ParamPoll)
	}
	switch c.Variant {
	case ConfigPolling, ConfigOneShot, ConfigPersistent:
	default:
		return measure.Outcome{}, fmt.Errorf("%w %q (config: %v)", ErrUnknownVariant, c.Variant, configSpec().VariantNames(c.Backend.Kind()))
	}
	rate := c.Config.Rate
	if rate <= 0 {
		rate = defaultRate
	}
	stepTimeout, err := configSpec().Duration(c.Config, ParamStepTimeout)
	if err != nil {
		return measure.Outcome{}, err
	}
	all, err := d.open(ctx, c.Clients+1, nil)
	if err != nil {
		return measure.Outcome{}, err
	}
	d.keep = []string{c.Namespace}
	writer := all.Sessions[c.Clients]
	r := &configRun{d: d, path: c.Namespace + "/config", size: size, base: time.Now(), inDoubt: -1}
	cc.r, cc.rate, cc.size, cc.poll = r, rate, size, poll
	if err := writer.EnsurePath(ctx, c.Namespace); err != nil {
		return measure.Outcome{}, fmt.Errorf("config: %w", err)
	}
	t0 := r.now()
	if err := writer.Set(ctx, r.path, stamp(0, size)); err != nil {
		return measure.Outcome{}, fmt.Errorf("config: first write: %w", err)
	}
	r.starts, r.commits = append(r.starts, t0), append(r.commits, r.now())
	unarmed := d.baseline(ctx)
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	for i := 0; i < c.Clients; i++ {
		cl := &configClient{}
		cl.last.Store(-1)
		r.cls = append(r.cls, cl)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			err := r.follow(runCtx, all.Sessions[i], cl, c.Variant, poll)
			if runCtx.Err() == nil {
				cl.gone.Store(true)
				if err != nil {
					r.count(errorKind(err), err)
				}
			}
		}()
	}
	o := measure.Outcome{Base: r.base}
	if err := r.allHave(ctx, 0, stepTimeout); err != nil {
		r.count(errorKind(err), fmt.Errorf("first read: %w", err))
		stop()
		r.wg.Wait()
		return measure.Outcome{}, errNoInterval
	}
	watching := c.Clients
	if c.Variant == ConfigPolling {
		watching = 0
	}
	cc.footprint = measure.Footprint(unarmed, d.hold(ctx), watching)
	writeLat := results.NewRecorder()
	var measureFrom atomic.Int64
	measureFrom.Store(-1)
	writerDone := make(chan struct{})
	stopWriting := make(chan struct{})
	// The writer's context is ctx's, so that Ctrl-C (or the run's end)
	// cuts an in-flight Set short; once the case stops writing, a Set still
	// in flight has a step's time to return.
	wctx, wstop := context.WithCancel(ctx)
	defer wstop()
	go func() {
		defer close(writerDone)
		interval := time.Duration(float64(time.Second) / rate)
		next := r.now()
		for v := int64(1); ; v++ {
			next += interval
			select {
			case <-stopWriting:
				return
			case <-time.After(time.Until(r.base.Add(next))):
			}
			r.gate.Lock()
			if r.held && r.now()-next > interval {
				// Held at the interval's start: go on at the rate from
				// here, not in a burst that catches up.
				next = r.now()
			}
			r.held = false
			t0 := r.now()
			err := writer.Set(wctx, r.path, stamp(v, size))
			at := r.now()
			if err == nil {
				r.starts, r.commits = append(r.starts, t0), append(r.commits, at)
			}
			r.gate.Unlock()
			if err != nil {
				if ctx.Err() == nil {
					if wctx.Err() != nil {
						err = fmt.Errorf("%w: %w: the write of version %d was still in flight %v after the case stopped writing",
							errStepTimeout, context.DeadlineExceeded, v, stepTimeout)
					}
					r.count("write_"+errorKind(err), err)
				}
				r.inDoubt = v // it may have committed all the same
				return
			}
			if measureFrom.Load() >= 0 {
				results.Record(writeLat, at-t0)
				c.Live.Op()
			}
		}
	}()
	// The writer's rate makes --ops a time too: the case ends on the
	// shorter of the two bounds.
	ended := measure.Stop{TimedOut: true}
	warm := sleepCtx(ctx, c.Config.Warmup)
	// The interval starts between writes, once every client has the last
	// one: no notification is then on its way, so the counts at its edges
	// (the client's at delivery, the servers' at the trigger) agree, also
	// where an update takes seconds to reach 10,000 watchers.
	r.gate.Lock()
	if err := r.allHave(ctx, int64(len(r.commits)-1), stepTimeout); err != nil && ctx.Err() == nil {
		r.count(errorKind(err), fmt.Errorf("before the interval: %w", err))
	}
	o.Before, o.Start = d.snapshot(ctx, all), r.now()
	measureFrom.Store(int64(o.Start))
	r.held = true
	r.gate.Unlock()
	c.Live.Start()
	bound := c.Config.Duration
	if bound <= 0 || (c.Config.Ops > 0 && time.Duration(float64(c.Config.Ops)/rate*float64(time.Second)) < bound) {
		bound = time.Duration(float64(c.Config.Ops) / rate * float64(time.Second))
		ended.TimedOut = false
	}
	if warm {
		sleepCtx(ctx, bound)
	}
	close(stopWriting)
	bounded := time.AfterFunc(stepTimeout, wstop)
	<-writerDone
	bounded.Stop()
	o.End = r.now()
	lastV := int64(len(r.commits) - 1)
	if err := r.allHave(ctx, lastV, stepTimeout); err != nil && ctx.Err() == nil {
		r.count(errorKind(err), fmt.Errorf("last update: %w", err))
		ended.Failed = true
	}
	o.After = d.snapshot(ctx, all)
	stop()
	r.wg.Wait()
	ended.Interrupted = ctx.Err() != nil
	o.StoppedBy = ended.Reason()

	cc.first, cc.lastV, cc.writeLat = r.firstMeasured(o.Start), lastV, writeLat
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	cc.removeErr = writer.Delete(dctx, r.path)
	cancel()
	return o, nil
}

func (cc *configCase) collect(d *driver, o measure.Outcome) {
	c, r, res, first, lastV, rate, size, poll := d.c, cc.r, &d.res, cc.first, cc.lastV, cc.rate, cc.size, cc.poll
	res.Ops.Issued = lastV - first + 1
	res.Ops.Succeeded = res.Ops.Issued
	r.collect(res, first, lastV)
	addHistogram(res, figures.LatencyWrite, cc.writeLat)
	res.Watch = cc.footprint
	d.fill(o, res.Ops.Succeeded, true, res.Ops.Succeeded*int64(c.Clients))
	if c.Variant == ConfigPolling {
		res.Client.WastedWakeups = 0 // polling has no watch: nothing woke
	}
	res.Notes = append(res.Notes, fmt.Sprintf("one writer at %.3g updates/s of %s besides the %d clients; client-side counts include its writes",
		rate, FormatSize(size), c.Clients))
	if c.Variant == ConfigPolling {
		res.Notes = append(res.Notes, fmt.Sprintf("clients poll every %v", poll))
	}
	if err := cc.removeErr; err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("config node not removed: %v", err))
	}
}

// firstMeasured is the first version committed at or after start.
func (r *configRun) firstMeasured(start time.Duration) int64 {
	for v, at := range r.commits {
		if at >= start {
			return int64(v)
		}
	}
	return int64(len(r.commits))
}

func (r *configRun) count(kind string, err error) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	r.d.count(kind, err)
}

// allHave waits until every client still following has loaded version v
// or a newer one (a client whose session was lost is not waited for; the
// case notes the lost sessions and the check counts it as gone).
func (r *configRun) allHave(ctx context.Context, v int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for i, cl := range r.cls {
		for cl.last.Load() < v && !cl.gone.Load() {
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: %w: client %d has version %d, not %d, after %v",
					errStepTimeout, context.DeadlineExceeded, i, cl.last.Load(), v, limit)
			}
			if !sleepCtx(ctx, time.Millisecond) {
				return ctx.Err()
			}
		}
	}
	return nil
}

// follow keeps client cl's copy of the config current by variant until ctx
// ends or the session is lost.
func (r *configRun) follow(ctx context.Context, s backends.Session, cl *configClient, variant string, poll time.Duration) error {
	switch variant {
	case ConfigPersistent:
		dw, ok := s.(backends.DataWatcher)
		if !ok {
			return backends.ErrNoDataWatch
		}
		data, exists, ch, err := dw.WatchData(ctx, r.path)
		if err != nil {
			return err
		}
		if exists {
			r.load(cl, data)
		}
		for ev := range ch {
			switch ev.Type {
			case backends.EventSessionLost:
				return backends.ErrSessionLost
			case backends.EventDataChanged, backends.EventCreated:
				r.load(cl, ev.Data)
			}
		}
		return nil
	case ConfigOneShot:
		for {
			// The seed's DataMonitor: exists with a watch, then getData.
			wctx, cancel := context.WithCancel(ctx)
			exists, _, ch, err := s.ExistsW(wctx, r.path)
			if err == nil && exists {
				var data []byte
				data, _, err = s.Get(ctx, r.path)
				if err == nil {
					r.load(cl, data)
				} else if errors.Is(err, backends.ErrNoNode) {
					err = nil
				}
			}
			if err != nil {
				cancel()
				return err
			}
			ev, ok := <-ch
			cancel()
			if !ok {
				return ctx.Err()
			}
			if ev.Type == backends.EventSessionLost {
				return backends.ErrSessionLost
			}
		}
	default:
		// A random phase, so that the clients' polls do not come in bursts.
		if !sleepCtx(ctx, rand.N(poll)) {
			return nil
		}
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			data, _, err := s.Get(ctx, r.path)
			switch {
			case err == nil:
				r.load(cl, data)
			case !errors.Is(err, backends.ErrNoNode):
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	}
}

// load is client cl's hot reload of data, if it is news.
func (r *configRun) load(cl *configClient, data []byte) {
	at := r.now()
	v, ok := unstamp(data, r.size)
	if !ok {
		cl.bad++
		return
	}
	last := cl.last.Load()
	switch {
	case v == last:
		return // a poll, or an event that another read already covered
	case v < last:
		cl.back++
		return
	}
	cl.reloads = append(cl.reloads, reload{v, at})
	cl.last.Store(v)
}

// stamp is version v's data: v in the first 8 bytes, then filler.
func stamp(v int64, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint64(b, uint64(v))
	for i := versionBytes; i < size; i++ {
		b[i] = byte('a' + (int(v)+i)%26)
	}
	return b
}

// unstamp reads the version of data and checks it is what stamp wrote.
func unstamp(data []byte, size int) (int64, bool) {
	if len(data) != size {
		return 0, false
	}
	v := int64(binary.BigEndian.Uint64(data))
	for i := versionBytes; i < size; i += 997 {
		if data[i] != byte('a'+(int(v)+i)%26) {
			return v, false
		}
	}
	return v, data[size-1] == byte('a'+(int(v)+size-1)%26)
}
