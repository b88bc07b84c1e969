package zookeeper_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// preflightDeadline is the ctx deadline preflight gives Preflight: a
// silent endpoint's verdict comes when it passes.
const preflightDeadline = 3 * time.Second

// preflight runs Preflight on endpoints with a preflightDeadline ctx and
// reports how long it took.
func preflight(t *testing.T, endpoints ...string) (backends.ClusterInfo, error, time.Duration) {
	t.Helper()
	b := open(t, zookeeper.Config{Endpoints: endpoints})
	ctx, cancel := context.WithTimeout(context.Background(), preflightDeadline)
	defer cancel()
	start := time.Now()
	info, err := b.Preflight(ctx)
	return info, err, time.Since(start)
}

// verdictInTime fails t unless a verdict that took took came with the
// deadline at the latest, give or take what a loaded machine adds: the
// four-letter-word queries all end with the ctx.
func verdictInTime(t *testing.T, took time.Duration) {
	t.Helper()
	if took > preflightDeadline+5*time.Second {
		t.Errorf("verdict after %v, past the %v deadline of Preflight's ctx", took, preflightDeadline)
	}
}

func TestPreflightStandalone(t *testing.T) {
	b := testcluster.ZooKeeperBackend(t)
	info, err := b.Preflight(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != backends.ZooKeeper || len(info.Members) != 1 || info.MaxClientCnxns != 0 {
		t.Fatalf("info %+v", info)
	}
	m := info.Members[0]
	if !strings.HasPrefix(m.Version, "3.") || m.Role != "standalone" || m.RTT <= 0 || m.PID <= 0 {
		t.Fatalf("member %+v", m)
	}
}

func TestPreflightEnsembleRoles(t *testing.T) {
	b := testcluster.ZooKeeperEnsembleBackend(t)
	info, err := b.Preflight(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]int{}
	for _, m := range info.Members {
		roles[m.Role]++
	}
	if roles["leader"] != 1 || roles["follower"] != 2 {
		t.Fatalf("roles %v", roles)
	}
}

func TestPreflightUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := l.Addr().String()
	l.Close() // nothing listens there now
	_, err, took := preflight(t, ep)
	if !errors.Is(err, zookeeper.ErrUnreachable) || !strings.Contains(err.Error(), "cannot reach ZooKeeper at "+ep) ||
		!strings.Contains(err.Error(), "is it running?") {
		t.Fatalf("err = %v", err)
	}
	verdictInTime(t, took)
	t.Logf("%v: %v", took.Round(time.Millisecond), err)
}

func TestPreflightNotZooKeeper(t *testing.T) {
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() { // accept and say nothing
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	etcd := testcluster.EtcdEndpoints(t)[0]
	etcd = etcd[strings.Index(etcd, "://")+3:]
	for name, ep := range map[string]string{
		"etcd":   etcd,
		"http":   strings.TrimPrefix(web.URL, "http://"),
		"silent": silent.Addr().String(),
	} {
		t.Run(name, func(t *testing.T) {
			_, err, took := preflight(t, ep)
			if !errors.Is(err, zookeeper.ErrNotZooKeeper) || !strings.Contains(err.Error(), "is it etcd? use --backend etcd") {
				t.Fatalf("err = %v", err)
			}
			verdictInTime(t, took)
			t.Logf("%v: %v", took.Round(time.Millisecond), err)
		})
	}
}

func TestMalformedEndpoints(t *testing.T) {
	for _, ep := range []string{"localhost", "localhost:zk", ":2181", "127.0.0.1:0", "127.0.0.1:70000", "http://127.0.0.1:2181"} {
		_, err := zookeeper.New(zookeeper.Config{Endpoints: []string{ep}})
		if !errors.Is(err, zookeeper.ErrBadEndpoint) {
			t.Errorf("New(%q) = %v, want ErrBadEndpoint", ep, err)
		}
	}
	if _, err := zookeeper.New(zookeeper.Config{}); !errors.Is(err, zookeeper.ErrBadEndpoint) {
		t.Errorf("New with no endpoints = %v", err)
	}
}

func TestPreflightFourLetterWordsNotWhitelisted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := zkcluster.Start(ctx, zkcluster.Options{
		TickTime: 500 * time.Millisecond, HeapMB: 128,
		Extra: map[string]string{"4lw.commands.whitelist": "srvr,ruok"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	_, err, _ = preflight(t, c.Endpoints()...)
	if !errors.Is(err, zookeeper.ErrFourLetterWords) || !strings.Contains(err.Error(), `"conf"`) ||
		!strings.Contains(err.Error(), "4lw.commands.whitelist=srvr,conf,mntr,ruok") {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckClientLimit(t *testing.T) {
	cases := []struct {
		limit, clients int
		ok             bool
	}{{0, 10000, true}, {60, 60, true}, {60, 61, false}, {-1, 100, true}}
	for _, c := range cases {
		err := zookeeper.CheckClientLimit(backends.ClusterInfo{MaxClientCnxns: c.limit}, c.clients)
		if (err == nil) != c.ok {
			t.Errorf("limit %d, clients %d: %v", c.limit, c.clients, err)
		}
		if err != nil && (!errors.Is(err, zookeeper.ErrClientLimit) || !strings.Contains(err.Error(), "maxClientCnxns=0")) {
			t.Errorf("message does not say what to do: %v", err)
		}
	}
}
