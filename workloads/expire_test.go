package workloads

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/faults"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/results"
)

// zkExpiringBackend is a ZooKeeper backend whose connections a
// faults.ZKSessions watches, so that faults.Backend can expire any of its
// sessions on the server (ParamKill "expire"). expired counts the sessions
// that their own clients found expired on reconnecting.
func zkExpiringBackend(t *testing.T) (backends.Backend, func() int) {
	t.Helper()
	eps := testcluster.ZooKeeperEndpoints(t)
	var expired atomic.Int64
	zs := faults.NewZKSessions(func(_ int64, s faults.SessionState) {
		if s == faults.SessionExpired {
			expired.Add(1)
		}
	})
	zb, err := zookeeper.New(zookeeper.Config{Endpoints: eps, SessionTimeout: 4 * time.Second},
		zookeeper.WithDialer(zs.Dialer(nil)))
	if err != nil {
		t.Fatal(err)
	}
	b := faults.NewBackend(zb, nil, nil, faults.WithSessionExpirer(faults.ZKExpirer{Sessions: zs, Endpoints: eps}))
	t.Cleanup(func() { b.Close() })
	return b, func() int { return int(expired.Load()) }
}

// TestKillExpireZooKeeper: the failover and observers workloads end each
// leader's session on the ZooKeeper server (a second connection attaches to
// it and closes it). The next leader takes over; the old leader learns of
// it only from the server, late ("lost_notice"), and acts as leader until
// then.
func TestKillExpireZooKeeper(t *testing.T) {
	const k = 3
	cfg := results.Config{Duration: time.Minute, Ops: k, Params: map[string]string{ParamKill: KillExpire}}
	t.Run("failover", func(t *testing.T) {
		b, expired := zkExpiringBackend(t)
		res := runRecipeCase(t, NewFailover(), b, "fair", 4, cfg)
		if res.Ops.Succeeded != k || res.StoppedBy != StoppedByOps {
			t.Fatalf("%d of %d failovers, stopped by %s: %v %q", res.Ops.Succeeded, k, res.StoppedBy, res.Errors, res.Notes)
		}
		notice := res.Latency["lost_notice"]
		if notice == nil || notice.Count != k {
			t.Fatalf("lost_notice %+v: want every expired leader to learn of it", notice)
		}
		// The next leader is elected within milliseconds, the old one still
		// acts until it hears from the server (a second later, against a
		// failover of 30 ms, on a loaded machine): every failover overlaps (the
		// ephemeral-node pitfall the checker exists to show), so the old
		// leaders learn later than their successors are elected. How much
		// later is a ratio of two latencies, which load moves: logged only.
		if res.Safety.Violations != k || notice.P50 <= res.Latency["failover"].P50 {
			t.Errorf("safety %+v: want each of the %d failovers to overlap the old leader, who learns late", res.Safety, k)
		}
		if n := expired(); n < k {
			t.Errorf("%d sessions found expired by their clients, want %d", n, k)
		}
		t.Logf("failover p50 %v; old leader learns after p50 %v, max %v; notes %q",
			time.Duration(res.Latency["failover"].P50), time.Duration(notice.P50), time.Duration(notice.Max), res.Notes)
	})
	t.Run("observers", func(t *testing.T) {
		b, expired := zkExpiringBackend(t)
		res := runRecipeCase(t, NewObservers(), b, "fair", 5, cfg)
		if res.Ops.Succeeded != k || res.StoppedBy != StoppedByOps {
			t.Fatalf("%d of %d failovers observed, stopped by %s: %v %q", res.Ops.Succeeded, k, res.StoppedBy, res.Errors, res.Notes)
		}
		if h := res.Latency["observe"]; h == nil || h.Count != 5*k {
			t.Fatalf("observe histogram %+v", h)
		}
		if n := expired(); n < k {
			t.Errorf("%d sessions found expired by their clients, want %d", n, k)
		}
	})
	t.Run("not without an expirer", func(t *testing.T) {
		b := testcluster.ZooKeeperBackend(t)
		_, err := NewFailover().Run(t.Context(), Case{Backend: b, Variant: "fair", Clients: 2, Repeat: 1,
			Namespace: testcluster.TestNamespace(t, b), Config: cfg})
		if err == nil || !strings.Contains(err.Error(), "cannot be expired") {
			t.Fatalf("err = %v", err)
		}
	})
}
