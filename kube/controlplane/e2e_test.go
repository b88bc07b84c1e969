package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// zkbenchImage is the image `make images` tags :latest, built from this
// checkout as the zkbench the test runs is.
const zkbenchImage = "zkbench/zkbench:latest"

// e2eClients are each run's clients over its shards: small enough that
// two shards and ZooKeeper share the 2-core node, large enough that the
// naive lock's fan-out (about the waiters) stands clear of the fair's 1.
const e2eClients = 20

// TestShardedRunOnANode runs sharded zkbench runs on a single-node
// Kubernetes made here (control plane, kube-scheduler, a kubelet, a CRI
// containerd, a bridge network, a hostPath volume), against a ZooKeeper on
// the host:
//
//   - `zkbench kube job --shards 2`, applied as kubectl would: the shards'
//     pods run, meet at each case's barrier and write their files to the
//     claim; the merge Job merges them; the fetch pod hands them out. The
//     merged latency counts are the shards' sums, the naive lock's fan-out
//     is about the waiters and the fair lock's 1.
//   - `zkbench kube run --shards 2`: the same from one command, with the
//     results fetched into results/<run-id>/ locally.
//   - `zkbench kube run` whose shard pod is killed mid-run: it fails,
//     naming the shard, and the merge names the missing shard.
//   - `zkbench kube run` interrupted (SIGINT) while the shards run: it
//     exits non-zero and deletes what it created.
func TestShardedRunOnANode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cp, n, zkPort, bin := startNodeCluster(ctx, t)
	endpoint := fmt.Sprintf("--endpoints=%s:%d", podGateway, zkPort)
	runFlags := []string{"--backend=zookeeper", endpoint, "--workload=lock", "--variants=naive,fair",
		"--clients=" + strconv.Itoa(e2eClients), "--duration=4s", "--warmup=1s", "--shards=2",
		"--image=" + zkbenchImage, "--pull-policy=Never", "--cpu=300m", "--memory=128Mi"}

	t.Run("job", func(t *testing.T) {
		ns := restrictedNamespace(ctx, t, cp.cs, "zkbench-e2e-job")
		const run, job = "e2e-job", "zkbench-e2e-job"
		volume := n.hostPathVolume(ctx, t, cp.cs, ns, job+"-results")
		dir := t.TempDir()
		out := runZkbench(ctx, t, bin, "", append([]string{"kube", "job", "--run-id=" + run, "--namespace=" + ns, "-o", dir}, runFlags...)...)
		t.Logf("zkbench kube job:\n%s", out)
		files, _ := filepath.Glob(filepath.Join(dir, job, "*.yaml"))
		if len(files) != 5 {
			t.Fatalf("manifests %v, want 5 files", files)
		}
		rc := cp.cs.CoreV1().RESTClient()
		apply := func(f string) {
			for _, doc := range documents(t, f) {
				create(ctx, t, rc, doc)
			}
		}
		for _, f := range files[:3] { // the config, the claim, the shards' Job
			apply(f)
		}
		if cond := waitJob(ctx, t, cp.cs, ns, job); cond != batchv1.JobComplete {
			t.Fatalf("shards' Job %s: %s, want Complete\n%s", job, cond, podLogs(ctx, cp.cs, ns, "job-name="+job))
		}
		apply(files[3])
		if cond := waitJob(ctx, t, cp.cs, ns, job+"-merge"); cond != batchv1.JobComplete {
			t.Fatalf("merge Job: %s, want Complete\n%s", cond, podLogs(ctx, cp.cs, ns, "job-name="+job+"-merge"))
		}
		apply(files[4])
		fetched := waitPodLog(ctx, t, cp.cs, ns, job+"-fetch")
		local := t.TempDir()
		runShell(ctx, t, fmt.Sprintf("base64 -d | tar -xz -C %s", local), fetched)

		checkMerged(t, readResults(t, findResults(t, local)), shardResults(t, volume, run, 2))
	})

	t.Run("run", func(t *testing.T) {
		ns := restrictedNamespace(ctx, t, cp.cs, "zkbench-e2e-run")
		const run, job = "e2e-run", "zkbench-e2e-run"
		volume := n.hostPathVolume(ctx, t, cp.cs, ns, job+"-results")
		work := t.TempDir()
		out := runZkbench(ctx, t, bin, work, append([]string{"kube", "run", "--run-id=" + run, "--namespace=" + ns,
			"--kubeconfig=" + cp.kubeconfig}, runFlags...)...)
		t.Logf("zkbench kube run:\n%s", out)
		checkMerged(t, readResults(t, filepath.Join(work, "runs", run, "results.json")), shardResults(t, volume, run, 2))
		// It deleted what it made.
		if left := objectsOf(ctx, t, cp.cs, ns, job); left != "" {
			t.Errorf("left after kube run: %s", left)
		}
	})

	t.Run("killed", func(t *testing.T) {
		ns := restrictedNamespace(ctx, t, cp.cs, "zkbench-e2e-kill")
		const run, job = "e2e-kill", "zkbench-e2e-kill"
		n.hostPathVolume(ctx, t, cp.cs, ns, job+"-results")
		work := t.TempDir()
		args := append([]string{"kube", "run", "--run-id=" + run, "--namespace=" + ns, "--kubeconfig=" + cp.kubeconfig}, runFlags...)
		// Shard 0 measures its case to the end without shard 1, then
		// waits --shard-timeout for it at the next case's barrier. Both
		// shards must also meet at the first case's start within it: 30 s
		// against the seconds between two pods' starts on a loaded node.
		args = append(args, "--duration=20s", "--shard-timeout=30s")
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = work
		var buf strings.Builder
		cmd.Stdout, cmd.Stderr = &buf, &buf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill shard 1's pod once both measure: once shard 0 has counted
		// operations, both met at the first case's start (on a loaded
		// node a pod can run for seconds before it gets there, and killed
		// then, neither shard measures anything).
		victim := waitShardRunning(ctx, t, cp.cs, ns, job, 1)
		waitShardMeasuring(ctx, t, cp.cs, ns, waitShardRunning(ctx, t, cp.cs, ns, job, 0))
		if err := cp.cs.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		out := buf.String()
		t.Logf("zkbench kube run, shard 1 killed:\n%s", out)
		if err == nil {
			t.Fatalf("kube run with a killed shard exited 0")
		}
		// Shard 1 is named as gone, shard 0 as missing it at a barrier,
		// and the merge says what became of shard 1: no results file (it
		// was killed outright), or its own, stopped by a signal (the
		// kubelet's SIGTERM reached it first).
		for _, want := range []string{"shard 1: its pod is gone", "shard missing: only 1 of the 2 shards"} {
			if !strings.Contains(out, want) {
				t.Errorf("kube run's output does not say %q", want)
			}
		}
		if !strings.Contains(out, "shard 1 of 2: no /results/"+run+"/shards/1/") && !strings.Contains(out, "shard 1: stopped by a signal") {
			t.Errorf("kube run's output says neither that shard 1 wrote no results nor that it was stopped by a signal")
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		ns := restrictedNamespace(ctx, t, cp.cs, "zkbench-e2e-int")
		const run, job = "e2e-int", "zkbench-e2e-int"
		n.hostPathVolume(ctx, t, cp.cs, ns, job+"-results")
		args := append([]string{"kube", "run", "--run-id=" + run, "--namespace=" + ns, "--kubeconfig=" + cp.kubeconfig}, runFlags...)
		cmd := exec.CommandContext(ctx, bin, append(args, "--duration=60s")...)
		cmd.Dir = t.TempDir()
		var buf strings.Builder
		cmd.Stdout, cmd.Stderr = &buf, &buf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitShardRunning(ctx, t, cp.cs, ns, job, 0)
		// Ctrl-C: kube run deletes what it created, within its 30 s.
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		t.Logf("zkbench kube run, interrupted:\n%s", buf.String())
		if err == nil {
			t.Errorf("an interrupted kube run exited 0")
		}
		if left := objectsOf(ctx, t, cp.cs, ns, job); left != "" {
			t.Errorf("left after Ctrl-C: %s", left)
		}
	})
}

// objectsOf names the run's ConfigMap, claim and Jobs that exist and are
// not being deleted, in namespace ns.
func objectsOf(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, ns, job string) string {
	t.Helper()
	var left []string
	if cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, job+"-config", metav1.GetOptions{}); err == nil && cm.DeletionTimestamp == nil {
		left = append(left, "configmap/"+cm.Name)
	}
	if pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, job+"-results", metav1.GetOptions{}); err == nil && pvc.DeletionTimestamp == nil {
		left = append(left, "persistentvolumeclaim/"+pvc.Name)
	}
	jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		if j.DeletionTimestamp == nil {
			left = append(left, "job/"+j.Name)
		}
	}
	return strings.Join(left, ", ")
}

// shardResults are the results files of run's n shards on the volume at
// host folder volume.
func shardResults(t *testing.T, volume, run string, n int) []resultsFile {
	t.Helper()
	var shards []resultsFile
	for i := range n {
		m, _ := filepath.Glob(filepath.Join(volume, run, "shards", strconv.Itoa(i), "*", "results.json"))
		if len(m) != 1 {
			t.Fatalf("shard %d's results on the volume: %v", i, m)
		}
		shards = append(shards, readResults(t, m[0]))
	}
	return shards
}

// startNodeCluster starts the control plane, a ZooKeeper on the host and
// the node holding zkbenchImage, and builds zkbench: what the tests that
// run pods share. It returns ZooKeeper's port.
func startNodeCluster(ctx context.Context, t *testing.T) (*controlPlane, *node, int, string) {
	t.Helper()
	cp := startControlPlane(ctx, t, binaries(t))
	zkPort := zookeeper(ctx, t)
	return cp, startNode(ctx, t, cp, zkbenchImage), zkPort, zkbench(t)
}

// checkMerged checks a merged results file against its shards': every
// case's latency counts are the shards' sums, the naive lock's
// notifications an acquisition are about the waiters, the fair lock's 1,
// and no session was lost.
func checkMerged(t *testing.T, merged resultsFile, shards []resultsFile) {
	t.Helper()
	if merged.Status != "complete" {
		t.Errorf("merged run: status %s, want complete", merged.Status)
	}
	if merged.MergedShards != len(shards) {
		t.Errorf("merged %d shards, want %d", merged.MergedShards, len(shards))
	}
	if len(merged.Results) != 2 {
		t.Fatalf("merged %d cases, want 2 (naive, fair)", len(merged.Results))
	}
	for _, c := range merged.Results {
		if c.Clients != e2eClients {
			t.Errorf("%s: %d clients, want %d", c.Variant, c.Clients, e2eClients)
		}
		for name, h := range c.Latency {
			var sum int64
			for _, s := range shards {
				for _, sc := range s.Results {
					if sc.Variant == c.Variant {
						sum += sc.Latency[name].Count
					}
				}
			}
			if h.Count != sum || sum == 0 {
				t.Errorf("%s %s: merged count %d, shards' sum %d", c.Variant, name, h.Count, sum)
			}
		}
		fanout := c.PerOp["watch_events"]
		t.Logf("%s: %d clients over %d shards, %.2f notifications an acquisition, latency counts %v", c.Variant, c.Clients, len(shards), fanout, c.Latency)
		switch c.Variant {
		case "naive":
			if fanout < e2eClients/4 {
				t.Errorf("naive: %.2f notifications an acquisition, want about the waiters (%d clients)", fanout, e2eClients)
			}
		case "fair":
			if fanout < 0.9 || fanout > 1.1 {
				t.Errorf("fair: %.2f notifications an acquisition, want 1", fanout)
			}
		}
		if c.SessionsLost != 0 {
			t.Errorf("%s: %d sessions lost", c.Variant, c.SessionsLost)
		}
	}
}

// restrictedNamespace makes a namespace that enforces the restricted Pod
// Security Standard.
func restrictedNamespace(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The pods go before the node stops.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = cs.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{})
		for ctx.Err() == nil {
			pods, err := cs.CoreV1().Pods(name).List(ctx, metav1.ListOptions{})
			if err != nil || len(pods.Items) == 0 {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
	return name
}

// waitJob waits until the Job is Complete or Failed and returns which.
func waitJob(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, ns, name string) batchv1.JobConditionType {
	t.Helper()
	for {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, c := range j.Status.Conditions {
				if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
					return c.Type
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Job %s/%s did not end: %v\n%s", ns, name, ctx.Err(), podLogs(context.Background(), cs, ns, "job-name="+name))
		case <-time.After(time.Second):
		}
	}
}

// waitPodLog waits until the pod succeeded and returns its log.
func waitPodLog(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, ns, name string) string {
	t.Helper()
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			b, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil || p.Status.Phase == corev1.PodFailed {
				t.Fatalf("pod %s: %s, log (%v):\n%s", name, p.Status.Phase, err, b)
			}
			return string(b)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s did not end: %v", name, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// waitShardRunning waits until every shard pod of the Job runs and returns
// the name of shard index's pod.
func waitShardRunning(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, ns, job string, index int) string {
	t.Helper()
	for {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
		if err == nil && len(pods.Items) == 2 {
			name, running := "", 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
				if p.Annotations[batchv1.JobCompletionIndexAnnotation] == strconv.Itoa(index) {
					name = p.Name
				}
			}
			if running == 2 && name != "" {
				return name
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("shards of %s not running: %v", job, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// measured matches a shard's progress line once it has counted operations
// ("  10s of 20s, 1234 ops, ..."), which it does only after every shard
// met at the case's start.
var measured = regexp.MustCompile(`s of [^,\n]*, [1-9][0-9]* ops`)

// waitShardMeasuring waits until pod's log shows it measuring.
func waitShardMeasuring(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, ns, pod string) {
	t.Helper()
	for {
		b, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err == nil && measured.Match(b) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s never counted an operation: %v\n%s", pod, ctx.Err(), b)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// podLogs are the logs of the pods the selector picks, for a failure's
// message.
func podLogs(ctx context.Context, cs *kubernetes.Clientset, ns, selector string) string {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s: %s %s\n", p.Name, p.Status.Phase, p.Status.Message)
		for _, c := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "  container %s: %+v\n", c.Name, c.State)
		}
		log, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		fmt.Fprintf(&b, "%s%v\n", log, err)
	}
	return b.String()
}

func runZkbench(ctx context.Context, t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zkbench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func runShell(ctx context.Context, t *testing.T, script, stdin string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// findResults is the one results.json under dir.
func findResults(t *testing.T, dir string) string {
	t.Helper()
	var found []string
	_ = filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err == nil && e.Name() == "results.json" {
			found = append(found, path)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("results.json under %s: %v", dir, found)
	}
	return found[0]
}
