package instrument_test

import (
	"context"
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
)

// These benchmarks measure the decorator's own cost per call. The session
// underneath is stubSession, which answers from memory at once, so the
// difference between the Raw and Wrapped figures is the counting overhead;
// a real backend's call is a network round trip (tens of microseconds or
// more) on top.

func BenchmarkCountersRawGet(b *testing.B) {
	var s backends.Session = newStub()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s.Get(ctx, "/a")
	}
}

func BenchmarkCountersWrappedGet(b *testing.B) {
	var s backends.Session = instrument.Wrap(newStub(), new(instrument.Counters))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s.Get(ctx, "/a")
	}
}

func BenchmarkCountersWrappedCreateFailing(b *testing.B) {
	stub := newStub()
	stub.err = backends.ErrNodeExists
	var s backends.Session = instrument.Wrap(stub, new(instrument.Counters))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s.Create(ctx, "/a", nil)
	}
}

// BenchmarkCountersWrappedGetParallel: many clients, each its own Counters,
// as in a run (no shared cache line between clients' counters on the path).
func BenchmarkCountersWrappedGetParallel(b *testing.B) {
	r := instrument.NewRegistry()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var s backends.Session = instrument.Wrap(newStub(), r.NewClient())
		for pb.Next() {
			s.Get(ctx, "/a")
		}
	})
}

// BenchmarkCountersRawExistsW and ...WrappedExistsW show the watch path's
// extra cost: one channel and one relay goroutine per armed watch.
func BenchmarkCountersRawExistsW(b *testing.B) {
	var s backends.Session = newStub()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _, ch, _ := s.ExistsW(ctx, "/a")
		<-ch
	}
}

func BenchmarkCountersWrappedExistsW(b *testing.B) {
	var s backends.Session = instrument.Wrap(newStub(), new(instrument.Counters))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _, ch, _ := s.ExistsW(ctx, "/a")
		<-ch
	}
}

func BenchmarkCountersSnapshot(b *testing.B) {
	c := new(instrument.Counters)
	b.ReportAllocs()
	for b.Loop() {
		c.Snapshot()
	}
}
