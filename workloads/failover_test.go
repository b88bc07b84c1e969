package workloads

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	zkbackend "github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads/measure"
)

// preflight describes b's cluster for a case.
func preflight(t *testing.T, b backends.Backend) backends.ClusterInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := b.Preflight(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// runRecipeCase runs one case of w and checks what every case must hold:
// the result validates, operations add up, the servers were measured and
// nothing was left behind.
func runRecipeCase(t *testing.T, w Workload, b backends.Backend, variant string, n int, cfg results.Config) results.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := NewRunLog(nil, time.Now())
	res, err := w.Run(ctx, Case{
		Backend: b, Cluster: preflight(t, b), Variant: variant, Clients: n, Repeat: 1,
		Namespace: testcluster.TestNamespace(t, b), Config: cfg, Log: log,
	})
	if err != nil {
		t.Fatalf("%s: %v", variant, err)
	}
	run := &results.Run{Format: results.FormatVersion, ID: "t", Status: results.StatusComplete, Results: []results.Result{res}}
	if err := run.Validate(); err != nil {
		t.Fatalf("%s: invalid result: %v", variant, err)
	}
	if res.Ops.Issued != res.Ops.Succeeded+res.Ops.Failed+res.Ops.Unknown+res.Ops.StillWaiting {
		t.Fatalf("%s: ops %+v do not add up", variant, res.Ops)
	}
	if left := log.LeftoverPaths(); len(left) > 0 {
		t.Fatalf("%s: leftovers %v", variant, left)
	}
	if ago := time.Since(res.Started); res.Started.IsZero() || ago < res.Elapsed || ago > res.Elapsed+2*time.Minute {
		t.Fatalf("%s: measured from %v (%v ago) for %v", variant, res.Started, ago, res.Elapsed)
	}
	for _, n := range res.Notes {
		if strings.Contains(n, "leftovers not checked") || strings.Contains(n, "server counters not measured") {
			t.Fatalf("%s: %s", variant, n)
		}
	}
	return res
}

// TestFailoverHerd: K failovers among N candidates, each measured; the
// herd-free variants get one notification per failover, the naive one a
// notification for every candidate still waiting.
func TestFailoverHerd(t *testing.T) {
	const n, k = 8, 3
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range failoverSpec().VariantNames(b.Kind()) {
			t.Run(v, func(t *testing.T) {
				res := runRecipeCase(t, NewFailover(), b, v, n, results.Config{Duration: time.Minute, Ops: k})
				if res.Ops.Succeeded != k || res.StoppedBy != StoppedByOps {
					t.Fatalf("%d of %d failovers succeeded, stopped by %s: %v %v", res.Ops.Succeeded, k, res.StoppedBy, res.Errors, res.Notes)
				}
				if h := res.Latency["failover"]; h == nil || h.Count != k {
					t.Fatalf("failover histogram %+v, want %d values", h, k)
				}
				if res.Safety.Violations != 0 || res.Safety.Checked < k {
					t.Fatalf("safety %+v", res.Safety)
				}
				events, measured := res.PerOp["watch_events"]
				t.Logf("%s %s: failover p50 %v, %.2f notifications, %.1f requests, %.1f server requests per failover",
					b.Kind(), v, time.Duration(res.Latency["failover"].P50), events, res.PerOp["requests"], res.PerOp["server_requests"])
				switch {
				case v == "native":
					if measured {
						t.Errorf("native has client-side counts %v", res.PerOp)
					}
				case v == "fair" && events != 1:
					t.Errorf("fair: %.2f notifications per failover, want 1", events)
				case v == "naive" && events != float64(n-2): // 7, 6 and 5 candidates waiting
					t.Errorf("naive: %.2f notifications per failover, want %d", events, n-2)
				}
			})
		}
	})
}

// TestFailoverCrash: a crashed leader (connection gone, no close) is
// replaced only once the server has ended its session on its timeout: no
// failover comes sooner than the timeout less the client's heartbeat
// interval (a third of it), which a close or a revoke sent by mistake would
// beat by seconds. The old leader notices nothing, and nothing is left.
func TestFailoverCrash(t *testing.T) {
	const n, k = 4, 2
	timeouts := map[backends.Kind]time.Duration{backends.ZooKeeper: zkbackend.DefaultSessionTimeout, backends.Etcd: etcdbackend.DefaultLeaseTTL}
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		res := runRecipeCase(t, NewFailover(), b, "fair", n, results.Config{Duration: time.Minute, Ops: k,
			Params: map[string]string{ParamKill: KillCrash}})
		if res.Ops.Succeeded != k || res.StoppedBy != StoppedByOps {
			t.Fatalf("%d of %d failovers succeeded, stopped by %s: %v %v", res.Ops.Succeeded, k, res.StoppedBy, res.Errors, res.Notes)
		}
		h := res.Latency["failover"]
		if h == nil || h.Count != k {
			t.Fatalf("failover histogram %+v, want %d values", h, k)
		}
		least := timeouts[b.Kind()] * 2 / 3
		if min := time.Duration(h.Min); min < least {
			t.Errorf("a failover after %v, before the session could time out (%v at the least)", min, least)
		}
		if ln := res.Latency["lost_notice"]; ln != nil && ln.Count > 0 {
			t.Errorf("a crashed leader noticed its loss: %+v", ln)
		}
		if res.Safety.Violations != 0 {
			t.Errorf("safety %+v", res.Safety)
		}
		for _, n := range res.Notes { // a crashed session's end is no write the server counts
			if strings.Contains(n, "client and server disagree") {
				t.Errorf("%s", n)
			}
		}
		t.Logf("%s: failover min %v, p50 %v, max %v", b.Kind(), time.Duration(h.Min), time.Duration(h.P50), time.Duration(h.Max))
	})
}

// TestAwaitArmed: the wait between failovers returns once every waiting
// client has a watch open, passes over clients that do not wait, and
// gives up at its limit while a waiting client has none.
func TestAwaitArmed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := testcluster.EtcdBackend(t)
	clients, err := measure.OpenClients(ctx, b, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer clients.Close(context.Background())
	all := func(int) bool { return true }
	if awaitArmed(ctx, clients, all, 50*time.Millisecond) {
		t.Fatal("awaitArmed: true with no watch open")
	}
	if !awaitArmed(ctx, clients, func(int) bool { return false }, time.Second) {
		t.Fatal("awaitArmed: false with no client waiting")
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	path := testcluster.TestNamespace(t, b) + "/await-armed"
	for _, s := range clients.Sessions {
		if _, _, _, err := s.ExistsW(wctx, path); err != nil {
			t.Fatal(err)
		}
	}
	if !awaitArmed(ctx, clients, all, 10*time.Second) {
		t.Fatalf("awaitArmed: false with every client watching (open: %d, %d)",
			clients.Counters[0].OpenWatches(), clients.Counters[1].OpenWatches())
	}
	stop()
	// A watch ended by its ctx is no longer open: the client looks awake.
	deadline := time.Now().Add(10 * time.Second)
	for clients.Counters[0].OpenWatches() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if awaitArmed(ctx, clients, all, 50*time.Millisecond) {
		t.Fatal("awaitArmed: true after the watches ended")
	}
}
