package etcd_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/etcd"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// preflightBound: every verdict comes within the 3 s status timeout (a
// silent listener's takes all of it) plus slack for a loaded machine, and
// well before the 60 s ctx that preflight gives it.
const preflightBound = 20 * time.Second

// preflight runs Preflight on endpoints and returns its error and duration.
func preflight(t *testing.T, cfg etcd.Config, opts ...etcd.Option) (backends.ClusterInfo, error, time.Duration) {
	t.Helper()
	b, err := etcd.New(cfg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer b.Close()
	start := time.Now()
	info, err := b.Preflight(ctxFor(t, 60*time.Second))
	return info, err, time.Since(start)
}

// wantPreflightError checks a failed Preflight: ErrPreflight, the words a
// user needs, and within preflightBound.
func wantPreflightError(t *testing.T, err error, took time.Duration, words ...string) {
	t.Helper()
	wantPreflightErrorWithin(t, err, took, preflightBound, words...)
}

// wantPreflightErrorWithin is wantPreflightError for a Preflight given a
// longer status timeout: its verdict comes within bound.
func wantPreflightErrorWithin(t *testing.T, err error, took, bound time.Duration, words ...string) {
	t.Helper()
	if !errors.Is(err, etcd.ErrPreflight) {
		t.Fatalf("err = %v, want ErrPreflight", err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if took > bound {
		t.Errorf("verdict after %v, want it within %v (the status timeout and slack)", took, bound)
	}
	t.Logf("%v: %v", took.Round(time.Millisecond), err)
}

func TestPreflightHealthy(t *testing.T) {
	info, err, took := preflight(t, etcd.Config{Endpoints: testcluster.EtcdEndpoints(t)})
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != backends.Etcd || len(info.Members) != 1 {
		t.Fatalf("info %+v", info)
	}
	m := info.Members[0]
	if m.Role != "leader" || !strings.HasPrefix(m.Version, "3.7.") || m.RTT <= 0 {
		t.Fatalf("member %+v, want a 3.7 leader with an RTT", m)
	}
	t.Logf("preflight took %v: %+v", took, m)
}

func TestPreflightCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster")
	}
	info, err, _ := preflight(t, etcd.Config{Endpoints: testcluster.EtcdClusterEndpoints(t)})
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]int{}
	for _, m := range info.Members {
		roles[m.Role]++
	}
	if roles["leader"] != 1 || roles["follower"] != 2 {
		t.Fatalf("roles %v, want 1 leader and 2 followers", roles)
	}
}

func TestPreflightUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err, took := preflight(t, etcd.Config{Endpoints: []string{addr}})
	wantPreflightError(t, err, took, addr, "unreachable")
}

// listener accepts connections and hands each to serve.
func listener(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return l.Addr().String()
}

// silent returns a listener that accepts connections and says nothing on
// them until the test ends.
func silent(t *testing.T) string {
	t.Helper()
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit) })
	return listener(t, func(c net.Conn) {
		<-quit
		c.Close()
	})
}

func TestPreflightSilentListener(t *testing.T) {
	addr := silent(t)
	_, err, took := preflight(t, etcd.Config{Endpoints: []string{addr}})
	wantPreflightError(t, err, took, addr, "no etcd gRPC answer")
}

func TestPreflightListenerThatHangsUp(t *testing.T) {
	addr := listener(t, func(c net.Conn) { c.Close() })
	_, err, took := preflight(t, etcd.Config{Endpoints: []string{addr}})
	wantPreflightError(t, err, took, addr, "does not speak etcd's gRPC API", "--backend zookeeper")
}

func TestPreflightZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper")
	}
	zk := testcluster.ZooKeeperEndpoints(t)
	_, err, took := preflight(t, etcd.Config{Endpoints: zk})
	wantPreflightError(t, err, took, zk[0], "ZooKeeper", "--backend zookeeper")
}

func TestPreflightTLSToPlaintext(t *testing.T) {
	ep := testcluster.EtcdEndpoints(t)[0]
	host := strings.TrimPrefix(ep, "http://")
	_, err, took := preflight(t, etcd.Config{Endpoints: []string{"https://" + host}, TLS: etcd.TLSConfig{InsecureSkipVerify: true}})
	wantPreflightError(t, err, took, "does not speak TLS")
}

func TestMalformedEndpoints(t *testing.T) {
	for _, ep := range []string{"localhost", "127.0.0.1:99999", "127.0.0.1:http", "ftp://127.0.0.1:2379", "http://", ":2379", "http://127.0.0.1:2379/v3"} {
		t.Run(ep, func(t *testing.T) {
			_, err := etcd.New(etcd.Config{Endpoints: []string{ep}})
			if !errors.Is(err, etcd.ErrConfig) || !strings.Contains(err.Error(), ep) {
				t.Fatalf("New(%q) = %v, want ErrConfig naming the endpoint", ep, err)
			}
		})
	}
}

// Preflight ends with its ctx: with a status timeout of a minute and a
// listener that never answers, only the ctx can end it early.
func TestPreflightRespectsContext(t *testing.T) {
	addr := silent(t)
	b, err := etcd.New(etcd.Config{Endpoints: []string{addr}}, etcd.WithStatusTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := b.Preflight(ctx); err == nil {
		t.Fatal("Preflight passed on a silent listener")
	}
	took := time.Since(start)
	if took > 10*time.Second {
		t.Fatalf("Preflight returned %v after it started with a 500ms ctx, want it soon after the ctx ended (its status timeout is a minute)", took)
	}
	t.Logf("Preflight returned %v after it started with a 500ms ctx", took.Round(time.Millisecond))
}
