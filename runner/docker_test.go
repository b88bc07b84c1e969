package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/zkbench/zkbench/backends"
	dockercluster "github.com/zkbench/zkbench/cluster/docker"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/results"
)

// TestDockerNodes: --cluster docker starts 1 or 3 servers of either
// backend, and refuses other counts before anything starts.
func TestDockerNodes(t *testing.T) {
	for _, kind := range []backends.Kind{backends.ZooKeeper, backends.Etcd} {
		for _, n := range []int{0, 2, 5} {
			cfg := sweep()
			cfg.Backend, cfg.Servers.Mode, cfg.Servers.Nodes = kind, Docker, n
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "--cluster docker starts 1 or 3") {
				t.Errorf("%s, --nodes %d: %v, want a refusal", kind, n, err)
			}
		}
		cfg := sweep()
		cfg.Backend, cfg.Servers.Mode, cfg.Servers.Nodes = kind, Docker, 3
		if _, err := New(cfg); err != nil {
			t.Errorf("%s, --nodes 3: %v", kind, err)
		}
	}
}

// TestRunDocker runs a short lock sweep on 3 servers in containers with
// the leader partitioned mid-case, on both backends: the clients reach
// the members at their container addresses, the fault fires and is undone,
// no lock is held twice, and no container of the run is left when it
// returns.
//
// On ZooKeeper the leader is cut off for longer than the session timeout,
// and the ensemble keeps what a 3-node ensemble promises: the two members
// that still reach each other elect a leader, every session whose client
// reaches them survives (the ensemble's timing follows the session timeout:
// cluster/zookeeper.TimingFor), and grants go on after the heal. With
// ZooKeeper's default timing the same partition ends every session at the
// heal (docs/docker.md).
func TestRunDocker(t *testing.T) {
	for _, kind := range []backends.Kind{backends.ZooKeeper, backends.Etcd} {
		t.Run(string(kind), func(t *testing.T) {
			testcluster.RequireDocker(t, kind)
			cfg := sweep()
			cfg.Backend, cfg.Servers.Mode, cfg.Servers.Nodes = kind, Docker, 3
			cfg.Clients, cfg.Duration = []int{3}, 3*time.Second
			partition := "partition-leader@500ms+1s"
			if kind == backends.ZooKeeper {
				// 6 s cut, 4 s sessions: the leader is given up after 2 s.
				cfg.Duration, partition = 14*time.Second, "partition-leader@1s+6s"
			}
			r, err := New(cfg, WithFaults(faultsOf(t, partition)...))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			run, err := r.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if run.ClusterMode != string(Docker) || len(run.Cluster.Members) != 3 {
				t.Fatalf("cluster %s %+v: want 3 members in docker", run.ClusterMode, run.Cluster)
			}
			var addrs []string
			for _, m := range run.Cluster.Members {
				host := strings.TrimPrefix(m.Endpoint, "http://")
				host = host[:strings.LastIndex(host, ":")]
				if !strings.HasPrefix(host, "172.") {
					t.Errorf("member %s: want a container address", m.Endpoint)
				}
				addrs = append(addrs, host)
			}
			res := run.Results[0]
			if res.Faults["partition-leader"] != 1 || res.Faults["undone"] != 1 {
				t.Errorf("faults %v: want the partition fired and undone", res.Faults)
			}
			if res.Safety.Checked == 0 || res.Safety.Violations != 0 {
				t.Errorf("safety %+v: want checked and no lock held twice", res.Safety)
			}
			if kind == backends.ZooKeeper {
				if res.SessionsLost != 0 {
					t.Errorf("%d sessions lost to a leader partition: the majority should have elected a leader and kept them; timeline:\n%v",
						res.SessionsLost, run.Timeline)
				}
				if n := grantsAfter(t, run, "end partition-leader"); n == 0 {
					t.Errorf("no grant after the heal (series %v, timeline %v)", res.Series.Counts, run.Timeline)
				}
			}
			if left := containersAt(t, addrs); len(left) > 0 {
				t.Errorf("left behind by the run: %v", left)
			}
		})
	}
}

// grantsAfter counts the first case's grants in the series intervals that
// begin after the run's timeline event what.
func grantsAfter(t *testing.T, run *results.Run, what string) int64 {
	t.Helper()
	var at time.Duration = -1
	for _, e := range run.Timeline {
		if strings.HasPrefix(e.What, what) {
			at = e.At
		}
	}
	res := run.Results[0]
	if at < 0 || res.Started.IsZero() || res.Series.Interval <= 0 {
		t.Fatalf("no %q in the timeline, or no series: %v", what, run.Timeline)
	}
	from := at - res.Started.Sub(run.StartedAt)
	var n int64
	for i, c := range res.Series.Counts {
		if time.Duration(i)*res.Series.Interval >= from {
			n += c
		}
	}
	return n
}

// containersAt lists the zkbench containers still holding one of addrs.
func containersAt(t *testing.T, addrs []string) []string {
	t.Helper()
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", dockercluster.LabelCluster)})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs.Items {
		if c.NetworkSettings == nil {
			continue
		}
		for _, n := range c.NetworkSettings.Networks {
			for _, a := range addrs {
				if n != nil && n.IPAddress.String() == a {
					out = append(out, strings.Join(c.Names, ","))
				}
			}
		}
	}
	return out
}

// TestDockerLeftoversWithoutEngine: on a machine without Docker (no socket
// where DOCKER_HOST points) a run asked to remove Docker leftovers says
// nothing of Docker and runs. That the step then asks no engine (and so
// never waits out a probe) is cluster/docker's TestRemoveLeftoversNoEngine,
// by the error it returns rather than by a time.
func TestDockerLeftoversWithoutEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+t.TempDir()+"/docker.sock")
	var progress strings.Builder
	r, err := New(sweep(), WithDockerLeftovers(), WithProgress(&progress, false))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r.status = newLiveStatus(&progress, false)
	r.removeDockerLeftovers(ctx)
	r.status.stop()
	run, err := r.Run(ctx)
	if err != nil || run.Status != results.StatusComplete {
		t.Fatalf("run: %v", err)
	}
	if strings.Contains(strings.ToLower(progress.String()), "docker") {
		t.Errorf("progress speaks of Docker without an engine:\n%s", progress.String())
	}
}
