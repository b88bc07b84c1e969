package zookeeper_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/internal/procstat"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// idleSessions is how many sessions BenchmarkIdleSessions opens.
const idleSessions = 1000

// BenchmarkIdleSessions opens 1,000 idle sessions (one zk.Conn each) from
// this process against the shared local server and reports what each costs
// this process: resident memory (/proc VmRSS, after a GC that returns freed
// pages to the OS, as the background scavenger would), Go heap in use, and
// goroutines. Target: under 150 KB of RSS per session with the default
// buffers. go-zookeeper's buffers are zeroed, so resident, whole: the cost
// is about RecvBufferSize + SendBufferSize + 10 KB.
func BenchmarkIdleSessions(b *testing.B) {
	endpoints := testcluster.ZooKeeperEndpoints(b)
	for _, c := range []struct {
		name string
		cfg  zookeeper.Config
	}{
		{"default", zookeeper.Config{Endpoints: endpoints}},
		// Room for a 10,000-child listing in every session.
		{"maxchildren=10000", zookeeper.Config{Endpoints: endpoints, MaxChildren: 10000}},
		// Room for a listing of 10,000 of Enqueue's 10-digit names (fair).
		{"maxchildren=10000,name=10", zookeeper.Config{Endpoints: endpoints, MaxChildren: 10000, MaxChildName: 10}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				rss, heap, gor := measureIdle(b, c.cfg, idleSessions)
				b.ReportMetric(rss, "rss-bytes/session")
				b.ReportMetric(heap, "heap-bytes/session")
				b.ReportMetric(gor, "goroutines/session")
			}
		})
	}
}

func measureIdle(b *testing.B, cfg zookeeper.Config, n int) (rss, heap, goroutines float64) {
	be, err := zookeeper.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	rss0, heap0 := settle(b)
	g0 := runtime.NumGoroutine()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sessions := make([]backends.Session, n)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range sessions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			s, err := be.NewSession(ctx)
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
				return
			}
			sessions[i] = s
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	// Idle long enough for every session to ping.
	time.Sleep(3 * time.Second)
	rss1, heap1 := settle(b)
	g1 := runtime.NumGoroutine()
	for _, s := range sessions {
		select {
		case <-s.Done():
			b.Fatal("a session was lost while idle")
		default:
		}
	}
	b.StopTimer()
	defer b.StartTimer()
	return (float64(rss1) - float64(rss0)) / float64(n), (float64(heap1) - float64(heap0)) / float64(n),
		float64(g1-g0) / float64(n)
}

// settle collects garbage, returns free pages to the OS and reads RSS and
// the Go heap in use.
func settle(b *testing.B) (rss, heap uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	st, err := procstat.Self()
	if err != nil {
		b.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return st.RSSBytes, ms.HeapInuse
}
