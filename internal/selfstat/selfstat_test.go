package selfstat

import (
	"math"
	"testing"
	"time"
)

// Spread of a runtime-style histogram: quantiles at bucket upper bounds,
// the open last bucket at its lower bound, total from midpoints; Sub is
// bucket by bucket.
func TestHistSpreadAndSub(t *testing.T) {
	buckets := []float64{0, 0.001, 0.01, 0.1, math.Inf(1)}
	before := Hist{Counts: []uint64{10, 0, 0, 0}, Buckets: buckets}
	after := Hist{Counts: []uint64{108, 1, 0, 1}, Buckets: buckets}
	d := after.Sub(before)
	sp := d.Spread()
	if sp.Count != 100 || sp.P50 != time.Millisecond || sp.P99 != 10*time.Millisecond || sp.Max != 100*time.Millisecond {
		t.Fatalf("spread %+v: want 100 values, p50 1ms, p99 10ms, max 100ms (the open bucket's lower bound)", sp)
	}
	want := time.Duration((98*0.0005 + 1*0.0055 + 1*0.1) * float64(time.Second))
	if diff := sp.Total - want; diff < -time.Microsecond || diff > time.Microsecond {
		t.Errorf("total %v, want %v", sp.Total, want)
	}
	if (Hist{}).Spread().Count != 0 {
		t.Error("an empty histogram has values")
	}
}

func TestDurations(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	sp := Durations(ds)
	if sp.Count != 100 || sp.P50 != 50*time.Millisecond || sp.P99 != 99*time.Millisecond || sp.Max != 100*time.Millisecond ||
		sp.Total != 5050*time.Millisecond {
		t.Fatalf("spread %+v", sp)
	}
}

// The runtime's histograms and the run queue can be read here (Linux),
// and a sampler wakes about every SamplePeriod.
func TestReadsAndSamples(t *testing.T) {
	rt := ReadRuntime()
	if len(rt.Sched.Buckets) == 0 || len(rt.GCPauses.Buckets) == 0 {
		t.Fatalf("runtime histograms not read: %+v", rt)
	}
	w0, ok := RunQueueWait()
	if !ok {
		t.Skip("no /proc/self/task/*/schedstat here")
	}
	s := StartSampler()
	// Ten periods give ten wakes on a quiet machine; a loaded one may pass
	// over some (the sampler skips the ticks a delay passed), so the wakes
	// are counted over as many takes as five need, up to 30 s.
	var wakes int64
	var p Peaks
	for deadline := time.Now().Add(30 * time.Second); wakes < 5 && time.Now().Before(deadline); {
		time.Sleep(10 * SamplePeriod)
		p = s.Take()
		wakes += p.TimerLateness.Count
	}
	s.Stop()
	s.Stop() // twice is fine
	if wakes < 5 || p.HeapBytes == 0 || p.RSSBytes == 0 {
		t.Errorf("sampler: %d wakes in 30 s, last take %+v", wakes, p)
	}
	if w1, _ := RunQueueWait(); w1 < w0 {
		t.Errorf("run queue wait went down: %v then %v", w0, w1)
	}
}
