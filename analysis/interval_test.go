package analysis

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/zkbench/zkbench/results"
)

// A resample keeps the sampler's count and its values; a constant
// histogram resamples to itself, so its plan's interval is one point.
func TestResampleAndIntervals(t *testing.T) {
	h := results.NewRecorder()
	for i := range 2000 {
		results.Record(h, time.Duration(500+i%1000)*time.Microsecond)
	}
	s, err := NewSampler(h)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	x := s.Resample(r)
	if x.total != s.total || x.from[0] < s.from[0] || x.to[len(x.to)-1] > s.to[len(s.to)-1] {
		t.Errorf("resample: %d draws in [%d, %d], want %d in [%d, %d]", x.total, x.from[0], x.to[len(x.to)-1], s.total, s.from[0], s.to[len(s.to)-1])
	}
	if d := x.Mean() - s.Mean(); d > 50*time.Microsecond || d < -50*time.Microsecond {
		t.Errorf("resample mean %v, sampler's %v", x.Mean(), s.Mean())
	}
	ms := time.Millisecond
	w := Workload{Clients: 1, Every: 100 * ms, Percentile: 90, Acquisitions: 5_000, Seed: 1}
	p50, p99, p90, err := w.waitIntervals(inputs{handoff: constSampler(t, ms), free: resampled(constSampler(t, 2*ms))})
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range []Interval{p50, p99, p90} {
		if d := iv[0] - 2*ms; iv[0] != iv[1] || d > 10*time.Microsecond || d < -10*time.Microsecond {
			t.Errorf("constant inputs: interval %v, want [2ms, 2ms]", iv)
		}
	}
	// A spread input gives a spread interval around the simulated p99.
	w.Clients, w.Every = 10, 5*ms
	p50, p99, _, err = w.waitIntervals(inputs{handoff: s, free: resampled(s)})
	if err != nil || p50[0] > p50[1] || p99[0] >= p99[1] {
		t.Errorf("spread inputs: p50 %v p99 %v (%v); want ordered, p99 of some width", p50, p99, err)
	}
}
