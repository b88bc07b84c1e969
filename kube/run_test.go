package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var (
	jobsResource = batchv1.SchemeGroupVersion.WithResource("jobs")
	podsResource = corev1.SchemeGroupVersion.WithResource("pods")
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeCluster plays the Job controller and the kubelet for a fake
// clientset, through its tracker (so that the test's own changes are not
// among the client's actions): it ends the shards' Job as failedIndexes
// say ("": Complete), completes the merge, and lets the fetch pod succeed
// with an archive of merged as its log.
type fakeCluster struct {
	t             *testing.T
	client        *fake.Clientset
	spec          Spec
	failedIndexes string
	merged        map[string]string // the merged run's files
	shardLog      []string          // each shard pod's log
	done          map[string]bool
}

func newFakeCluster(t *testing.T, spec Spec, objs ...runtime.Object) *fakeCluster {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spec.Namespace}}
	return &fakeCluster{
		t: t, client: fake.NewClientset(append(objs, ns)...), spec: spec,
		merged: map[string]string{"results.json": `{"id":"lock-16k"}` + "\n"},
		done:   map[string]bool{},
	}
}

// run plays the cluster until ctx is done.
func (f *fakeCluster) run(ctx context.Context) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f.step()
	}
}

func (f *fakeCluster) step() {
	tr, ns := f.client.Tracker(), f.spec.Namespace
	if obj, err := tr.Get(jobsResource, ns, f.spec.Name); err == nil && !f.done["shards"] {
		f.done["shards"] = true
		job := obj.(*batchv1.Job)
		failed, _ := parseIndexes(f.failedIndexes)
		for i := range f.spec.Shards {
			phase := corev1.PodSucceeded
			if slices.Contains(failed, i) {
				phase = corev1.PodFailed
			}
			f.pod(f.spec.Name, fmt.Sprintf("%s-%d-abcde", f.spec.Name, i), fmt.Sprint(i), phase)
		}
		job.Status.Succeeded, job.Status.Failed = int32(f.spec.Shards-len(failed)), int32(len(failed))
		if f.failedIndexes == "" {
			job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}, {Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		} else {
			job.Status.FailedIndexes = &f.failedIndexes
			job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
				Reason: batchv1.JobReasonFailedIndexes, Message: "Job has failed indexes"}}
		}
		f.update(jobsResource, job)
	}
	if obj, err := tr.Get(jobsResource, ns, f.spec.MergeName()); err == nil && !f.done["merge"] {
		f.done["merge"] = true
		f.pod(f.spec.MergeName(), f.spec.MergeName()+"-xyz12", "", corev1.PodSucceeded)
		job := obj.(*batchv1.Job)
		job.Status.Succeeded = 1
		job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		f.update(jobsResource, job)
	}
	if obj, err := tr.Get(podsResource, ns, f.spec.FetchName()); err == nil && !f.done["fetch"] {
		f.done["fetch"] = true
		pod := obj.(*corev1.Pod)
		pod.Status.Phase = corev1.PodSucceeded
		f.update(podsResource, pod)
	}
}

func (f *fakeCluster) pod(job, name, index string, phase corev1.PodPhase) {
	labels := map[string]string{batchv1.JobNameLabel: job}
	if index != "" {
		labels[batchv1.JobCompletionIndexAnnotation] = index
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.spec.Namespace, Labels: labels}, Status: corev1.PodStatus{Phase: phase}}
	if phase == corev1.PodFailed {
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "shard", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
	}
	if err := f.client.Tracker().Create(podsResource, pod, f.spec.Namespace); err != nil {
		f.t.Error(err)
	}
}

func (f *fakeCluster) update(gvr schema.GroupVersionResource, obj runtime.Object) {
	if err := f.client.Tracker().Update(gvr, obj, f.spec.Namespace); err != nil {
		f.t.Error(err)
	}
}

// logs are the pods' logs: the fetch pod's the archive of f.merged, a
// shard's f.shardLog, the merge's its summary.
func (f *fakeCluster) logs(_ context.Context, namespace, pod string, _ *corev1.PodLogOptions) (io.ReadCloser, error) {
	if namespace != f.spec.Namespace {
		return nil, fmt.Errorf("logs of pod/%s in namespace %s", pod, namespace)
	}
	switch {
	case pod == f.spec.FetchName():
		dir := f.t.TempDir()
		writeTree(f.t, dir, f.merged)
		var b bytes.Buffer
		if err := WriteArchive(&b, dir); err != nil {
			return nil, err
		}
		return io.NopCloser(&b), nil
	case strings.HasPrefix(pod, f.spec.MergeName()):
		return io.NopCloser(strings.NewReader("merged run lock-16k: 4 shards\n")), nil
	}
	return io.NopCloser(strings.NewReader(strings.Join(f.shardLog, "\n") + "\n")), nil
}

// start runs f beside a ClusterRun of its spec.
func (f *fakeCluster) start(t *testing.T, out io.Writer) *ClusterRun {
	t.Helper()
	m, err := Build(f.spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return NewClusterRun(f.client, m, WithLogs(f.logs), WithProgress(out), WithPoll(time.Millisecond, time.Hour), WithServer("https://10.0.0.1:6443"))
}

// actions are the client's actions of verb, as verb resource/name.
func actions(client *fake.Clientset, verbs ...string) []string {
	var out []string
	for _, a := range client.Actions() {
		if !slices.Contains(verbs, a.GetVerb()) {
			continue
		}
		name := ""
		switch a := a.(type) {
		case k8stesting.CreateAction:
			name = a.GetObject().(metav1.Object).GetName()
		case k8stesting.DeleteAction:
			name = a.GetName()
			if p := a.GetDeleteOptions().PropagationPolicy; a.GetResource().Resource == "jobs" && (p == nil || *p != metav1.DeletePropagationBackground) {
				name += " (not Background)"
			}
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+name)
	}
	return out
}

func TestClusterRunCreatesInOrder(t *testing.T) {
	spec := testSpec()
	f := newFakeCluster(t, spec)
	var out syncBuffer
	c := f.start(t, &out)
	dir := filepath.Join(t.TempDir(), "runs", "lock-16k")
	fetched, err := c.Run(context.Background(), dir)
	if err != nil || !fetched {
		t.Fatalf("fetched %v, error %v\n%s", fetched, err, out.String())
	}
	want := []string{
		"create configmaps/zkbench-lock-16k-config", "create persistentvolumeclaims/zkbench-lock-16k-results",
		"create jobs/zkbench-lock-16k", "create jobs/zkbench-lock-16k-merge", "create pods/zkbench-lock-16k-fetch",
	}
	if got := actions(f.client, "create"); !slices.Equal(got, want) {
		t.Errorf("created\n %q\nwant\n %q", got, want)
	}
	// What was created is what kube job writes.
	m, _ := Build(spec)
	var written []runtime.Object
	for _, file := range m.Files {
		written = append(written, file.Objects...)
	}
	for _, a := range f.client.Actions() {
		if a, ok := a.(k8stesting.CreateAction); ok {
			i := slices.IndexFunc(written, func(o runtime.Object) bool { return objectOf(o) == objectOf(a.GetObject()) })
			if i < 0 || !apiequality.Semantic.DeepEqual(a.GetObject(), written[i]) {
				t.Errorf("created %s is not as the manifests write it", objectOf(a.GetObject()))
			}
		}
	}
	if got := readTree(t, dir); got["results.json"] != f.merged["results.json"] {
		t.Errorf("fetched %v", got)
	}
	for _, line := range []string{"job/zkbench-lock-16k: Complete after", "pods 4 Succeeded; 4 succeeded, 0 failed", "merged run lock-16k: 4 shards", "fetched /results/lock-16k/merged/lock-16k into " + dir} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("no %q in the output:\n%s", line, out.String())
		}
	}

	// Delete deletes what was created, last first, the Jobs' pods with them.
	if err := c.Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantDeleted := []string{
		"delete pods/zkbench-lock-16k-fetch", "delete jobs/zkbench-lock-16k-merge", "delete jobs/zkbench-lock-16k",
		"delete persistentvolumeclaims/zkbench-lock-16k-results", "delete configmaps/zkbench-lock-16k-config",
	}
	if got := actions(f.client, "delete"); !slices.Equal(got, wantDeleted) {
		t.Errorf("deleted\n %q\nwant\n %q", got, wantDeleted)
	}
	if len(c.Created()) != 0 {
		t.Errorf("left %v", c.Created())
	}
}

// A run whose object exists already is refused before anything is created,
// saying how to delete it.
func TestClusterRunRefusesExisting(t *testing.T) {
	spec := testSpec()
	old := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: spec.MergeName(), Namespace: spec.Namespace}}
	f := newFakeCluster(t, spec, old)
	c := f.start(t, io.Discard)
	_, err := c.Run(context.Background(), t.TempDir())
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "kubectl -n bench delete job/zkbench-lock-16k-merge") ||
		!strings.Contains(err.Error(), "-l app.kubernetes.io/instance=zkbench-lock-16k") {
		t.Errorf("error %v, want ErrExists saying how to delete it", err)
	}
	if got := actions(f.client, "create"); len(got) > 0 {
		t.Errorf("created %q", got)
	}
	if err := c.Delete(context.Background()); err != nil || len(actions(f.client, "delete")) > 0 {
		t.Errorf("deleted %q (%v): nothing was created", actions(f.client, "delete"), err)
	}
}

func TestClusterRunRefusesBeforeCreating(t *testing.T) {
	full := t.TempDir()
	writeTree(t, full, map[string]string{"results.json": "{}"})
	for _, c := range []struct {
		what  string
		edit  func(*Spec, *fakeCluster)
		dir   string
		want  string
		isErr error
	}{
		{"results folder not empty", nil, full, full + " exists and is not empty", nil},
		{"no such namespace", func(s *Spec, f *fakeCluster) { s.Namespace = "elsewhere" }, "", "--namespace elsewhere: no such namespace on https://10.0.0.1:6443", nil},
		{"unreachable", func(s *Spec, f *fakeCluster) {
			f.client.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")
			})
		}, "", "https://10.0.0.1:6443: dial tcp 10.0.0.1:6443: connect: connection refused: is the cluster up", ErrUnreachable},
		{"forbidden to read namespaces", func(s *Spec, f *fakeCluster) {
			f.client.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(corev1.Resource("namespaces"), "bench", errors.New("no"))
			})
			s.Claim = "nfs" // refused below, after the namespace
		}, "", "--claim nfs: no PersistentVolumeClaim nfs in namespace bench", nil},
		{"claim of another mode", func(s *Spec, f *fakeCluster) {
			s.Claim = "rwo"
			f.client.Tracker().Add(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "rwo", Namespace: "bench"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}})
		}, "", "give --access-mode ReadWriteOnce", nil},
	} {
		t.Run(c.what, func(t *testing.T) {
			spec := testSpec()
			f := newFakeCluster(t, spec)
			if c.edit != nil {
				c.edit(&spec, f)
				f.spec = spec
			}
			run := f.start(t, io.Discard)
			dir := cmpOr(c.dir, filepath.Join(t.TempDir(), "run"))
			_, err := run.Run(context.Background(), dir)
			if err == nil || !strings.Contains(err.Error(), c.want) || c.isErr != nil && !errors.Is(err, c.isErr) {
				t.Errorf("error %v, want %q", err, c.want)
			}
			if got := actions(f.client, "create"); len(got) > 0 {
				t.Errorf("created %q", got)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Shards that fail are named, with the end of their logs; the merge and
// fetch still run, and the run ends with ErrShardsFailed.
func TestClusterRunShardsFail(t *testing.T) {
	spec := testSpec()
	f := newFakeCluster(t, spec)
	f.failedIndexes = "1,3"
	for i := 1; i <= 30; i++ {
		f.shardLog = append(f.shardLog, fmt.Sprintf("shard line %d", i))
	}
	var out syncBuffer
	c := f.start(t, &out)
	fetched, err := c.Run(context.Background(), filepath.Join(t.TempDir(), "run"))
	if !errors.Is(err, ErrShardsFailed) || !strings.Contains(err.Error(), "job/zkbench-lock-16k Failed (FailedIndexes), failed shards 1,3") {
		t.Errorf("error %v, want ErrShardsFailed naming shards 1,3", err)
	}
	if !fetched {
		t.Error("not fetched after failed shards")
	}
	o := out.String()
	for _, want := range []string{
		"job/zkbench-lock-16k: Failed after", "pods 2 Succeeded, 2 Failed; 2 succeeded, 2 failed",
		"job/zkbench-lock-16k Failed (FailedIndexes: Job has failed indexes); failed shards: 1,3",
		"shard 1, pod/zkbench-lock-16k-1-abcde (Failed, exit code 1), the last 20 lines of its log:\n    shard line 11\n",
		"shard 3, pod/zkbench-lock-16k-3-abcde", "    shard line 30\n", "created job/zkbench-lock-16k-merge",
	} {
		if !strings.Contains(o, want) {
			t.Errorf("no %q in the output:\n%s", want, o)
		}
	}
	if strings.Contains(o, "shard line 10\n") || strings.Contains(o, "shard 0,") {
		t.Errorf("more than the failed shards' last 20 lines:\n%s", o)
	}
}

// A run with an existing --claim creates no claim and never deletes it.
func TestClusterRunExistingClaim(t *testing.T) {
	spec := testSpec()
	spec.Claim = "nfs-results"
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nfs-results", Namespace: spec.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}}}
	f := newFakeCluster(t, spec, claim)
	c := f.start(t, io.Discard)
	if _, err := c.Run(context.Background(), filepath.Join(t.TempDir(), "run")); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := append(actions(f.client, "create"), actions(f.client, "delete")...)
	for _, a := range got {
		if strings.Contains(a, "persistentvolumeclaims") {
			t.Errorf("%s: the claim is the user's", a)
		}
	}
	if len(got) != 8 {
		t.Errorf("actions %q, want 4 creates and 4 deletes", got)
	}
}

// Cancelling stops the wait; Delete, on a fresh context, then deletes
// what was created.
func TestClusterRunInterrupted(t *testing.T) {
	spec := testSpec()
	f := newFakeCluster(t, spec)
	f.done["shards"] = true // the shards never end
	c := f.start(t, io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(actions(f.client, "create")) < 3 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	_, err := c.Run(ctx, filepath.Join(t.TempDir(), "run"))
	d := time.Since(start)
	t.Logf("stopped %v after start", d)
	if !errors.Is(err, context.Canceled) || d > time.Minute {
		t.Fatalf("error %v after %v, want context.Canceled at once", err, d)
	}
	if want := []string{"configmap/zkbench-lock-16k-config", "persistentvolumeclaim/zkbench-lock-16k-results", "job/zkbench-lock-16k"}; !slices.Equal(c.Created(), want) {
		t.Errorf("created %q, want %q", c.Created(), want)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer dcancel()
	if err := c.Delete(dctx); err != nil {
		t.Fatal(err)
	}
	if got := actions(f.client, "delete"); len(got) != 3 || got[0] != "delete jobs/zkbench-lock-16k" {
		t.Errorf("deleted %q", got)
	}
}

func TestPodPhases(t *testing.T) {
	pending := func(status corev1.PodStatus) corev1.Pod {
		status.Phase = corev1.PodPending
		return corev1.Pod{Status: status}
	}
	waiting := func(reason, msg string) corev1.PodStatus {
		return corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Image: "zkbench/zkbench:v1",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}}
	}
	pods := []corev1.Pod{
		pending(corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu."}}}),
		pending(waiting("ImagePullBackOff", `Back-off pulling image "zkbench/zkbench:v1"`)),
		pending(waiting("ImagePullBackOff", "")),
		pending(waiting("ErrImageNeverPull", "")),
		pending(waiting("CreateContainerConfigError", `secret "etcd-auth" not found`)),
		pending(corev1.PodStatus{}),
		{Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		{},
	}
	want := "pods 7 Pending (1 CreateContainerConfigError: secret \"etcd-auth\" not found; 1 ErrImageNeverPull zkbench/zkbench:v1; " +
		"2 ImagePullBackOff zkbench/zkbench:v1; 1 Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.), 1 Running"
	if got := podPhases(pods); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := podPhases(nil); got != "no pods yet" {
		t.Errorf("no pods: %s", got)
	}
}

func TestParseIndexes(t *testing.T) {
	for s, want := range map[string][]int{"": nil, "1": {1}, "1,3-5,9": {1, 3, 4, 5, 9}} {
		if got, err := parseIndexes(s); err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v %v, want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"x", "5-3", "1-"} {
		if _, err := parseIndexes(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

func TestCheckEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := checkEmptyDir(dir); err != nil {
		t.Error(err)
	}
	if err := checkEmptyDir(filepath.Join(dir, "absent")); err != nil {
		t.Error(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkEmptyDir(dir); err == nil {
		t.Error("a folder with a file: no error")
	}
}
