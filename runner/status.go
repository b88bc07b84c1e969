package runner

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkbench/zkbench/workloads/measure"
)

// Status-line cadence: a terminal's line is redrawn often; a log (a file,
// a pipe) gets a plain line now and then on long cases only.
const (
	liveRedraw    = 250 * time.Millisecond
	plainInterval = 10 * time.Second
)

// liveStatus carries a run's progress lines to out and, while a case runs,
// its status: elapsed of the case's bounds, operations so far, the current
// rate and sessions lost. On a terminal (live) the status is one line
// rewritten in place, cleared before every progress line; otherwise it is
// a plain line every plainInterval. It is the io.Writer of the run's
// RunLog. Safe for concurrent use.
type liveStatus struct {
	out  io.Writer
	live bool

	mu    sync.Mutex
	cur   *caseStatus // nil between cases
	drawn bool        // a status line is on the terminal
	quit  chan struct{}
	done  chan struct{}
}

// caseStatus is what the status line shows of the running case.
type caseStatus struct {
	live   *measure.Live
	began  time.Time
	warmup time.Duration
	bounds time.Duration // warm-up + duration
	ops    int64         // optional --ops bound
	lost   atomic.Int64

	// The rate shown is over the last whole second (or plain interval).
	lastOps int64
	lastAt  time.Time
	rate    float64
}

func newLiveStatus(out io.Writer, live bool) *liveStatus {
	s := &liveStatus{out: out, live: live, quit: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s
}

// Write passes p (whole lines) through, clearing the status line first.
func (s *liveStatus) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	return s.out.Write(p)
}

func (s *liveStatus) println(line string) { _, _ = s.Write([]byte(line + "\n")) }

// clear removes a drawn status line; s.mu is held.
func (s *liveStatus) clear() {
	if s.drawn {
		fmt.Fprint(s.out, "\r\033[K")
		s.drawn = false
	}
}

// beginCase shows a case's status until endCase.
func (s *liveStatus) beginCase(live *measure.Live, warmup, duration time.Duration, ops int64) *caseStatus {
	c := &caseStatus{live: live, began: time.Now(), warmup: warmup, bounds: warmup + duration, ops: ops}
	c.lastAt = c.began
	s.mu.Lock()
	s.cur = c
	s.mu.Unlock()
	return c
}

func (s *liveStatus) endCase() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	s.cur = nil
}

// stop ends the status loop and clears the line.
func (s *liveStatus) stop() {
	close(s.quit)
	<-s.done
	s.mu.Lock()
	s.clear()
	s.mu.Unlock()
}

func (s *liveStatus) loop() {
	defer close(s.done)
	every := plainInterval
	if s.live {
		every = liveRedraw
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case now := <-t.C:
			s.mu.Lock()
			if c := s.cur; c != nil {
				line := c.line(now)
				if s.live {
					s.clear()
					fmt.Fprint(s.out, line)
					s.drawn = true
				} else if now.Sub(c.began) >= plainInterval {
					fmt.Fprintln(s.out, line)
				}
			}
			s.mu.Unlock()
		}
	}
}

// line renders the status at now and starts the next rate interval.
func (c *caseStatus) line(now time.Time) string {
	var b strings.Builder
	started, ok := c.live.Started()
	if !ok {
		fmt.Fprintf(&b, "  %s opening sessions", now.Sub(c.began).Truncate(100*time.Millisecond))
	} else {
		in := now.Sub(started)
		fmt.Fprintf(&b, "  %s of %s", in.Truncate(100*time.Millisecond), c.bounds)
		if in < c.warmup {
			b.WriteString(" (warm-up)")
		}
	}
	ops := c.live.Ops()
	fmt.Fprintf(&b, ", %d ops", ops)
	if c.ops > 0 {
		fmt.Fprintf(&b, " of %d", c.ops)
	}
	if dt := now.Sub(c.lastAt); dt >= time.Second {
		c.rate = float64(ops-c.lastOps) / dt.Seconds()
		c.lastOps, c.lastAt = ops, now
	}
	if ok {
		fmt.Fprintf(&b, ", %.1f/s", c.rate)
	}
	fmt.Fprintf(&b, ", %d sessions lost", c.lost.Load())
	return b.String()
}
