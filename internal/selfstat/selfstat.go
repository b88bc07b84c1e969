// Package selfstat measures the zkbench process as a load generator, so
// that a case can say when the clients, not the servers, were its limit:
// the Go scheduler's latency and the garbage collector's pauses (the
// runtime/metrics histograms, read at the edges of an interval and
// subtracted), and, from a sampler that wakes every 50 ms, how late a timer
// ran, the live heap's peak and the resident memory's peak.
package selfstat

import (
	"math"
	"os"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/procfs"

	"github.com/zkbench/zkbench/results"
)

// Runtime metric names. GC pauses moved to /sched/pauses/total/gc:seconds
// in Go 1.22; /gc/pauses:seconds is its deprecated twin.
const (
	schedLatencies = "/sched/latencies:seconds"
	gcPauses       = "/sched/pauses/total/gc:seconds"
	gcPausesOld    = "/gc/pauses:seconds"
	heapObjects    = "/memory/classes/heap/objects:bytes"
)

// Hist is a runtime/metrics histogram: Counts[i] values in
// [Buckets[i], Buckets[i+1]) seconds.
type Hist struct {
	Counts  []uint64
	Buckets []float64
}

// Runtime is one reading of the runtime's histograms.
type Runtime struct {
	Sched, GCPauses Hist
}

// ReadRuntime reads the scheduler latency and GC pause histograms.
func ReadRuntime() Runtime {
	gc := gcPauses
	if !supported(gc) {
		gc = gcPausesOld
	}
	s := []metrics.Sample{{Name: schedLatencies}, {Name: gc}}
	metrics.Read(s)
	return Runtime{Sched: hist(s[0].Value), GCPauses: hist(s[1].Value)}
}

func supported(name string) bool {
	for _, d := range metrics.All() {
		if d.Name == name {
			return true
		}
	}
	return false
}

func hist(v metrics.Value) Hist {
	if v.Kind() != metrics.KindFloat64Histogram {
		return Hist{}
	}
	h := v.Float64Histogram()
	return Hist{Counts: slices.Clone(h.Counts), Buckets: slices.Clone(h.Buckets)}
}

// Sub is h - before, bucket by bucket (h if the buckets differ).
func (h Hist) Sub(before Hist) Hist {
	if len(before.Counts) != len(h.Counts) {
		return h
	}
	d := Hist{Counts: make([]uint64, len(h.Counts)), Buckets: h.Buckets}
	for i, c := range h.Counts {
		if c >= before.Counts[i] {
			d.Counts[i] = c - before.Counts[i]
		}
	}
	return d
}

// Spread summarises h: p50, p99 and max as bucket upper bounds (the lower
// bound for the last, open bucket), total from bucket midpoints.
func (h Hist) Spread() results.Spread {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	if n == 0 {
		return results.Spread{}
	}
	upper := func(i int) float64 {
		if u := h.Buckets[i+1]; !math.IsInf(u, 1) {
			return u
		}
		return max(h.Buckets[i], 0)
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	at := func(q float64) time.Duration {
		rank := uint64(math.Ceil(q * float64(n)))
		var seen uint64
		for i, c := range h.Counts {
			seen += c
			if seen >= rank && c > 0 {
				return sec(upper(i))
			}
		}
		return 0
	}
	sp := results.Spread{Count: int64(n), P50: at(0.5), P99: at(0.99)}
	var total float64
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		sp.Max = sec(upper(i))
		lo := max(h.Buckets[i], 0)
		total += float64(c) * (lo + upper(i)) / 2
	}
	sp.Total = sec(total)
	return sp
}

// SamplePeriod is how often the Sampler wakes.
const SamplePeriod = 50 * time.Millisecond

// Sampler wakes every SamplePeriod and records how late it woke, the live
// heap and the resident memory. Make one with StartSampler; Stop it.
type Sampler struct {
	mu       sync.Mutex
	lateness []time.Duration
	wakes    []Wake
	heapPeak uint64
	rssPeak  uint64
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
}

// Wake is one of the sampler's wake-ups: when, and how late.
type Wake struct {
	At   time.Time
	Late time.Duration
}

// Peaks is what a Sampler saw between two Takes.
type Peaks struct {
	// TimerLateness is how late each wake-up was; Wakes the wake-ups in
	// order, to look at the moments around an event (MaxLate).
	TimerLateness results.Spread
	Wakes         []Wake
	HeapBytes     uint64
	// RSSBytes is 0 where /proc cannot be read.
	RSSBytes uint64
}

// StartSampler starts a sampler.
func StartSampler() *Sampler {
	s := &Sampler{stop: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go s.loop()
	return s
}

func (s *Sampler) loop() {
	defer close(s.done)
	next := time.Now().Add(SamplePeriod)
	t := time.NewTimer(SamplePeriod)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		late := now.Sub(next)
		s.mu.Lock()
		s.lateness = append(s.lateness, max(late, 0))
		s.wakes = append(s.wakes, Wake{At: now, Late: max(late, 0)})
		s.mu.Unlock()
		s.sample()
		// Keep the schedule; skip ticks a long delay passed over.
		for !next.After(now) {
			next = next.Add(SamplePeriod)
		}
		t.Reset(time.Until(next))
	}
}

func (s *Sampler) sample() {
	m := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(m)
	var heap uint64
	if m[0].Value.Kind() == metrics.KindUint64 {
		heap = m[0].Value.Uint64()
	}
	rss := selfRSS()
	s.mu.Lock()
	s.heapPeak = max(s.heapPeak, heap)
	s.rssPeak = max(s.rssPeak, rss)
	s.mu.Unlock()
}

// Take returns what the sampler saw since the last Take (or its start) and
// starts again.
func (s *Sampler) Take() Peaks {
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := Peaks{TimerLateness: Durations(s.lateness), Wakes: s.wakes, HeapBytes: s.heapPeak, RSSBytes: s.rssPeak}
	s.lateness, s.wakes, s.heapPeak, s.rssPeak = nil, nil, 0, 0
	return p
}

// MaxLate is the latest wake-up in (t-window, t], and how many wake-ups
// that window held (0: none, the sampler was not running then).
func (p Peaks) MaxLate(t time.Time, window time.Duration) (time.Duration, int) {
	var late time.Duration
	n := 0
	for _, w := range p.Wakes {
		if w.At.After(t.Add(-window)) && !w.At.After(t) {
			late = max(late, w.Late)
			n++
		}
	}
	return late, n
}

// Stop ends the sampler; it may be called more than once.
func (s *Sampler) Stop() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

// Durations summarises ds exactly.
func Durations(ds []time.Duration) results.Spread {
	if len(ds) == 0 {
		return results.Spread{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[max(0, int(math.Ceil(q*float64(len(s))))-1)] }
	sp := results.Spread{Count: int64(len(s)), P50: at(0.5), P99: at(0.99), Max: s[len(s)-1]}
	for _, d := range s {
		sp.Total += d
	}
	return sp
}

// selfRSS is this process's resident memory, 0 if /proc cannot be read.
func selfRSS() uint64 {
	p, err := procfs.Self()
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return uint64(max(st.ResidentMemory(), 0))
}

// RunQueueWait is how long this process's threads have waited, runnable,
// for a CPU since they started: the waiting time of each thread's
// schedstat (/proc/self/task/<tid>/schedstat; the process's own file has
// only its first thread's), summed. It is the operating system's side of
// CPU starvation (other processes on the machine, or more runnable
// threads than cores), which the Go scheduler does not see. False where
// /proc or schedstat is not available.
func RunQueueWait() (time.Duration, bool) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, false
	}
	tasks, err := fs.AllThreads(os.Getpid())
	if err != nil {
		return 0, false
	}
	var total uint64
	read := false
	for _, t := range tasks {
		st, err := t.Schedstat()
		if err != nil {
			continue // the thread exited
		}
		total += st.WaitingNanoseconds
		read = true
	}
	return time.Duration(total), read
}
