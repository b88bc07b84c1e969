package workloads

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/results"
)

// disagreements are res's client|server notes.
func disagreements(res results.Result) []string {
	var out []string
	for _, n := range res.Notes {
		if strings.HasPrefix(n, "client and server disagree on ") {
			out = append(out, n)
		}
	}
	return out
}

// TestWitnessModelsOnRealServers: with the backends' witness counts, every
// client|server difference of a lock case on a real server is predicted
// by its documented causes (none is UNEXPLAINED), and the witness was
// counted.
func TestWitnessModelsOnRealServers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b       func(testing.TB) backends.Backend
		variant string
	}{
		{"zookeeper", testcluster.ZooKeeperBackend, "fair"},
		// Every waiter's create finds the naive lock's node there: refused
		// writes, which ZooKeeper's per-namespace count leaves out.
		{"zookeeper", testcluster.ZooKeeperBackend, "naive"},
		{"etcd", testcluster.EtcdBackend, "naive"},
	} {
		t.Run(tc.name+"/"+tc.variant, func(t *testing.T) {
			b := tc.b(t)
			res := runCase(t, context.Background(), b, clusterInfo(t, b), tc.variant, 10,
				results.Config{Ops: 200, Duration: time.Minute})
			notes := disagreements(res)
			t.Logf("witness %+v; client requests %v; server writes %v, watch events %v; notes %q",
				res.Client.Witness, res.Client.Requests, res.Server["zkbench_server_writes"], res.Server["zkbench_server_watch_events"], notes)
			w := res.Client.Witness
			switch {
			case w == nil:
				t.Fatal("no witness counted")
			case tc.name == "zookeeper" && w.PathCreates < res.Client.Requests["ensure_path"]:
				t.Errorf("%d creates of EnsurePath for %d calls", w.PathCreates, res.Client.Requests["ensure_path"])
			case tc.name == "etcd" && (w.WireWatchEvents < res.Client.WatchEvents || w.WatchStreams == 0):
				t.Errorf("%d watch events on the wire, %d delivered, %d streams", w.WireWatchEvents, res.Client.WatchEvents, w.WatchStreams)
			case tc.variant == "naive" && tc.name == "zookeeper" && w.RefusedWrites < res.Ops.Succeeded:
				t.Errorf("%d refused writes over %d acquisitions of 10 clients: each waiter's create is refused", w.RefusedWrites, res.Ops.Succeeded)
			}
			if _, ok := res.Server["zkbench_server_namespace_writes"]; tc.name == "zookeeper" && !ok {
				t.Error("ZooKeeper's per-namespace writes were not scraped: the check against them cannot fail")
			}
			for _, n := range notes {
				if strings.Contains(n, "UNEXPLAINED") {
					t.Errorf("%s: %s", tc.variant, n)
				}
			}
		})
	}
}

// TestForeignWritesAreUnexplained: another client writing to the same
// ZooKeeper, outside zkbench's namespace, during a case: the servers'
// writes exceed what the documented causes predict, and the note says
// UNEXPLAINED, while ZooKeeper's count of the writes below /zkbench still
// agrees with zkbench's own.
func TestForeignWritesAreUnexplained(t *testing.T) {
	b := testcluster.ZooKeeperBackend(t)
	conn, _, err := zk.Connect(testcluster.ZooKeeperEndpoints(t), 10*time.Second,
		zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	foreign := fmt.Sprintf("/zkbench-test-foreign-%d", os.Getpid())
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var writes, errs int
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := conn.Create(foreign, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				errs++
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if err := conn.Delete(foreign, -1); err != nil {
				errs++
			}
			writes += 2
		}
	})
	defer func() {
		if ok, _, _ := conn.Exists(foreign); ok {
			conn.Delete(foreign, -1)
		}
	}()
	// The writer runs from before the case's interval to after it.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if ok, _, err := conn.Exists(foreign); err == nil && ok || time.Now().After(deadline) {
			break
		}
	}
	res := runCase(t, context.Background(), b, clusterInfo(t, b), "fair", 5, results.Config{Ops: 100, Duration: time.Minute})
	stop()
	wg.Wait()
	notes := disagreements(res)
	t.Logf("foreign writes %d (%d errors); witness %+v; server %v; notes %q", writes, errs, res.Client.Witness, res.Server, notes)
	var global, namespace string
	for _, n := range notes {
		switch {
		case strings.HasPrefix(n, "client and server disagree on writes (create"):
			global = n
		case strings.HasPrefix(n, "client and server disagree on writes in zkbench's namespace"):
			namespace = n
		}
	}
	if !strings.Contains(global, "UNEXPLAINED") {
		t.Errorf("the servers' writes with another client's beside them: note %q, want one UNEXPLAINED", global)
	}
	if _, ok := res.Server["zkbench_server_namespace_writes"]; !ok {
		t.Fatal("ZooKeeper's writes below /zkbench were not scraped")
	}
	if namespace != "" {
		t.Errorf("the writes below /zkbench disagree with zkbench's own: %s", namespace)
	}
}
