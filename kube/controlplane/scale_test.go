package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// scaleEnv names the folder TestScaleOnANode keeps its runs in; `make
// bench-kube` sets it to docs/runs.
const scaleEnv = "ZKBENCH_KUBE_SCALE"

// Scale on the node: scaleClients over scaleShards pods.
const (
	scaleClients = 10000
	scaleShards  = 4
)

// TestScaleOnANode is `make bench-kube`, a kept run rather than a test of
// the suite (it takes about 10 minutes and wants a quiet machine): on the
// single-node Kubernetes of TestShardedRunOnANode, the naive and the fair
// lock with 10,000 clients over 4 shard pods (`zkbench kube run`), then the
// same clients from one process on the host against the same ZooKeeper.
// Both runs are kept in $ZKBENCH_KUBE_SCALE as kube-scale-zookeeper and
// kube-scale-zookeeper-1proc; the test checks that every case of both
// completed with no session lost, that the fair lock's notifications an
// acquisition are 1 and the naive lock's about the waiters in both, and
// logs them side by side (docs/kubernetes-clusters.md reads them).
func TestScaleOnANode(t *testing.T) {
	out := os.Getenv(scaleEnv)
	if out == "" {
		t.Skipf("a kept run, not part of the suite: make bench-kube (sets %s to the folder to keep the runs in)", scaleEnv)
	}
	out, err := filepath.Abs(out)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	cp, n, zkPort, bin := startNodeCluster(ctx, t)
	workload := []string{"--backend=zookeeper", "--workload=lock", "--variants=fair,naive", "--hold=0",
		"--clients=" + strconv.Itoa(scaleClients), "--duration=20s"}

	ns := restrictedNamespace(ctx, t, cp.cs, "zkbench-scale")
	const run, job = "kube-scale-zookeeper", "zkbench-kube-scale-zookeeper"
	n.hostPathVolume(ctx, t, cp.cs, ns, job+"-results")
	sharded := runZkbench(ctx, t, bin, "", append([]string{"kube", "run", "--run-id=" + run, "--namespace=" + ns,
		"--kubeconfig=" + cp.kubeconfig, "-o", out, "--image=" + zkbenchImage, "--pull-policy=Never",
		fmt.Sprintf("--endpoints=%s:%d", podGateway, zkPort), "--shards=" + strconv.Itoa(scaleShards),
		"--cpu=400m"}, workload...)...)
	t.Logf("zkbench kube run, %d clients over %d pods:\n%s", scaleClients, scaleShards, sharded)

	one := runZkbench(ctx, t, bin, "", append([]string{"run", "--run-id=" + run + "-1proc", "-o", out,
		fmt.Sprintf("--endpoints=127.0.0.1:%d", zkPort)}, workload...)...)
	t.Logf("zkbench run, %d clients from one process:\n%s", scaleClients, one)

	for _, id := range []string{run, run + "-1proc"} {
		r := readResults(t, filepath.Join(out, id, "results.json"))
		if r.Status != "complete" {
			t.Errorf("%s: status %s", id, r.Status)
		}
		for _, c := range r.Results {
			fanout := c.PerOp["watch_events"]
			t.Logf("%s %s: %d clients, %.2f notifications an acquisition, %d sessions lost", id, c.Variant, c.Clients, fanout, c.SessionsLost)
			if c.SessionsLost != 0 {
				t.Errorf("%s %s: %d sessions lost", id, c.Variant, c.SessionsLost)
			}
			if c.Variant == "fair" && (fanout < 0.9 || fanout > 1.1) {
				t.Errorf("%s fair: %.2f notifications an acquisition, want 1", id, fanout)
			}
			if c.Variant == "naive" && fanout < scaleClients/4 {
				t.Errorf("%s naive: %.2f notifications an acquisition, want about the waiters", id, fanout)
			}
		}
	}
}
