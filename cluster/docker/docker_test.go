package docker_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/zkbench/zkbench/backends"
	dockercluster "github.com/zkbench/zkbench/cluster/docker"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// leftovers lists the containers and networks of cluster name still on
// the engine.
func leftovers(t *testing.T, name string) []string {
	t.Helper()
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := client.Filters{}.Add("label", dockercluster.LabelCluster+"="+name)
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Items {
		out = append(out, "container "+strings.Join(c.Names, ","))
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns.Items {
		out = append(out, "network "+n.Name)
	}
	return out
}

func start(t *testing.T, kind backends.Kind, nodes int) *dockercluster.Cluster {
	t.Helper()
	testcluster.RequireDocker(t, kind)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := dockercluster.Start(ctx, dockercluster.Options{Kind: kind, Nodes: nodes, TickTime: 500 * time.Millisecond, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		if l := leftovers(t, c.Name()); len(l) > 0 {
			t.Errorf("left behind after Stop: %v", l)
		}
	})
	return c
}

// reachable reports whether a TCP connection to ep opens within 300 ms.
func reachable(ep string) bool {
	ep = strings.TrimPrefix(ep, "http://")
	conn, err := net.DialTimeout("tcp", ep, 300*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func waitFor(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClusterFaults starts 3-member clusters of both backends and puts
// each fault through them: a partitioned leader is replaced and comes back
// at its address, a paused member stops answering until resumed, a killed
// one is restarted with its data. Stop leaves nothing behind (checked in
// start's cleanup).
func TestClusterFaults(t *testing.T) {
	for _, kind := range []backends.Kind{backends.ZooKeeper, backends.Etcd} {
		t.Run(string(kind), func(t *testing.T) {
			c := start(t, kind, 3)
			eps := c.Endpoints()
			for _, ep := range eps {
				if !strings.Contains(ep, "172.") {
					t.Errorf("endpoint %s: want an address on the cluster's network", ep)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			leader, err := c.Leader(ctx)
			if err != nil {
				t.Fatal(err)
			}

			start := time.Now()
			if err := c.Partition(ctx, leader); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "partitioned leader unreachable", 5*time.Second, func() bool { return !reachable(eps[leader]) })
			waitFor(t, "a new leader among the others", 30*time.Second, func() bool {
				l, err := c.Leader(ctx)
				return err == nil && l != leader
			})
			t.Logf("%s: new leader %v after the partition", kind, time.Since(start).Round(time.Millisecond))
			if err := c.Heal(ctx, leader); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "healed member reachable at its address", 10*time.Second, func() bool { return reachable(eps[leader]) })

			// Freeze a follower: the leader goes on leading. The healed
			// member may still call an election as it rejoins, so first
			// wait until every member answers and one leader has held
			// for a second.
			lead := -1
			waitFor(t, "a settled leader after the heal", 30*time.Second, func() bool {
				l, err := c.Leader(ctx)
				if err != nil || !allReachable(eps) {
					lead = -1
					return false
				}
				if l != lead {
					lead = l
					time.Sleep(time.Second)
					return false
				}
				return true
			})
			follower := (lead + 1) % len(eps)
			if err := c.Pause(follower); err != nil {
				t.Fatal(err)
			}
			if l, err := c.Leader(ctx); err != nil || l != lead {
				t.Fatalf("leader %d (%v) with follower %d paused: want %d still", l, err, follower, lead)
			}
			if err := c.Resume(follower); err != nil {
				t.Fatal(err)
			}

			if err := c.Kill(2); err != nil {
				t.Fatal(err)
			}
			if reachable(eps[2]) {
				t.Fatalf("member 2 still answers after Kill")
			}
			if err := c.Restart(ctx, 2); err != nil {
				t.Fatal(err)
			}
			if !reachable(eps[2]) {
				t.Fatalf("member 2 not back after Restart")
			}
		})
	}
}

// TestStandalone starts one ZooKeeper server and one etcd member.
func TestStandalone(t *testing.T) {
	for _, kind := range []backends.Kind{backends.ZooKeeper, backends.Etcd} {
		t.Run(string(kind), func(t *testing.T) {
			c := start(t, kind, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if l, err := c.Leader(ctx); err != nil || l != 0 {
				t.Fatalf("leader %d, %v: want the only member", l, err)
			}
		})
	}
}

// TestMissingImage: a missing image fails with ErrNoImage before
// anything is created.
func TestMissingImage(t *testing.T) {
	testcluster.RequireDocker(t, backends.Etcd)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := dockercluster.Start(ctx, dockercluster.Options{Kind: backends.Etcd, Image: "zkbench/absent:none"})
	if err == nil || !strings.Contains(err.Error(), "make images") {
		t.Fatalf("start with an absent image: %v: want ErrNoImage naming `make images`", err)
	}
}

// allReachable reports whether every endpoint accepts a connection.
func allReachable(eps []string) bool {
	for _, ep := range eps {
		if !reachable(ep) {
			return false
		}
	}
	return true
}
