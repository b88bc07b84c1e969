package etcd_test

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/zkbench/zkbench/backends/etcd"
	"github.com/zkbench/zkbench/internal/procstat"
)

// idleSessions is how many sessions BenchmarkIdleSessions holds open.
const idleSessions = 1000

// BenchmarkIdleSessions opens 1,000 idle sessions (by default each its own
// clientv3.Client, gRPC connection and lease) from this process against one
// etcd member running in a separate process, and reports the resident memory
// each session costs this process (rss-bytes/session, after a GC), its live
// Go heap (heap-bytes/session) and goroutine stacks (stack-bytes/session),
// its goroutines, and the server's resident
// memory per session (server-rss-bytes/session, from /proc: the server
// cannot be made to GC first, so it is less exact). ns/op is the time to open
// all the sessions. Variants shrink gRPC's
// buffers and windows, or share connections, to see what dominates.
//
// ZKBENCH_HEAP_PROFILE=<file> writes a heap profile with the sessions open,
// and <file>.goroutines the goroutines by stack.
func BenchmarkIdleSessions(b *testing.B) {
	if os.Getenv("ZKBENCH_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 4096
	}
	for _, v := range []struct {
		name string
		cfg  etcd.Config
		opts []etcd.Option
	}{
		{"default", etcd.Config{}, nil},
		{"small-windows", etcd.Config{}, []etcd.Option{etcd.WithDialOptions(
			grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))}},
		{"small-buffers", etcd.Config{}, []etcd.Option{etcd.WithDialOptions(
			grpc.WithReadBufferSize(4<<10), grpc.WithWriteBufferSize(4<<10))}},
		{"shared-10-conns", etcd.Config{Conns: 10}, nil},
	} {
		b.Run(v.name, func(b *testing.B) {
			// A fresh server per variant: a Go server keeps the heap an
			// earlier round grew, which would hide this round's cost.
			l := startLocal(b, 1)
			pid := l.PIDs()[l.Endpoints()[0]]
			cfg := v.cfg
			cfg.Endpoints = l.Endpoints()
			for b.Loop() {
				idleRound(b, cfg, v.opts, pid)
			}
		})
	}
}

// idleRound opens the sessions, measures, and closes them.
func idleRound(b *testing.B, cfg etcd.Config, opts []etcd.Option, serverPID int) {
	b.StopTimer()
	be, err := etcd.New(cfg, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	client0, server0, g0 := settledRSS(b, os.Getpid()), settledRSS(b, serverPID), runtime.NumGoroutine()
	heap0, stack0 := goMemory()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.StartTimer()
	sessions := make([]*etcd.Session, 0, idleSessions)
	for range idleSessions {
		s, err := be.OpenSession(ctx)
		if err != nil {
			b.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	b.StopTimer()
	time.Sleep(2 * time.Second) // a keepalive round (TTL/3) on every lease
	client1, server1, g1 := settledRSS(b, os.Getpid()), settledRSS(b, serverPID), runtime.NumGoroutine()
	heap1, stack1 := goMemory()
	if path := os.Getenv("ZKBENCH_HEAP_PROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
		if f, err := os.Create(path + ".goroutines"); err == nil {
			pprof.Lookup("goroutine").WriteTo(f, 1)
			f.Close()
		}
	}
	for _, s := range sessions {
		select {
		case <-s.Done():
			b.Fatal("a session was lost while idle")
		default:
		}
	}
	n := float64(idleSessions)
	b.ReportMetric(float64(client1-client0)/n, "rss-bytes/session")
	b.ReportMetric(float64(heap1-heap0)/n, "heap-bytes/session")
	b.ReportMetric(float64(stack1-stack0)/n, "stack-bytes/session")
	b.ReportMetric(float64(g1-g0)/n, "goroutines/session")
	b.ReportMetric(float64(server1-server0)/n, "server-rss-bytes/session")
	if err := be.Close(); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
}

// settledRSS is pid's resident memory after this process returned what it
// can to the OS.
func settledRSS(b *testing.B, pid int) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	st, err := procstat.Read(pid)
	if err != nil {
		b.Fatal(err)
	}
	return int64(st.RSSBytes)
}

// goMemory returns live heap objects and goroutine stacks, after a GC.
func goMemory() (heap, stacks int64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc), int64(ms.StackInuse)
}
