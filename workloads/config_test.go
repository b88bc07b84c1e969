package workloads

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/results"
)

// TestConfigEveryClientReloads: on both backends every variant brings every
// client to the last version with the data written; the watch variants
// notify each client about once an update (one-shot may coalesce, never
// more than one per update), the persistent one reads nothing, polling
// arms no watch.
func TestConfigEveryClientReloads(t *testing.T) {
	const n = 5
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range configSpec().VariantNames(b.Kind()) {
			t.Run(v, func(t *testing.T) {
				cfg := results.Config{Duration: 2 * time.Second, Rate: 10,
					Params: map[string]string{ParamSize: strconv.Itoa(4 << 10), ParamPoll: "50ms"}}
				res := runRecipeCase(t, NewConfig(), b, v, n, cfg)
				if res.Ops.Succeeded < 5 || res.Safety.Checked != n || res.Safety.Violations != 0 {
					t.Fatalf("%d updates, safety %+v, errors %v, notes %v", res.Ops.Succeeded, res.Safety, res.Errors, res.Notes)
				}
				prop, last := res.Latency["propagate"], res.Latency["propagate_last"]
				if last == nil || last.Count > res.Ops.Succeeded {
					t.Fatalf("propagate_last %+v, want at most one value an update (%d)", last, res.Ops.Succeeded)
				}
				// Every reload of a measured version is in propagate_start;
				// those that beat the writer's reply are counted apart,
				// not as zeros in propagate.
				ops := float64(res.Ops.Succeeded)
				skipped, early := res.PerOp["versions_skipped"]*ops, res.PerOp["reloads_before_reply"]*ops
				start, lastStart := res.Latency["propagate_start"], res.Latency["propagate_last_start"]
				if start == nil || float64(start.Count)+skipped != float64(n)*ops {
					t.Fatalf("propagate_start %+v + %.0f skipped != %d clients x %.0f updates", start, skipped, n, ops)
				}
				if prop == nil || float64(prop.Count)+early != float64(start.Count) {
					t.Fatalf("propagate %+v + %.0f before the reply != %d reloads", prop, early, start.Count)
				}
				// A reload's time from the reply is at most its time from
				// the write's start, so propagate's longest is at most
				// propagate_start's. (Their medians need not be ordered:
				// propagate holds only the reloads that came after the
				// reply, on etcd's persistent watch the slow minority.)
				if lastStart == nil || lastStart.Count != res.Ops.Succeeded || last.P99 > lastStart.P99 || prop.Max > start.Max {
					t.Fatalf("propagate_last_start %+v (want one an update, no earlier than propagate_last %+v); propagate's longest %d after propagate_start's %d",
						lastStart, last, prop.Max, start.Max)
				}
				checkFootprint(t, b.Kind(), v, n, res.Watch)
				perClient := res.PerOp["watch_events"] / n
				t.Logf("%s %s: %.2f notifications and %.2f requests a client an update, %.0f bytes received an update, p99 %v, last p99 %v",
					b.Kind(), v, perClient, res.PerOp["requests"]/n, res.PerOp["bytes_received"], time.Duration(prop.P99), time.Duration(last.P99))
				switch v {
				case ConfigPolling:
					if res.Client.WatchesArmed != 0 {
						t.Errorf("polling armed %d watches", res.Client.WatchesArmed)
					}
				case ConfigPersistent:
					if res.Client.WatchesArmed != 0 || res.Client.Requests["get"] != 0 {
						t.Errorf("persistent armed %d watches and read %d times within the interval, want 0 and 0 (one stream, data in the events)",
							res.Client.WatchesArmed, res.Client.Requests["get"])
					}
					if perClient < 0.95 || perClient > 1.2 {
						t.Errorf("persistent: %.2f notifications a client an update, want 1", perClient)
					}
				case ConfigOneShot:
					if perClient > 1.2 || perClient < 0.5 {
						t.Errorf("one-shot: %.2f notifications a client an update, want about 1", perClient)
					}
				}
			})
		}
	})
}

// checkFootprint: the servers' watches and live heap were read around the
// arming: on a local ZooKeeper (a process of its own) the heap per watching
// client is measured; the embedded etcd's heap is zkbench's own, which the
// footprint says instead of a figure.
func checkFootprint(t *testing.T, kind backends.Kind, variant string, n int, fp *results.WatchFootprint) {
	t.Helper()
	if fp == nil {
		t.Fatal("no watch footprint")
	}
	t.Logf("%s %s: watch footprint %+v", kind, variant, *fp)
	if variant == ConfigPolling {
		if fp.WatchingClients != 0 || fp.Watchers != fp.WatchersBefore {
			t.Errorf("polling: %d watching clients, server watches %v -> %v, want none armed", fp.WatchingClients, fp.WatchersBefore, fp.Watchers)
		}
		return
	}
	if fp.WatchingClients != n || fp.Watchers < fp.WatchersBefore+float64(n) {
		t.Errorf("%d watching clients, server watches %v -> %v: want %d clients and at least %d more watches", fp.WatchingClients, fp.WatchersBefore, fp.Watchers, n, n)
	}
	switch kind {
	case backends.ZooKeeper:
		// (A few watches' bytes are within the heap's own noise: the
		// figure is read at scale, not asserted here.)
		if fp.NotMeasured != "" || fp.HeapBefore <= 0 || fp.Heap <= 0 || fp.HeapSource == "" {
			t.Errorf("zookeeper: heap %v -> %v from %q, not measured %q: want both heaps read", fp.HeapBefore, fp.Heap, fp.HeapSource, fp.NotMeasured)
		}
		// The figure comes with what it can resolve: the two readings
		// before the arming, per watching client.
		if nz := fp.HeapPerWatcherNoise; nz == nil || *nz != fp.HeapNoise/float64(n) {
			t.Errorf("zookeeper: heap noise %v, per watcher %v: want the noise per watching client kept", fp.HeapNoise, nz)
		}
	case backends.Etcd:
		if !strings.Contains(fp.NotMeasured, "embedded") || fp.Heap != 0 {
			t.Errorf("embedded etcd: heap %v, not measured %q: want no heap, and why", fp.Heap, fp.NotMeasured)
		}
	}
}

// TestConfigRefusals: a size over the servers' limit is refused before any
// server starts; the persistent variant runs on both backends.
func TestConfigRefusals(t *testing.T) {
	w := NewConfig()
	if err := w.CheckRun(backends.ZooKeeper, []string{ConfigPersistent}, nil); err != nil {
		t.Errorf("persistent on zookeeper (a persistent watch, ZooKeeper 3.6+): %v", err)
	}
	if err := w.CheckRun(backends.Etcd, []string{ConfigPersistent}, map[string]string{ParamSize: "1MB"}); err != nil {
		t.Errorf("1MB on etcd: %v", err)
	}
	if err := w.CheckRun(backends.ZooKeeper, []string{ConfigOneShot}, map[string]string{ParamSize: "1MB"}); !errors.Is(err, ErrBadCase) {
		t.Errorf("1MB on zookeeper (jute.maxbuffer 0xfffff): %v", err)
	}
	if err := w.CheckRun(backends.Etcd, nil, map[string]string{ParamSize: "2MB"}); !errors.Is(err, ErrBadCase) {
		t.Errorf("2MB on etcd: %v", err)
	}
	for in, want := range map[string]int{"512": 512, "64KB": 64 << 10, "1MB": 1 << 20, "1 MiB": 1 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

// heldSets is a backend whose sessions' Set, after the first `after` Sets,
// does not return until its context ends: a server that took the writer's
// update and never answers. Everything else reaches the real servers.
type heldSets struct {
	backends.Backend
	after int64
	sets  atomic.Int64
	held  chan struct{} // closed at the first held Set
	once  sync.Once
}

func (h *heldSets) Unwrap() backends.Backend { return h.Backend }

func (h *heldSets) List(ctx context.Context, p string) ([]string, error) {
	return h.Backend.(backends.Admin).List(ctx, p)
}

func (h *heldSets) DeleteTree(ctx context.Context, p string) error {
	return h.Backend.(backends.Admin).DeleteTree(ctx, p)
}

func (h *heldSets) NewSession(ctx context.Context) (backends.Session, error) {
	s, err := h.Backend.NewSession(ctx)
	if err != nil {
		return nil, err
	}
	return &heldSession{Session: s, h: h}, nil
}

type heldSession struct {
	backends.Session
	h *heldSets
}

func (s *heldSession) Unwrap() backends.Session { return s.Session }

func (s *heldSession) Set(ctx context.Context, p string, data []byte) error {
	if s.h.sets.Add(1) <= s.h.after {
		return s.Session.Set(ctx, p, data)
	}
	s.h.once.Do(func() { close(s.h.held) })
	<-ctx.Done()
	return ctx.Err()
}

// TestConfigWriteInFlight: a writer's Set that gets no answer does not
// hold the case: cancelling the case cuts it short, and at the case's end
// it has --step-timeout to return, then counts as a write timeout (not a
// safety violation).
func TestConfigWriteInFlight(t *testing.T) {
	type outcome struct {
		res results.Result
		err error
	}
	b := testcluster.EtcdBackend(t)
	// start runs a polling case of two clients on a backend whose Sets
	// after the first write and two updates (at 20 a second: within the
	// first second) get no answer, and waits until one is held.
	start := func(t *testing.T, ctx context.Context, d time.Duration) <-chan outcome {
		h := &heldSets{Backend: b, after: 3, held: make(chan struct{})}
		c := Case{
			Backend: h, Cluster: preflight(t, b), Variant: ConfigPolling, Clients: 2, Repeat: 1,
			Namespace: testcluster.TestNamespace(t, b), Log: NewRunLog(nil, time.Now()),
			Config: results.Config{Duration: d, Rate: 20, Params: map[string]string{ParamPoll: "50ms", ParamStepTimeout: "2s"}},
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := NewConfig().Run(ctx, c)
			done <- outcome{res, err}
		}()
		select {
		case <-h.held:
		case o := <-done:
			t.Fatalf("the case ended before a Set was held: %v, errors %v", o.err, o.res.Errors)
		case <-time.After(time.Minute):
			t.Fatal("no Set held within a minute")
		}
		return done
	}
	// Closing the sessions and checking leftovers take moments; a Set
	// bound only by its session (which stays alive) would take forever.
	const bound = time.Minute

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := start(t, ctx, time.Hour)
		cancel()
		select {
		case o := <-done:
			if o.err != nil || o.res.StoppedBy != StoppedByInterrupted || len(o.res.Errors) != 0 {
				t.Fatalf("cancelled case: %v, stopped by %q, errors %v", o.err, o.res.StoppedBy, o.res.Errors)
			}
		case <-time.After(bound):
			t.Fatalf("a cancelled config case still waits on its writer's Set %v later", bound)
		}
	})

	t.Run("stopped writing", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		done := start(t, ctx, time.Second)
		select {
		case o := <-done:
			if o.err != nil {
				t.Fatal(o.err)
			}
			if o.res.Errors["write_timeout"] != 1 || o.res.Safety.Violations != 0 {
				t.Fatalf("errors %v, safety %+v; want one write_timeout and no violation", o.res.Errors, o.res.Safety)
			}
			t.Logf("stopped by %s, errors %v", o.res.StoppedBy, o.res.Errors)
		case <-time.After(bound + 2*time.Second):
			t.Fatalf("the case still waits on its writer's Set %v after it stopped writing (step timeout 2s)", bound)
		}
	})
}
