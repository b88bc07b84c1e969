package faults_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	zkbackend "github.com/zkbench/zkbench/backends/zookeeper"
	dockercluster "github.com/zkbench/zkbench/cluster/docker"
	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
	"github.com/zkbench/zkbench/faults"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// TestMain runs the test binary as one of its helper processes when asked
// (an etcd member for StartLocal, a lock holder for the pause scenarios),
// and otherwise runs the tests and stops the clusters they started.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case etcdcluster.MemberCommand:
			os.Exit(etcdMemberMain(os.Args[2:]))
		case holderCommand:
			os.Exit(holderMain(os.Args[2:]))
		case selfStopCommand:
			os.Exit(selfStopMain(os.Args[2:]))
		}
	}
	// testcluster's shared servers die with this binary (parent-death
	// signal); the clusters started here are stopped in order.
	code := m.Run()
	stopClusters()
	os.Exit(code)
}

func etcdMemberMain(args []string) int {
	cfg, err := etcdcluster.ParseMemberArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := etcdcluster.RunMember(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// sessionTimeout is the ZooKeeper session timeout and etcd lease TTL of the
// scenarios: short, so that expiry tests are quick.
const sessionTimeout = 2 * time.Second

// cluster is a shared local 3-server cluster with its fault handles.
type cluster struct {
	kind      backends.Kind
	endpoints []string
	handle    faults.Cluster
	leader    faults.LeaderFunc
	docker    *dockercluster.Cluster // nil: local processes
	stop      func()
}

// clusterKey names a shared cluster: its backend, and whether its servers
// run in Docker containers.
type clusterKey struct {
	kind   backends.Kind
	docker bool
}

var (
	clustersMu sync.Mutex
	clusters   = map[clusterKey]*cluster{}
)

// sharedCluster starts the 3-server cluster of kind on first use (a
// ZooKeeper ensemble ticking every 500 ms, or 3 etcd member processes) and
// shares it among the tests of this binary. Tests that kill servers restart
// them before they end.
func sharedCluster(t *testing.T, kind backends.Kind) *cluster {
	t.Helper()
	clustersMu.Lock()
	defer clustersMu.Unlock()
	if c, ok := clusters[clusterKey{kind, false}]; ok {
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := &cluster{kind: kind}
	switch kind {
	case backends.ZooKeeper:
		zc, err := zkcluster.Start(ctx, zkcluster.Options{Nodes: 3, TickTime: 500 * time.Millisecond, HeapMB: 256})
		if err != nil {
			t.Fatalf("start a 3-server ZooKeeper: %v", err)
		}
		c.endpoints, c.handle = zc.Endpoints(), zc
		c.leader = faults.ZooKeeperLeader(c.endpoints)
		c.stop = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = zc.Stop(ctx)
		}
	case backends.Etcd:
		ec, err := etcdcluster.StartLocal(ctx, etcdcluster.Options{Nodes: 3, UnsafeNoFsync: true})
		if err != nil {
			t.Fatalf("start a 3-member etcd: %v", err)
		}
		c.endpoints, c.handle = ec.Endpoints(), ec
		c.leader = faults.EtcdLeader(c.endpoints)
		c.stop = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = ec.Stop(ctx)
		}
	}
	clusters[clusterKey{kind, false}] = c
	return c
}

// sharedDockerCluster is sharedCluster's twin in Docker containers
// (cluster/docker: the project's images, a network of its own), with the
// same tick, started on first use and shared by the tests of this binary.
func sharedDockerCluster(t *testing.T, kind backends.Kind) *cluster {
	t.Helper()
	testcluster.RequireDocker(t, kind)
	clustersMu.Lock()
	defer clustersMu.Unlock()
	if c, ok := clusters[clusterKey{kind, true}]; ok {
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dc, err := dockercluster.Start(ctx, dockercluster.Options{Kind: kind, Nodes: 3, TickTime: 500 * time.Millisecond, HeapMB: 256, UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("start a 3-server %s in Docker: %v", kind, err)
	}
	c := &cluster{kind: kind, endpoints: dc.Endpoints(), handle: dc, docker: dc}
	c.leader = faults.EtcdLeader(c.endpoints)
	if kind == backends.ZooKeeper {
		c.leader = faults.ZooKeeperLeader(c.endpoints)
	}
	c.stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dc.Stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "stop the %s cluster in Docker: %v\n", kind, err)
		}
	}
	clusters[clusterKey{kind, true}] = c
	return c
}

func stopClusters() {
	clustersMu.Lock()
	defer clustersMu.Unlock()
	for _, c := range clusters {
		c.stop()
	}
}

// newBackend opens a Backend of kind on endpoints with the scenarios'
// session timeout; zkDialer, if set, makes ZooKeeper's connections.
func newBackend(t testing.TB, kind backends.Kind, endpoints []string, zkDialer faults.ZKDialer) backends.Backend {
	t.Helper()
	b, err := openBackend(kind, endpoints, sessionTimeout, zkDialer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func openBackend(kind backends.Kind, endpoints []string, timeout time.Duration, zkDialer faults.ZKDialer) (backends.Backend, error) {
	switch kind {
	case backends.ZooKeeper:
		var opts []zkbackend.Option
		if zkDialer != nil {
			opts = append(opts, zkbackend.WithDialer(zkDialer))
		}
		return zkbackend.New(zkbackend.Config{Endpoints: endpoints, SessionTimeout: timeout}, opts...)
	case backends.Etcd:
		return etcdbackend.New(etcdbackend.Config{Endpoints: endpoints, LeaseTTL: timeout})
	}
	return nil, fmt.Errorf("unknown backend %q", kind)
}

// bothBackends runs f as subtests "zookeeper" and "etcd" on the shared
// 3-server clusters.
func bothBackends(t *testing.T, f func(t *testing.T, c *cluster)) {
	for _, kind := range []backends.Kind{backends.ZooKeeper, backends.Etcd} {
		t.Run(string(kind), func(t *testing.T) {
			c := sharedCluster(t, kind)
			waitHealthy(t, c)
			f(t, c)
		})
	}
}

// everyCluster runs f as subtests "zookeeper" and "etcd" on the shared
// 3-server clusters of local processes, then "docker-zookeeper" and
// "docker-etcd" on their twins in Docker containers: the fault scenarios
// hold on both, faults having real means on the second (a container
// killed, frozen, cut off its network).
func everyCluster(t *testing.T, f func(t *testing.T, c *cluster)) {
	bothBackends(t, f)
	for _, kind := range []backends.Kind{backends.ZooKeeper, backends.Etcd} {
		t.Run("docker-"+string(kind), func(t *testing.T) {
			c := sharedDockerCluster(t, kind)
			waitHealthy(t, c)
			f(t, c)
		})
	}
}

// waitHealthy waits until the cluster has a leader and a session opens, so
// that a test starts on a whole cluster even if the one before restarted
// servers.
func waitHealthy(t *testing.T, c *cluster) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, lerr := c.leader(ctx)
		var serr error
		if lerr == nil {
			b, err := openBackend(c.kind, c.endpoints, sessionTimeout, nil)
			if err == nil {
				var s backends.Session
				if s, serr = b.NewSession(ctx); serr == nil {
					_ = s.Close()
				}
				_ = b.Close()
			} else {
				serr = err
			}
		}
		cancel()
		if lerr == nil && serr == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s cluster not healthy: leader: %v, session: %v", c.kind, lerr, serr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// namespace is a fresh /zkbench/test-... removed when t ends.
func namespace(t *testing.T, b backends.Backend) string {
	t.Helper()
	ns := testcluster.TestNamespace(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := b.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.EnsurePath(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return ns
}

func joinEndpoints(eps []string) string { return strings.Join(eps, ",") }
