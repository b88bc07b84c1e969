package measure

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/internal/procstat"
)

// Clients are the sessions of one case, one per simulated client, each
// counted by its own instrument.Counters.
type Clients struct {
	// Sessions[i] is client i's instrumented session.
	Sessions []backends.Session
	// Counters[i] counts client i's requests and watch events.
	Counters []*instrument.Counters

	reg     *instrument.Registry
	closing chan struct{}
	lost    atomic.Int64
	watch   sync.WaitGroup
	once    sync.Once

	lostMu sync.Mutex
	lostAt []time.Time // when each lost session was seen lost
}

// Above ReleaseMemoryFrom sessions, OpenClients returns freed memory to the
// operating system after every ReleaseMemoryEvery sessions it opened and
// once when all are open, before anything is measured. Opening a session
// leaves garbage the allocator zeroes, so makes resident, when it reuses
// it: go-zookeeper allocates and drops a 1.5 MiB send buffer per
// connection. Left to the background scavenger, those pages stay resident
// through the measured interval (at 10,000 ZooKeeper sessions, tens of KB
// a client); a forced collection of a heap that is mostly pointer-free
// buffers costs little.
const (
	ReleaseMemoryFrom  = 1000
	ReleaseMemoryEvery = 1000
)

// OpenOption configures OpenClients.
type OpenOption func(*openOptions)

type openOptions struct {
	ramp     int
	timeout  time.Duration
	progress func(string)
	event    func(kind, what string, client int)
}

// WithRamp sets how many sessions are opened at once. Default 32.
func WithRamp(n int) OpenOption {
	return func(o *openOptions) {
		if n > 0 {
			o.ramp = n
		}
	}
}

// WithOpenTimeout bounds the opening of each session. Default 30s.
func WithOpenTimeout(d time.Duration) OpenOption {
	return func(o *openOptions) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithOpenProgress receives a progress line about once a second while
// sessions open, and once at the end when there were 100 or more.
func WithOpenProgress(f func(line string)) OpenOption {
	return func(o *openOptions) { o.progress = f }
}

// WithSessionEvents receives ("session", "lost", i) when client i's session
// ends before Close.
func WithSessionEvents(f func(kind, what string, client int)) OpenOption {
	return func(o *openOptions) { o.event = f }
}

// OpenClients opens n sessions on b, at most ramp at a time, each wrapped by
// backends/instrument with its own Counters, and returns once every one is
// usable: measurement starts only with all clients connected. If any session
// fails to open, or ctx ends, it closes those already open and returns an
// error naming how many opened.
func OpenClients(ctx context.Context, b backends.Backend, n int, opts ...OpenOption) (*Clients, error) {
	o := openOptions{ramp: 32, timeout: 30 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if n < 1 {
		return nil, fmt.Errorf("measure: %d clients: need at least 1", n)
	}
	c := &Clients{
		Sessions: make([]backends.Session, n),
		Counters: make([]*instrument.Counters, n),
		reg:      instrument.NewRegistry(),
		closing:  make(chan struct{}),
	}
	for i := range c.Counters {
		c.Counters[i] = c.reg.NewClient()
	}
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		opened   atomic.Int64
		errOnce  sync.Once
		firstErr error
		sem      = make(chan struct{}, o.ramp)
		start    = time.Now()
		lastLine = start
	)
	report := func(final bool) {
		if o.progress == nil {
			return
		}
		if final && n >= 100 || !final && time.Since(lastLine) >= time.Second {
			lastLine = time.Now()
			o.progress(fmt.Sprintf("  sessions open: %d/%d (%.1fs)", opened.Load(), n, time.Since(start).Seconds()))
		}
	}
loop:
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-octx.Done():
			break loop
		}
		report(false)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			sctx, scancel := context.WithTimeout(backends.WithClient(octx, i), o.timeout)
			defer scancel()
			s, err := b.NewSession(sctx)
			if err != nil {
				errOnce.Do(func() {
					firstErr = fmt.Errorf("workloads: open session %d of %d: %w", i+1, n, err)
					cancel()
				})
				return
			}
			c.Sessions[i] = instrument.Wrap(s, c.Counters[i])
			if k := opened.Add(1); n > ReleaseMemoryFrom && k%ReleaseMemoryEvery == 0 {
				debug.FreeOSMemory()
			}
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("workloads: opening sessions: %w", ctx.Err())
	}
	if firstErr != nil {
		got := opened.Load()
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer ccancel()
		if err := c.Close(cctx); err != nil {
			firstErr = errors.Join(firstErr, err)
		}
		return nil, fmt.Errorf("%w (%d of %d opened)", firstErr, got, n)
	}
	report(true)
	if n > ReleaseMemoryFrom {
		debug.FreeOSMemory()
	}
	c.watchLosses(o.event)
	return c, nil
}

// lossChunk is how many sessions one goroutine of watchLosses watches.
const lossChunk = 256

// watchLosses counts the sessions that end before Close ends them, and
// when, with one goroutine per lossChunk sessions selecting on all of
// their Done channels at once (reflect.Select) rather than a goroutine a
// session: at ten thousand clients a goroutine's stack each is a few
// percent of zkbench's memory per client. A loss costs its goroutine one
// select over its chunk.
func (c *Clients) watchLosses(event func(kind, what string, client int)) {
	for lo := 0; lo < len(c.Sessions); lo += lossChunk {
		hi := min(lo+lossChunk, len(c.Sessions))
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c.closing)}}
		clients := []int{-1}
		for i := lo; i < hi; i++ {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c.Sessions[i].Done())})
			clients = append(clients, i)
		}
		c.watch.Add(1)
		go func() {
			defer c.watch.Done()
			for len(cases) > 1 {
				k, _, _ := reflect.Select(cases)
				if k == 0 {
					return
				}
				select {
				case <-c.closing:
					return
				default:
				}
				c.lost.Add(1)
				c.lostMu.Lock()
				c.lostAt = append(c.lostAt, time.Now())
				c.lostMu.Unlock()
				if event != nil {
					event("session", "lost", clients[k])
				}
				last := len(cases) - 1
				cases[k], clients[k] = cases[last], clients[last]
				cases, clients = cases[:last], clients[:last]
			}
		}()
	}
}

// Len is the number of clients.
func (c *Clients) Len() int { return len(c.Sessions) }

// Total sums every client's counts now.
func (c *Clients) Total() instrument.Counts { return c.reg.Total() }

// Remote adds a client of the case that runs in another process (a worker)
// and reports its counts: Total includes its last report from then on.
func (c *Clients) Remote() *instrument.Remote { return c.reg.NewRemote() }

// RemoteWitness sums the witnesses the remote clients reported.
func (c *Clients) RemoteWitness() backends.Witness { return c.reg.RemoteWitness() }

// Lost is how many sessions ended before Close.
func (c *Clients) Lost() int64 { return c.lost.Load() }

// LostAt is when each session that ended before Close was seen lost, in
// that order.
func (c *Clients) LostAt() []time.Time {
	if c == nil {
		return nil
	}
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	return append([]time.Time(nil), c.lostAt...)
}

// Close closes every session, 64 at a time, and returns once all are closed
// or ctx ends (then with an error saying how many were still closing; they
// finish in the background). Safe to call more than once.
func (c *Clients) Close(ctx context.Context) error {
	c.once.Do(func() { close(c.closing) })
	var (
		wg     sync.WaitGroup
		sem    = make(chan struct{}, 64)
		closed atomic.Int64
		mu     sync.Mutex
		errs   []error
	)
	open := 0
	for _, s := range c.Sessions {
		if s == nil {
			continue
		}
		open++
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := s.Close(); err != nil {
				mu.Lock()
				if len(errs) < 3 {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
			closed.Add(1)
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		c.watch.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("workloads: %d of %d sessions still closing: %w", int64(open)-closed.Load(), open, ctx.Err())
	}
	if len(errs) > 0 {
		return fmt.Errorf("workloads: close sessions: %w", errors.Join(errs...))
	}
	return nil
}

// BaseRSS is the process's resident memory before a case opens its
// sessions, the base of the case's memory per client (Cost). Freed memory
// is returned to the operating system first, so that what an earlier case
// left resident (its sessions' buffers, garbage the scavenger has not yet
// returned) is not counted as this case's base. 0 if it cannot be read.
func BaseRSS() uint64 {
	debug.FreeOSMemory()
	st, err := procstat.Self()
	if err != nil {
		return 0
	}
	return st.RSSBytes
}
