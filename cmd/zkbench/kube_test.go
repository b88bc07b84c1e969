package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/kube"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runner"
)

func TestKubeJobWritesManifests(t *testing.T) {
	dir := t.TempDir()
	out, err := execute(t, "kube", "job", "--backend", "zookeeper", "--endpoints", "zk-0.zk:2181,zk-1.zk:2181",
		"--shards", "3", "--clients", "300", "--variants", "naive,fair", "--duration", "20s", "--hold", "1ms",
		"--run-id", "lock-300", "--namespace", "bench", "--image", "zkbench/zkbench:test", "-o", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	jobDir := filepath.Join(dir, "zkbench-lock-300")
	b, err := os.ReadFile(filepath.Join(jobDir, "20-shards-job.yaml"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(b, &job); err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	want := []string{"run", "--spec=" + kube.SpecFile, "--output=/results/lock-300/shards/$(JOB_COMPLETION_INDEX)", "--no-plots"}
	if strings.Join(c.Args, " ") != strings.Join(want, " ") {
		t.Errorf("args %q\nwant %q", c.Args, want)
	}
	// The pods run the spec the flags describe: sharded, shard 0's index
	// and no output (each pod gives its own), no secret.
	spec := readRunSpec(t, jobDir)
	cfg := spec.Config
	if cfg.Backend != "zookeeper" || !slices.Equal(cfg.Clients, []int{300}) || cfg.Duration != 20*time.Second || cfg.Hold != time.Millisecond ||
		!slices.Equal(cfg.Variants, []string{"naive", "fair"}) || !slices.Equal(cfg.Servers.Endpoints, []string{"zk-0.zk:2181", "zk-1.zk:2181"}) ||
		spec.RunID != "lock-300" || spec.Output != "" || spec.Shard == nil || spec.Shard.Count != 3 || spec.Shard.Index != 0 {
		t.Errorf("the pods' spec: %+v", spec)
	}
	if c.Image != "zkbench/zkbench:test" || *job.Spec.Completions != 3 || *job.Spec.Parallelism != 3 || job.Namespace != "bench" {
		t.Errorf("job %s, image %s, completions %d, parallelism %d", job.Namespace, c.Image, *job.Spec.Completions, *job.Spec.Parallelism)
	}
	// 2 cases of 20 s, a 500 ms warm-up, two 2-minute barrier bounds and a
	// minute each, and 10 minutes to schedule.
	if got, want := *job.Spec.ActiveDeadlineSeconds, int64((10*time.Minute+2*(20*time.Second+500*time.Millisecond+5*time.Minute))/time.Second); got != want {
		t.Errorf("activeDeadlineSeconds %d, want %d", got, want)
	}
	if mem := c.Resources.Requests.Memory().String(); mem != "306Mi" { // 256Mi + 100 clients x 512Ki
		t.Errorf("memory request %s, want 306Mi", mem)
	}
	for _, f := range []string{"00-config.yaml", "10-results-claim.yaml", "30-merge-job.yaml", "40-fetch-pod.yaml"} {
		if _, err := os.Stat(filepath.Join(jobDir, f)); err != nil {
			t.Error(err)
		}
	}
	// The printed waits end on Failed too, and say where to look then.
	for _, want := range []string{kube.WaitCommand("bench", "zkbench-lock-300", 10), kube.WaitCommand("bench", "zkbench-lock-300-merge", 5),
		"{.status.failedIndexes}", "kubectl -n bench logs -l batch.kubernetes.io/job-name=zkbench-lock-300,batch.kubernetes.io/job-completion-index=I",
		"kubectl -n bench wait --for=jsonpath='{.status.phase}'=Succeeded --timeout=5m pod/zkbench-lock-300-fetch && mkdir -p runs/lock-300 && kubectl -n bench logs pod/zkbench-lock-300-fetch | base64 -d | tar -xz -C runs/lock-300"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the next steps:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--for=condition=complete") {
		t.Errorf("a wait that does not end on Failed:\n%s", out)
	}
	if strings.Contains(out, "kubectl cp") || strings.Contains(out, "-n bench cp") {
		t.Errorf("kubectl cp needs a tar the zkbench image has not:\n%s", out)
	}
}

// The pods run the image `make images` builds: one name in
// docker/images.sh, cluster/docker and here.
func TestKubeJobDefaultImage(t *testing.T) {
	script, err := os.ReadFile("../../docker/images.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^zkbench\(\) \{\n\tlocal name=(\S+)`).FindSubmatch(script)
	if m == nil {
		t.Fatal("docker/images.sh: no zkbench image name found")
	}
	name := string(m[1])
	defer func(v string) { version = v }(version)
	for v, want := range map[string]string{"dev": name + ":latest", "v1.4.0-3-gabc": name + ":v1.4.0-3-gabc"} {
		version = v
		if got := defaultImage(); got != want {
			t.Errorf("version %s: image %s, want %s", v, got, want)
		}
	}
}

func TestKubeJobRefuses(t *testing.T) {
	base := []string{"kube", "job", "--endpoints", "zk-0.zk:2181", "--backend", "zookeeper", "--clients", "100", "-o", t.TempDir()}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"kube", "job", "--shards", "2", "--clients", "100"}, "--endpoints: a Job's pods reach a running cluster"},
		{append(base, "--shards", "0"), "--shards 0: give the number of shards"},
		{base, "--shards 0: give the number of shards"},
		{append(base, "--shards", "2", "--cluster", "local"), "--cluster: a Job's pods cannot share servers"},
		{append(base, "--shards", "2", "--shard-index", "1"), "JOB_COMPLETION_INDEX"},
		{append(base, "--shards", "2", "--variants", "bogus"), `unknown variant "bogus"`},
		{append(base, "--shards", "2", "--fence", "on"), "--fence on"},
		{append(base, "--shards", "2", "--workload", "barrier"), "only the lock workload runs sharded"},
		{append(base, "--shards", "200"), "fewer clients than --shards"},
		{append(base, "--shards", "2", "--lease-ttl", "5s"), "--lease-ttl: only etcd reads it"},
		{append(base, "--shards", "2", "--run-id", "a/b"), "--run-id"},
		{append(base, "--shards", "2", "--name", "Bad_Name"), "not a DNS label"},
		{append(base, "--shards", "2", "--memory", "lots"), "--memory"},
		{[]string{"kube", "job", "--endpoints", "e:2379", "--shards", "2", "--password", "x"}, "--password-secret"},
		{[]string{"kube", "job", "--endpoints", "e:2379", "--shards", "2", "--cacert", "ca.pem"}, "--tls-secret"},
		{append(base, "--shards", "2", "--digest", "u:p"), "--digest: a ZooKeeper password in a manifest"},
		{append(base, "--shards", "2", "--access-mode", "ReadWriteOncePod"), "only one pod can mount the claim"},
		{append(base, "--shards", "2", "--access-mode", "rwx"), `--access-mode "rwx": want ReadWriteMany`},
		{append(base, "--shards", "2", "--spec", "run.json"), "--spec: kube job writes the pods' spec"},
		{append(base, "--shards", "2", "--format", "csv"), "unknown flag: --format"},
	} {
		start := time.Now()
		out, err := execute(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q\n%s", c.args, err, c.want, out)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%q: refused after %v", c.args, d)
		}
	}
}

func TestKubeJobSecrets(t *testing.T) {
	dir := t.TempDir()
	out, err := execute(t, "kube", "job", "--endpoints", "etcd-0.etcd:2379", "--shards", "2", "--clients", "20",
		"--run-id", "etcd-20", "--user", "bench", "--password-secret", "etcd-auth:password",
		"--cacert", kube.TLSMount+"/ca.pem", "--tls-secret", "etcd-tls", "-o", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	jobDir := filepath.Join(dir, "zkbench-etcd-20")
	b, err := os.ReadFile(filepath.Join(jobDir, "20-shards-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"secretName: etcd-tls", "name: ZKBENCH_ETCD_PASSWORD", "key: password"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %q in the Job:\n%s", want, b)
		}
	}
	if srv := readRunSpec(t, jobDir).Config.Servers; srv.Username != "bench" || srv.TLS.CAFile != kube.TLSMount+"/ca.pem" {
		t.Errorf("the pods' servers: %+v", srv)
	}
	// No password anywhere in the manifests, not even the placeholder the
	// check used.
	files, err := os.ReadDir(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(jobDir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "--password") || strings.Contains(string(b), "from --password-secret") {
			t.Errorf("a password in %s:\n%s", f.Name(), b)
		}
	}
}

// TestKubeJobCommandsRun runs what the Job's pods and the merge Job's pod
// would run, as processes on this machine against a real etcd: each shard's
// command and arguments as written in the manifests, with
// JOB_COMPLETION_INDEX set and $(JOB_COMPLETION_INDEX) expanded as the
// kubelet does and /results moved to a temporary folder; then the merge's.
// The shards meet at their barriers and the merge finds every file.
func TestKubeJobCommandsRun(t *testing.T) {
	const shards = 2
	dir := t.TempDir()
	out, err := execute(t, "kube", "job", "--endpoints", strings.Join(testcluster.EtcdEndpoints(t), ","),
		"--shards", fmt.Sprint(shards), "--clients", "8", "--variants", "naive,fair", "--duration", "1s", "--warmup", "200ms",
		"--run-id", "kube-cmds", "-o", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	jobs := map[string]*batchv1.Job{}
	for _, f := range []string{"20-shards-job.yaml", "30-merge-job.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, "zkbench-kube-cmds", f))
		if err != nil {
			t.Fatal(err)
		}
		var job batchv1.Job
		if err := yaml.UnmarshalStrict(b, &job); err != nil {
			t.Fatal(err)
		}
		jobs[f] = &job
	}
	// The volumes as the pods see them: the results claim a folder, the
	// ConfigMap's keys its files.
	root, config := t.TempDir(), t.TempDir()
	writeConfigMap(t, filepath.Join(dir, "zkbench-kube-cmds"), config)
	local := func(args []string, index string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			a = strings.ReplaceAll(a, "$("+kube.IndexEnv+")", index)
			a = strings.ReplaceAll(a, kube.ConfigMount+"/", config+"/")
			out[i] = strings.ReplaceAll(a, kube.ResultsMount+"/", root+"/")
		}
		return out
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shard := jobs["20-shards-job.yaml"].Spec.Template.Spec.Containers[0]
	if shard.Command[0] != kube.Binary {
		t.Fatalf("shards run %q", shard.Command)
	}
	errs := make(chan error, shards)
	for i := range shards {
		// As the kubelet: $(JOB_COMPLETION_INDEX) expanded from the variable,
		// which zkbench reads its --shard-index from.
		cmd := exec.CommandContext(ctx, os.Args[0], local(shard.Args, fmt.Sprint(i))...)
		cmd.WaitDelay = 10 * time.Second
		cmd.Env = append(os.Environ(), "ZKBENCH_TEST_MAIN=1", kube.IndexEnv+"="+fmt.Sprint(i))
		go func() {
			b, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("shard %d: %v\n%s", i, err, b)
			}
			errs <- err
		}()
	}
	for range shards {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	merge := jobs["30-merge-job.yaml"].Spec.Template.Spec.Containers[0]
	mout, stderr, err := zkbench(t, append(local(merge.Args, ""), "--no-plots")...)
	if err != nil {
		t.Fatalf("merge: %v\n%s%s", err, mout, stderr)
	}
	run, err := results.ReadFile(filepath.Join(root, "kube-cmds", "merged", "kube-cmds", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != results.StatusComplete || run.MergedShards != shards || len(run.Results) != 2 || run.Config.Params["shards"] != "2" {
		t.Errorf("merged: status %s (%s), %d shards, %d results, params %v", run.Status, run.StatusDetail, run.MergedShards, len(run.Results), run.Config.Params)
	}

	// merge --shards-dir refuses a wrong count, a missing shard, and files
	// given beside it.
	shardsDir := filepath.Join(root, "kube-cmds", "shards")
	mdir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--shards-dir", shardsDir, "--shards", "3"}, "shard 0 of 2, want shard 0 of 3"},
		{[]string{"--shards-dir", shardsDir, "--shards", "1"}, "shard 0 of 2, want shard 0 of 1"},
		{[]string{"--shards-dir", shardsDir}, "give --shards S"},
		{[]string{"--shards-dir", shardsDir, "--shards", "-2"}, "--shards -2: want the run's shard count, 1 or more"},
		{[]string{"--shards-dir", shardsDir, "--shards", "2", filepath.Join(shardsDir, "0")}, "not both"},
		{[]string{"--shards", "2", filepath.Join(shardsDir, "0", "kube-cmds")}, "--shards: only with --shards-dir"},
		{[]string{"--shards-dir", filepath.Join(root, "nowhere"), "--shards", "2"}, "not a folder"},
	} {
		if _, _, err := zkbench(t, append([]string{"merge", "--no-plots", "-o", mdir}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("merge %q: error %v, want %q", c.args, err, c.want)
		}
	}
	if err := os.Remove(filepath.Join(shardsDir, "1", "kube-cmds", "results.json")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := zkbench(t, "merge", "--no-plots", "-o", mdir, "--shards-dir", shardsDir, "--shards", "2"); err == nil || !strings.Contains(err.Error(), "shard 1 of 2: no "+filepath.Join(shardsDir, "1")+"/<run-id>/results.json") {
		t.Errorf("merge without shard 1's file: %v", err)
	}
}

// readConfigMap decodes the ConfigMap of the manifests in jobDir.
func readConfigMap(t *testing.T, jobDir string) *corev1.ConfigMap {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(jobDir, "00-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(b, &cm); err != nil {
		t.Fatal(err)
	}
	return &cm
}

// readRunSpec is the run spec the manifests in jobDir give the pods.
func readRunSpec(t *testing.T, jobDir string) runner.Spec {
	t.Helper()
	spec, err := runner.ReadSpec(strings.NewReader(readConfigMap(t, jobDir).Data[kube.SpecKey]))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// writeConfigMap writes each key of the ConfigMap in jobDir as a file in
// dir, as the kubelet mounts a ConfigMap volume.
func writeConfigMap(t *testing.T, jobDir, dir string) {
	t.Helper()
	for k, v := range readConfigMap(t, jobDir).Data {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// kube archive writes what kube.ReadArchive (and base64 -d | tar -xz)
// reads back, and fails without writing on a missing or empty folder.
func TestKubeArchiveCommand(t *testing.T) {
	src := t.TempDir()
	b, err := os.ReadFile(testresults.Path("lock-zookeeper.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(src, "plots"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{results.FileName: b, "plots/lock-fanout.svg": []byte("<svg/>")} {
		if err := os.WriteFile(filepath.Join(src, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, err := zkbench(t, "kube", "archive", src)
	if err != nil || stderr != "" {
		t.Fatalf("%v\n%s", err, stderr)
	}
	dst := t.TempDir()
	if err := kube.ReadArchive(strings.NewReader(out), dst); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dst, results.FileName)); err != nil || !bytes.Equal(got, b) {
		t.Errorf("read back %d bytes (%v), want %d", len(got), err, len(b))
	}
	if _, err := os.Stat(filepath.Join(dst, "plots", "lock-fanout.svg")); err != nil {
		t.Error(err)
	}
	for _, dir := range []string{filepath.Join(src, "absent"), t.TempDir()} {
		if out, _, err := zkbench(t, "kube", "archive", dir); err == nil || out != "" {
			t.Errorf("archive %s: error %v, wrote %d bytes", dir, err, len(out))
		}
	}
}

// fakeKubeCluster is a fake clientset whose Jobs read back ended (the
// shards' as shards says: Complete, Failed with index 1, or running),
// whose fetch pod reads back Succeeded and whose pods' log is an archive of
// results file.
func fakeKubeCluster(t *testing.T, ns, resultsFile string, shards batchv1.JobConditionType) *fake.Clientset {
	t.Helper()
	src := t.TempDir()
	b, err := os.ReadFile(resultsFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, results.FileName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := kube.WriteArchive(&archive, src); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	tracked := func(a k8stesting.Action) (runtime.Object, error) {
		return client.Tracker().Get(a.GetResource(), a.GetNamespace(), a.(k8stesting.GetAction).GetName())
	}
	client.PrependReactor("get", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := tracked(a)
		if err != nil {
			return true, nil, err
		}
		job := obj.(*batchv1.Job).DeepCopy()
		end := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
		if job.Labels[kube.LabelComponent] == "shard" {
			switch shards {
			case batchv1.JobFailed:
				end = batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonFailedIndexes}
				failed := "1"
				job.Status.FailedIndexes = &failed
			case "":
				return true, job, nil
			}
		}
		job.Status.Conditions = append(job.Status.Conditions, end)
		return true, job, nil
	})
	client.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "log" {
			return true, &runtime.Unknown{Raw: archive.Bytes()}, nil
		}
		obj, err := tracked(a)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		pod.Status.Phase = corev1.PodSucceeded
		return true, pod, nil
	})
	return client
}

// writeKubeconfig writes a kubeconfig of one context, ctx, whose server is
// server and namespace namespace.
func writeKubeconfig(t *testing.T, server, namespace string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ctx, context: {cluster: c, user: u, namespace: %q}}]
current-context: ctx
`, server, namespace)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// kubeRunArgs are the flags the Kubernetes test gives kube run.
func kubeRunArgs(kubeconfig, out string, more ...string) []string {
	return append([]string{"--kubeconfig", kubeconfig, "--image", "zkbench/zkbench:test", "--shards", "2",
		"--backend", "zookeeper", "--endpoints", "zk-0.zk:2181", "--clients", "20", "--duration", "5s",
		"--variants", "naive,fair", "--workload", "lock", "--run-id", "kube-run", "-o", out}, more...)
}

// kube run against a fake clientset: the objects kube job writes are
// created in the kubeconfig's namespace, the fetched run is summarized and
// plotted as zkbench merge does, and what was created is deleted (not with
// --keep); failed shards make it exit non-zero after all that.
func TestKubeRunFetchesAndCleansUp(t *testing.T) {
	kubeconfig := writeKubeconfig(t, "https://127.0.0.1:6443", "bench")
	for _, c := range []struct {
		name       string
		args       []string
		failShards bool
		deleted    int
	}{
		{"complete", nil, false, 5},
		{"keep", []string{"--keep", "--no-plots"}, false, 0},
		{"shards failed", []string{"--no-plots"}, true, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			shards := batchv1.JobComplete
			if c.failShards {
				shards = batchv1.JobFailed
			}
			client := fakeKubeCluster(t, "bench", testresults.Path("lock-zookeeper.json"), shards)
			cmd := newKubeRunCmdWith(func(cfg *rest.Config) (kubernetes.Interface, error) {
				if cfg.Host != "https://127.0.0.1:6443" {
					t.Errorf("client of %s", cfg.Host)
				}
				return client, nil
			})
			var stdout, stderr bytes.Buffer
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			out := t.TempDir()
			cmd.SetArgs(kubeRunArgs(kubeconfig, out, c.args...))
			cmd.SetContext(context.Background())
			err := cmd.Execute()
			if c.failShards != (err != nil) || c.failShards && !errors.Is(err, kube.ErrShardsFailed) {
				t.Fatalf("error %v\n%s%s", err, stderr.String(), stdout.String())
			}
			var created, deleted []string
			for _, a := range client.Actions() {
				switch a := a.(type) {
				case k8stesting.CreateAction:
					created = append(created, a.GetNamespace()+"/"+a.GetObject().(metav1.Object).GetName())
				case k8stesting.DeleteAction:
					deleted = append(deleted, a.GetName())
				}
			}
			want := []string{"bench/zkbench-kube-run-config", "bench/zkbench-kube-run-results", "bench/zkbench-kube-run",
				"bench/zkbench-kube-run-merge", "bench/zkbench-kube-run-fetch"}
			if !slices.Equal(created, want) || len(deleted) != c.deleted {
				t.Errorf("created %q, deleted %q; want %q, %d deleted", created, deleted, want, c.deleted)
			}
			path := filepath.Join(out, "kube-run", results.FileName)
			if _, err := results.ReadFile(path); err != nil {
				t.Fatal(err)
			}
			wantOut := []string{"results: " + path + " (merged from"}
			if c.name == "complete" {
				wantOut = append(wantOut, "plots: ")
			}
			for _, s := range wantOut {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("no %q in stdout:\n%s", s, stdout.String())
				}
			}
			wantErr := []string{"namespace bench on https://127.0.0.1:6443 (context ctx)", "created job/zkbench-kube-run-merge"}
			switch {
			case c.failShards:
				wantErr = append(wantErr, "failed shards: 1")
			case c.deleted == 0:
				wantErr = append(wantErr, "kubectl -n bench delete pod/zkbench-kube-run-fetch job/zkbench-kube-run-merge")
			default:
				wantErr = append(wantErr, "deleted configmap/zkbench-kube-run-config")
			}
			for _, s := range wantErr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("no %q in stderr:\n%s", s, stderr.String())
				}
			}
		})
	}
}

// Ctrl-C (here: the command's context cancelled) stops the wait and
// deletes what was created, saying what.
func TestKubeRunInterrupted(t *testing.T) {
	kubeconfig := writeKubeconfig(t, "https://127.0.0.1:6443", "bench")
	client := fakeKubeCluster(t, "bench", testresults.Path("lock-zookeeper.json"), "")
	cmd := newKubeRunCmdWith(func(*rest.Config) (kubernetes.Interface, error) { return client, nil })
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(kubeRunArgs(kubeconfig, t.TempDir()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		time.AfterFunc(50*time.Millisecond, cancel) // while the shards run
		return false, nil, nil
	})
	cmd.SetContext(ctx)
	start := time.Now()
	err := cmd.Execute()
	d := time.Since(start)
	t.Logf("stopped %v after start, the cancel 50 ms after the Job's create", d)
	if !errors.Is(err, context.Canceled) || d > time.Minute {
		t.Fatalf("error %v after %v, want context.Canceled at once", err, d)
	}
	var deleted []string
	for _, a := range client.Actions() {
		if a, ok := a.(k8stesting.DeleteAction); ok {
			deleted = append(deleted, a.GetResource().Resource+"/"+a.GetName())
		}
	}
	if want := []string{"jobs/zkbench-kube-run", "persistentvolumeclaims/zkbench-kube-run-results", "configmaps/zkbench-kube-run-config"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %q, want %q", deleted, want)
	}
	if want := "interrupted: deleting configmap/zkbench-kube-run-config, persistentvolumeclaim/zkbench-kube-run-results, job/zkbench-kube-run"; !strings.Contains(stderr.String(), want) {
		t.Errorf("no %q in stderr:\n%s", want, stderr.String())
	}
}

// kube run refuses, within seconds and before creating anything, what kube
// job refuses, a results folder in use, no kubeconfig, and a cluster that
// does not answer, naming its server.
func TestKubeRunRefuses(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	unreachable := writeKubeconfig(t, "https://127.0.0.1:1", "bench")
	used := t.TempDir()
	if err := os.MkdirAll(filepath.Join(used, "kube-run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(used, "kube-run", results.FileName), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{kubeRunArgs(unreachable, t.TempDir()), "kube: cluster not reachable: https://127.0.0.1:1 (context ctx)"},
		{kubeRunArgs(unreachable, used), filepath.Join(used, "kube-run") + " exists and is not empty"},
		{kubeRunArgs(unreachable, t.TempDir(), "--context", "other"), `context "other" does not exist`},
		{kubeRunArgs("", t.TempDir()), "no kubeconfig: give --kubeconfig PATH"},
		{kubeRunArgs(unreachable, t.TempDir(), "--shards", "0"), "--shards 0: give the number of shards"},
		{kubeRunArgs(unreachable, t.TempDir(), "--cluster", "local"), "--cluster: a Job's pods cannot share servers"},
		{kubeRunArgs(unreachable, t.TempDir(), "--fetch-image", "busybox"), "unknown flag: --fetch-image"},
	} {
		start := time.Now()
		out, stderr, err := zkbench(t, append([]string{"kube", "run"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q\n%s%s", c.args, err, c.want, out, stderr)
		}
		d := time.Since(start)
		t.Logf("%q: refused after %v", c.args, d)
		if d > time.Minute {
			t.Errorf("%q: refused after %v", c.args, d)
		}
	}
}
