package proxy_test

import (
	"context"
	"net/url"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/zkbench/zkbench/faults/proxy"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// etcdProxy puts a proxy in front of the shared embedded etcd member and
// returns it with clients through it and direct.
func etcdProxy(t *testing.T) (p *proxy.Proxy, via, direct *clientv3.Client) {
	t.Helper()
	ep := testcluster.EtcdEndpoints(t)[0]
	u, err := url.Parse(ep)
	if err != nil {
		t.Fatal(err)
	}
	p, err = proxy.New(context.Background(), u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	client := func(endpoint string) *clientv3.Client {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	return p, client("http://" + p.Addr()), client(ep)
}

// testCtx bounds a test's calls: a minute, so that it is the waits' own
// deadlines that fail a test, not this one. (10 s failed
// TestEtcdResetFailsInFlightWrite in a quiet cold test run: after the
// reset, the client's reconnection took the rest of the 10 s.)
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestEtcdLatencyThroughProxy(t *testing.T) {
	p, via, direct := etcdProxy(t)
	ctx := testCtx(t)
	median := func(c *clientv3.Client, n int) time.Duration {
		rtts := make([]time.Duration, n)
		for i := range rtts {
			start := time.Now()
			if _, err := c.Get(ctx, "/zkbench/none"); err != nil {
				t.Fatal(err)
			}
			rtts[i] = time.Since(start)
		}
		slices.Sort(rtts)
		return rtts[n/2]
	}
	d, plain := median(direct, 31), median(via, 31)
	// 100 ms each way, far above a get's own round trip (a millisecond on
	// a quiet machine, tens of ms on a loaded one): a median of at least
	// twice that shows that both directions are delayed, a lower bound the
	// proxy enforces. How the undelayed round trips compare is logged only.
	const base = 100 * time.Millisecond
	p.SetLatency(base, 0)
	delayed := median(via, 15)
	t.Logf("etcd get median: direct %v, via proxy %v, via proxy with %v each way %v", d, plain, base, delayed)
	if delayed < 2*base {
		t.Fatalf("delayed RTT %v below the injected %v each way", delayed, base)
	}
}

func TestEtcdCutExpiresLeaseOnServer(t *testing.T) {
	p, via, direct := etcdProxy(t)
	ctx := testCtx(t)
	// A 5 s TTL, not etcd's 2 s minimum: on a loaded machine keep-alives
	// through the proxy were once late enough to lose a 2 s lease before the
	// cut (seen in CI).
	lease, err := via.Grant(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	kctx, kcancel := context.WithCancel(context.Background())
	defer kcancel()
	if _, err := via.KeepAlive(kctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // keep-alives flow
	// What the lease has left when the cut starts: the server cannot expire
	// it sooner (TTL is in whole seconds, rounded down), however late the
	// keep-alives before the cut were.
	cut := time.Now()
	left, err := direct.TimeToLive(ctx, lease.ID)
	if err != nil || left.TTL <= 0 {
		t.Fatalf("lease before the cut: %+v, %v", left, err)
	}
	p.Cut()
	waitUntil(t, 20*time.Second, "the server expires the lease", func() bool {
		ttl, err := direct.TimeToLive(ctx, lease.ID)
		return err == nil && ttl.TTL == -1
	})
	gone := time.Since(cut)
	t.Logf("lease gone on the server %v after the cut, with %ds left at the cut", gone.Round(time.Millisecond), left.TTL)
	if gone < time.Duration(left.TTL)*time.Second {
		t.Fatalf("lease expired %v after the cut, though it had %ds left", gone, left.TTL)
	}
	p.Restore()
	// Reconnected, the client hears from the server that the lease is gone.
	waitUntil(t, 15*time.Second, "the client learns the lease is gone", func() bool {
		_, err := via.KeepAliveOnce(ctx, lease.ID)
		return err != nil && err.Error() == "etcdserver: requested lease not found"
	})
}

func TestEtcdResetFailsInFlightWrite(t *testing.T) {
	p, via, direct := etcdProxy(t)
	ctx := testCtx(t)
	if _, err := via.Get(ctx, "/zkbench/none"); err != nil { // connected
		t.Fatal(err)
	}
	ns := testcluster.TestNamespace(t, testcluster.EtcdBackend(t))
	p.SetDirectionLatency(proxy.ServerToClient, time.Minute, 0) // the reply is held
	errc := make(chan error, 1)
	go func() {
		_, err := via.Put(ctx, ns+"/k", "v")
		errc <- err
	}()
	waitUntil(t, 5*time.Second, "the put applied on the server", func() bool {
		r, err := direct.Get(ctx, ns+"/k")
		return err == nil && r.Count == 1
	})
	if n := p.ResetAll(); n < 1 {
		t.Fatalf("ResetAll reset %d connections", n)
	}
	p.SetDirectionLatency(proxy.ServerToClient, 0, 0)
	select {
	case err := <-errc:
		// The write happened but the client cannot know: the outcome is
		// unknown, which is what a reset mid-request must produce.
		if err == nil {
			t.Fatal("in-flight put succeeded after its connection was reset")
		}
		t.Logf("in-flight put after reset: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("in-flight put did not return after the reset")
	}
	// gRPC redials a reset connection with a backoff (a second and more).
	reconnected := time.Now()
	if _, err := via.Get(ctx, ns+"/k"); err != nil {
		t.Fatalf("client did not reconnect after the reset: %v", err)
	}
	t.Logf("reconnected and read in %v", time.Since(reconnected).Round(time.Millisecond))
}
