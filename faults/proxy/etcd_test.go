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
	"github.com/zkbench/zkbench/internal/testcluster"
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

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestEtcdLatencyThroughProxy(t *testing.T) {
	p, via, direct := etcdProxy(t)
	ctx := ctx10(t)
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
	const base = 10 * time.Millisecond
	p.SetLatency(base, 0)
	delayed := median(via, 15)
	t.Logf("etcd get median: direct %v, via proxy %v, via proxy with %v each way %v", d, plain, base, delayed)
	if delayed < 2*base {
		t.Fatalf("delayed RTT %v below the injected %v", delayed, 2*base)
	}
	if ratio := float64(delayed) / float64(max(d, plain)); ratio < 5 {
		t.Fatalf("delayed/undelayed ratio %.1f, want >= 5", ratio)
	}
}

func TestEtcdCutExpiresLeaseOnServer(t *testing.T) {
	p, via, direct := etcdProxy(t)
	ctx := ctx10(t)
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
	if ttl, err := direct.TimeToLive(ctx, lease.ID); err != nil || ttl.TTL <= 0 {
		t.Fatalf("lease before the cut: %+v, %v", ttl, err)
	}

	cut := time.Now()
	p.Cut()
	waitUntil(t, 20*time.Second, "the server expires the lease", func() bool {
		ttl, err := direct.TimeToLive(ctx, lease.ID)
		return err == nil && ttl.TTL == -1
	})
	t.Logf("lease gone on the server %v after the cut", time.Since(cut).Round(time.Millisecond))
	if time.Since(cut) < 2500*time.Millisecond { // half the TTL, as 1 s was of 2 s
		t.Fatal("lease expired before its TTL could run out")
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
	ctx := ctx10(t)
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
	if _, err := via.Get(ctx, ns+"/k"); err != nil {
		t.Fatalf("client did not reconnect after the reset: %v", err)
	}
}
