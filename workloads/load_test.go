package workloads

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
)

// spin keeps n goroutines busy for d; each checks the clock now and then,
// so the runtime preempts them as it would any busy client.
func spin(n int, d time.Duration) {
	var wg sync.WaitGroup
	var sink atomic.Int64
	end := time.Now().Add(d)
	for range n {
		wg.Go(func() {
			x := int64(0)
			for time.Now().Before(end) {
				for i := range 10000 {
					x += int64(i) ^ x
				}
			}
			sink.Add(x)
		})
	}
	wg.Wait()
}

// TestLoadAgainstBusyLoop checks the meter's view of its own process
// against what the test made it do: idle, the process uses a sliver of
// its cores and is not client-bound; with a busy loop on every core its
// CPU fraction is near 1 and the case is client-bound for cpu; with eight
// busy goroutines per core, goroutines wait to run and the case is
// client-bound for the scheduler too.
func TestLoadAgainstBusyLoop(t *testing.T) {
	cores := runtime.GOMAXPROCS(0)
	measure := func(work func()) results.Result {
		m := NewMeter(nil, backends.ClusterInfo{})
		defer m.Stop()
		res := results.Result{Clients: 1, PerOp: map[string]float64{}}
		before := m.Snapshot(context.Background(), nil)
		work()
		after := m.Snapshot(context.Background(), nil)
		m.Fill(&res, before, after, 0, false, 0)
		if res.Load == nil {
			t.Fatal("no load measured")
		}
		return res
	}
	idle := measure(func() { time.Sleep(time.Second) })
	if l := idle.Load; l.CPUFraction > 0.25 || l.Cores != cores || idle.ClientBound != nil {
		t.Errorf("idle second: cpu %.2f of %d cores, bound %v", l.CPUFraction, l.Cores, idle.ClientBound)
	}
	if l := idle.Load; l.TimerLateness.Count < 15 || l.HeapPeakBytes == 0 || l.RSSPeakBytes == 0 {
		t.Errorf("idle second: sampler %+v, heap %d, rss %d", l.TimerLateness, l.HeapPeakBytes, l.RSSPeakBytes)
	}
	t.Logf("idle: cpu %.3f, sched %+v, timer %+v", idle.Load.CPUFraction, idle.Load.Sched, idle.Load.TimerLateness)

	busy := measure(func() { spin(cores, time.Second) })
	if l := busy.Load; l.CPUFraction < 0.85 || busy.ClientBound == nil || busy.ClientBound.Reasons[0] != results.BoundCPU {
		t.Errorf("a busy loop on %d cores for 1s: cpu %.2f, bound %+v", cores, l.CPUFraction, busy.ClientBound)
	}
	t.Logf("busy: cpu %.3f, sched %+v, bound %v", busy.Load.CPUFraction, busy.Load.Sched, busy.ClientBound)

	crowded := measure(func() { spin(8*cores, time.Second) })
	if crowded.ClientBound == nil || !hasReason(crowded.ClientBound, results.BoundScheduler) || crowded.Load.Sched.P99 < results.MaxSchedP99 {
		t.Errorf("8 busy goroutines per core: sched %+v, bound %+v", crowded.Load.Sched, crowded.ClientBound)
	}
	t.Logf("crowded: cpu %.3f, sched %+v, timer %+v, bound %v", crowded.Load.CPUFraction, crowded.Load.Sched, crowded.Load.TimerLateness, crowded.ClientBound)
}

func hasReason(b *results.ClientBound, r results.BoundReason) bool {
	for _, x := range b.Reasons {
		if x == r {
			return true
		}
	}
	return false
}
