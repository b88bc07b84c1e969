package analysis

// The lock as a single-server queue, simulated: N clients, one lock, FIFO
// grants, service time = hold + a handoff drawn from a measured handoff
// histogram. It predicts the wait distribution of an operator's workload
// (predict.go's Predict) from what a kept sweep measured.

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/results"
)

// Sampler draws durations from a measured latency histogram: a bucket with
// probability proportional to its count, then a uniform value inside it.
type Sampler struct {
	from, to []int64
	cum      []int64
	total    int64
	mean     time.Duration
}

// NewSampler returns a sampler of h; an error if h is empty.
func NewSampler(h *hdrhistogram.Histogram) (*Sampler, error) {
	if h == nil || h.TotalCount() == 0 {
		return nil, errors.New("analysis: empty histogram: nothing to sample")
	}
	s := &Sampler{mean: time.Duration(h.Mean())}
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		s.total += b.Count
		s.from = append(s.from, b.From)
		s.to = append(s.to, b.To)
		s.cum = append(s.cum, s.total)
	}
	return s, nil
}

// Mean is the histogram's mean.
func (s *Sampler) Mean() time.Duration { return s.mean }

// Draw returns one sample.
func (s *Sampler) Draw(r *rand.Rand) time.Duration {
	k := r.Int64N(s.total)
	lo, hi := 0, len(s.cum)-1
	for lo < hi {
		m := (lo + hi) / 2
		if s.cum[m] > k {
			hi = m
		} else {
			lo = m + 1
		}
	}
	w := s.to[lo] - s.from[lo]
	v := s.from[lo]
	if w > 0 {
		v += r.Int64N(w + 1)
	}
	return time.Duration(v)
}

// Queue is one lock workload to simulate.
//
// Two arrival processes, the two zkbench runs:
//   - Rate > 0, the open loop (zkbench run --rate): acquisitions are
//     scheduled every 1/Rate seconds over all clients; the client free
//     longest takes the next slot (at its time, or late when none was free)
//     and the wait counts from the slot's time.
//   - Rate 0, the finite source (machine-repairman, M/G/1//N; zkbench run
//     --think): each of Clients clients releases, thinks for Think, and
//     asks again; the wait counts from the ask. A waiting client asks for
//     nothing more, so the arrival rate falls as the queue grows and the
//     queue never passes N: the model of "N workers, each back after T".
//
// Service: a holder keeps the lock for Hold; the next waiter has it a
// handoff later (a Handoff draw). A client that finds the lock free has it
// an Uncontended draw after it asked (a one-client case's acquire
// latency); without one, a Handoff draw.
type Queue struct {
	Clients     int
	Rate        float64
	Think       time.Duration
	Hold        time.Duration
	Handoff     *Sampler
	Uncontended *Sampler
	// Acquisitions simulated (default 200,000), of which the first tenth
	// are a warm-up left out of every figure; Seed makes the run
	// deterministic.
	Acquisitions int
	Seed         uint64
}

// QueueResult is what a simulation predicts.
type QueueResult struct {
	// Wait is the time from an ask (finite source) or a slot (open loop)
	// to the grant, over the measured acquisitions.
	Wait *hdrhistogram.Histogram
	// Throughput is grants per second of simulated time.
	Throughput float64
	// Utilisation is the share of time the lock was held or in a handoff.
	Utilisation float64
	// MeanWaiting is the time-average number of clients waiting.
	MeanWaiting float64
	// Offered is the utilisation the arrivals ask for, Rate × E[service]
	// (open loop) or, for the finite source, what N clients asking every
	// Think + service would ask for; at 1 or more the lock cannot keep up.
	Offered float64
	// Acquisitions measured (after the warm-up).
	Acquisitions int
	// QueuedShare is the share of acquisitions that found the lock held
	// and were handed it; WaitersAtHandoff is the mean number of clients
	// waiting at those handoffs' releases, the one handed the lock
	// included: a closed-loop case of N clients with no hold or think has
	// N−1 at every handoff, which is how Predict picks the measured case
	// whose handoff and counts stand for this contention.
	QueuedShare      float64
	WaitersAtHandoff float64
}

// P returns the wait at percentile q (0..100).
func (q *QueueResult) P(pct float64) time.Duration { return time.Duration(q.Wait.ValueAtQuantile(pct)) }

// DefaultAcquisitions is Queue.Acquisitions' default.
const DefaultAcquisitions = 200_000

// Simulate runs the queue. Clients must be ≥ 1 and Handoff set; Rate or
// Think sets the arrivals (Think 0 and Rate 0: the closed loop with every
// client always asking).
func (q Queue) Simulate() (*QueueResult, error) {
	if q.Clients < 1 {
		return nil, fmt.Errorf("analysis: simulate %d clients: need at least one", q.Clients)
	}
	if q.Handoff == nil {
		return nil, errors.New("analysis: simulate: no handoff distribution")
	}
	if q.Rate < 0 || q.Think < 0 || q.Hold < 0 {
		return nil, errors.New("analysis: simulate: negative rate, think or hold")
	}
	n := q.Acquisitions
	if n <= 0 {
		n = DefaultAcquisitions
	}
	warm := n / 10
	r := rand.New(rand.NewPCG(q.Seed, 0x9e3779b97f4a7c15))
	service := float64(q.Hold + q.Handoff.Mean())
	res := &QueueResult{Wait: results.NewRecorder()}
	if q.Rate > 0 {
		res.Offered = q.Rate * service / 1e9
	} else {
		res.Offered = float64(q.Clients) * service / float64(q.Think+time.Duration(service))
	}

	// ready holds each client's next ask (finite source) or the time it is
	// free again (open loop), earliest first.
	ready := make(timeHeap, q.Clients)
	for i := range ready {
		if q.Rate == 0 && q.Think > 0 {
			// Spread the first asks over one think time, as clients that
			// started at different times would be.
			ready[i] = time.Duration(r.Int64N(int64(q.Think)))
		}
	}
	heap.Init(&ready)
	interval := time.Duration(0)
	if q.Rate > 0 {
		interval = time.Duration(1e9 / q.Rate)
	}
	var release time.Duration // when the holder before releases
	var start, end time.Duration
	var busy, waiting float64
	asks := make([]time.Duration, n)
	queuedAt := make([]time.Duration, 0, n) // the releases queued acquisitions were handed the lock at
	queuedK := make([]int, 0, n)
	for k := range n {
		free := heap.Pop(&ready).(time.Duration)
		ask, from := free, free
		if q.Rate > 0 {
			slot := time.Duration(k) * interval
			from, ask = slot, max(slot, free)
		}
		asks[k] = ask
		var h, grant time.Duration
		if ask >= release {
			h = q.Handoff.Draw(r)
			if q.Uncontended != nil {
				h = q.Uncontended.Draw(r)
			}
			grant = ask + h // the lock is free: an uncontended acquire
		} else {
			h = q.Handoff.Draw(r)
			grant = release + h // queued: the handoff after the holder before
			if k >= warm {
				queuedAt, queuedK = append(queuedAt, release), append(queuedK, k)
			}
		}
		release = grant + q.Hold
		heap.Push(&ready, release+q.Think)
		if k == warm {
			start = from
		}
		if k >= warm {
			results.Record(res.Wait, grant-from)
			busy += float64(h + q.Hold)
			waiting += float64(grant - ask)
			end = release
		}
	}
	span := float64(end - start)
	if span <= 0 {
		return nil, errors.New("analysis: simulate: no simulated time (hold and handoff are zero)")
	}
	res.Acquisitions = n - warm
	// Waiters at each queued handoff: the acquisitions from k on that had
	// asked by its release (asks and releases both come in order).
	var waiters float64
	j := 0
	for i, k := range queuedK {
		j = max(j, k)
		for j < n && asks[j] < queuedAt[i] {
			j++
		}
		waiters += float64(j - k)
	}
	if len(queuedK) > 0 {
		res.QueuedShare = float64(len(queuedK)) / float64(res.Acquisitions)
		res.WaitersAtHandoff = waiters / float64(len(queuedK))
	}
	res.Throughput = float64(res.Acquisitions) / (span / 1e9)
	res.Utilisation = min(busy/span, 1)
	res.MeanWaiting = waiting / span
	return res, nil
}

type timeHeap []time.Duration

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *timeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
