package analysis

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// The plan's interval for each wait: the spread its inputs' sampling
// gives. Each measured histogram the simulation draws from (the handoffs;
// the uncontended acquires) holds a finite number of samples; a bootstrap
// replicate resamples each with replacement, as many draws as it holds,
// and simulates again with its own seed. The interval is the middle 90% of
// Replicates such replicates. It says how much the answer moves with the
// runs' sampling, not how far the model is from a measurement: that is
// the kept grid's error (modelerror.go), printed beside it.

// Replicates is how many bootstrap replicates make a plan's interval.
const Replicates = 20

// maxResample bounds a resample's draws: a sampler of more samples
// (none a measured histogram reaches; mixSamplers' weights do, which is
// why a mixture is made of resampled parts instead) is returned as is.
const maxResample = 1 << 26

// Resample is a bootstrap resample of s: s.total draws with replacement,
// into s's buckets.
func (s *Sampler) Resample(r *rand.Rand) *Sampler {
	if s.total > maxResample {
		return s
	}
	counts := make([]int64, len(s.cum))
	for range s.total {
		k := r.Int64N(s.total)
		counts[sort.Search(len(s.cum), func(i int) bool { return s.cum[i] > k })]++
	}
	out := &Sampler{}
	var sum float64
	for i, n := range counts {
		if n == 0 {
			continue
		}
		out.total += n
		out.from = append(out.from, s.from[i])
		out.to = append(out.to, s.to[i])
		out.cum = append(out.cum, out.total)
		sum += float64(n) * float64(s.from[i]+s.to[i]) / 2
	}
	out.mean = time.Duration(sum / float64(out.total))
	return out
}

// Interval is a low and a high bound.
type Interval [2]time.Duration

// inputs are what a simulation draws from, each able to give a bootstrap
// resample of itself.
type inputs struct {
	handoff *Sampler
	// free gives the uncontended acquires (nil: none): itself with a nil
	// rand, else a resample.
	free func(*rand.Rand) *Sampler
}

// waitIntervals simulates w's queue on Replicates bootstrap replicates of
// in and returns the middle 90% of their wait p50, p99 and the target's
// percentile.
func (w Workload) waitIntervals(in inputs) (p50, p99, target Interval, err error) {
	r := rand.New(rand.NewPCG(w.Seed, 0x5eed))
	var a, b, c []time.Duration
	for k := range Replicates {
		var fs *Sampler
		if in.free != nil {
			fs = in.free(r)
		}
		q := w.queue(w.Clients, in.handoff.Resample(r), fs)
		q.Acquisitions = min(cmp.Or(w.Acquisitions, DefaultAcquisitions), 50_000)
		q.Seed = w.Seed + uint64(k) + 1
		res, err := q.Simulate()
		if err != nil {
			return p50, p99, target, err
		}
		a, b, c = append(a, res.P(50)), append(b, res.P(99)), append(c, res.P(w.Percentile))
	}
	mid := func(v []time.Duration) Interval {
		slices.Sort(v)
		cut := len(v) / 20 // 5% each side
		return Interval{v[cut], v[len(v)-1-cut]}
	}
	return mid(a), mid(b), mid(c), nil
}
