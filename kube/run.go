package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Errors of ClusterRun, wrapped with what to do.
var (
	// ErrUnreachable: the cluster did not answer (in ReachTimeout).
	ErrUnreachable = errors.New("kube: cluster not reachable")
	// ErrExists: an object the run would create exists already.
	ErrExists = errors.New("kube: object exists")
	// ErrShardsFailed: the shards' Job ended Failed.
	ErrShardsFailed = errors.New("kube: shards failed")
	// ErrMergeFailed: the merge Job ended Failed.
	ErrMergeFailed = errors.New("kube: merge failed")
	// ErrFetchFailed: the fetch pod ended Failed.
	ErrFetchFailed = errors.New("kube: fetch failed")
)

// LogFunc opens the log of a pod's container as opts say (client-go's
// GetLogs(...).Stream by default).
type LogFunc func(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error)

// ClusterRun runs a sharded run's manifests on a cluster (`zkbench kube
// run`): it creates the objects `zkbench kube job` writes, in their order,
// waits for each step and shows its progress, and brings the merged
// results back through the fetch pod's log. Its methods are called from
// one goroutine; each takes a ctx, and cancelling it stops the waiting, not
// what runs in the cluster (Delete does that).
type ClusterRun struct {
	spec    Spec
	client  kubernetes.Interface
	out     io.Writer
	logs    LogFunc
	poll    time.Duration
	quiet   time.Duration
	server  string
	created []object
}

// RunOption is an option of NewClusterRun.
type RunOption func(*ClusterRun)

// WithProgress writes the progress lines and logs to w (default: nowhere).
func WithProgress(w io.Writer) RunOption { return func(c *ClusterRun) { c.out = w } }

// WithLogs reads pods' logs with logs (default: the client's GetLogs).
func WithLogs(logs LogFunc) RunOption { return func(c *ClusterRun) { c.logs = logs } }

// WithPoll sets how often the run's objects are read while it waits
// (default 2 s), and the longest time between two progress lines when
// nothing changes (default 15 s).
func WithPoll(every, quiet time.Duration) RunOption {
	return func(c *ClusterRun) { c.poll, c.quiet = every, quiet }
}

// WithServer names the cluster's API server in errors (the kubeconfig's
// server URL and context).
func WithServer(server string) RunOption { return func(c *ClusterRun) { c.server = server } }

// NewClusterRun runs m's objects through client in m's namespace
// ("default" when it has none).
func NewClusterRun(client kubernetes.Interface, m *Manifests, opts ...RunOption) *ClusterRun {
	c := &ClusterRun{spec: m.Spec, client: client, out: io.Discard, poll: 2 * time.Second, quiet: 15 * time.Second, server: "the cluster"}
	c.spec.Namespace = cmp.Or(c.spec.Namespace, metav1.NamespaceDefault)
	c.logs = func(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
		return client.CoreV1().Pods(namespace).GetLogs(pod, opts).Stream(ctx)
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Namespace is the run's namespace.
func (c *ClusterRun) Namespace() string { return c.spec.Namespace }

// What Run prints of failed shards: the last failedLogLines lines of the
// logs of the first maxFailedLogs.
const (
	maxFailedLogs  = 5
	failedLogLines = 20
)

// Run runs the sharded run on the cluster and fetches its merged results
// into dir (as `zkbench run` writes <output>/<run-id>/): Check, Create, then
// Shards, Merge and Fetch. dir must be missing or empty: that is checked
// before anything is created. After shards that failed it still merges
// (the merge names the cases or shards that are missing), and after a
// merge that failed it still fetches (an incomplete merged run is
// written); fetched says whether dir holds the merged run. The error joins
// every step's (ErrShardsFailed, ErrMergeFailed, ErrFetchFailed, ...).
// Run deletes nothing: call Delete, also after an error.
func (c *ClusterRun) Run(ctx context.Context, dir string) (fetched bool, err error) {
	if err := checkEmptyDir(dir); err != nil {
		return false, err
	}
	if err := c.Check(ctx); err != nil {
		return false, err
	}
	if err := c.Create(ctx); err != nil {
		return false, err
	}
	shardsErr := c.Shards(ctx)
	if shardsErr != nil && !errors.Is(shardsErr, ErrShardsFailed) {
		return false, shardsErr
	}
	mergeErr := c.Merge(ctx)
	if mergeErr != nil && !errors.Is(mergeErr, ErrMergeFailed) {
		return false, errors.Join(shardsErr, mergeErr)
	}
	fetchErr := c.Fetch(ctx, dir)
	return fetchErr == nil, errors.Join(shardsErr, mergeErr, fetchErr)
}

// checkEmptyDir refuses a dir that holds anything.
func checkEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("kube: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("%s exists and is not empty: the fetched results would be mixed with what is there; give another --run-id or -o, or move it away", dir)
	}
	return nil
}

// Shards waits for the shards' Job to end. On Failed it says why, names
// the failed shards (status.failedIndexes) and prints the end of their logs,
// and returns ErrShardsFailed.
func (c *ClusterRun) Shards(ctx context.Context) error {
	s := c.spec
	job, err := c.waitJob(ctx, s.Name, s.Deadline)
	if err != nil {
		return err
	}
	end := jobEnd(job)
	if end.Type == batchv1.JobComplete {
		return nil
	}
	failed := ""
	if job.Status.FailedIndexes != nil {
		failed = *job.Status.FailedIndexes
	}
	line := fmt.Sprintf("job/%s Failed (%s)", s.Name, why(end))
	if failed != "" {
		line += "; failed shards: " + failed
	}
	fmt.Fprintln(c.out, line)
	indexes, err := parseIndexes(failed)
	if err != nil {
		fmt.Fprintln(c.out, err)
	}
	for i, index := range indexes {
		if i == maxFailedLogs {
			fmt.Fprintf(c.out, "(and %d more failed shards: kubectl -n %s logs -l %s=%s,%s=I for shard I)\n",
				len(indexes)-i, s.Namespace, batchv1.JobNameLabel, s.Name, batchv1.JobCompletionIndexAnnotation)
			break
		}
		pods, err := c.pods(ctx, s.Name, fmt.Sprint(index))
		if err != nil {
			fmt.Fprintln(c.out, err)
			continue
		}
		if len(pods) == 0 {
			fmt.Fprintf(c.out, "shard %d: its pod is gone (deleted, evicted, or lost with its node), so no log to show; `kubectl -n %s get events` says what removed it\n", index, s.Namespace)
		}
		for _, pod := range pods {
			fmt.Fprintf(c.out, "shard %d, pod/%s (%s), the last %d lines of its log:\n", index, pod.Name, podEnd(&pod), failedLogLines)
			c.tailLog(ctx, pod.Name, failedLogLines)
		}
	}
	msg := fmt.Sprintf("job/%s Failed (%s)", s.Name, end.Reason)
	if failed != "" {
		msg += ", failed shards " + failed
	}
	return fmt.Errorf("%w: %s (the merge names the cases they did not finish)", ErrShardsFailed, msg)
}

// Merge creates the merge Job, waits for it to end and prints its pod's
// log (the merged run's summary, or why it failed). A merge that ended
// Failed is ErrMergeFailed.
func (c *ClusterRun) Merge(ctx context.Context) error {
	s := c.spec
	if err := c.create(ctx, s.MergeJob()); err != nil {
		return err
	}
	job, err := c.waitJob(ctx, s.MergeName(), s.MergeDeadline)
	if err != nil {
		return err
	}
	pods, err := c.pods(ctx, s.MergeName(), "")
	if err != nil {
		fmt.Fprintln(c.out, err)
	}
	for _, pod := range pods {
		fmt.Fprintf(c.out, "pod/%s (%s), its log:\n", pod.Name, podEnd(&pod))
		c.tailLog(ctx, pod.Name, 0)
	}
	if end := jobEnd(job); end.Type != batchv1.JobComplete {
		return fmt.Errorf("%w: job/%s Failed (%s; its log above says why)", ErrMergeFailed, s.MergeName(), why(end))
	}
	return nil
}

// Fetch creates the fetch pod, waits for it to end and reads the merged
// run from its log into dir (ReadArchive). A fetch pod that ended Failed
// has its log printed (why `kube archive` failed) and is ErrFetchFailed.
func (c *ClusterRun) Fetch(ctx context.Context, dir string) error {
	s := c.spec
	if err := c.create(ctx, s.fetchPod()); err != nil {
		return err
	}
	pod, err := c.waitPod(ctx, s.FetchName(), FetchDeadline+time.Minute)
	if err != nil {
		return err
	}
	if pod.Status.Phase == corev1.PodFailed {
		fmt.Fprintf(c.out, "pod/%s (%s), its log:\n", pod.Name, podEnd(pod))
		c.tailLog(ctx, pod.Name, failedLogLines)
		return fmt.Errorf("%w: pod/%s %s (its log above says why)", ErrFetchFailed, pod.Name, podEnd(pod))
	}
	rc, err := c.logs(ctx, s.Namespace, pod.Name, &corev1.PodLogOptions{Container: "fetch"})
	if err != nil {
		return fmt.Errorf("kube: the log of pod/%s: %w", pod.Name, err)
	}
	defer rc.Close()
	if err := ReadArchive(rc, dir); err != nil {
		return fmt.Errorf("pod/%s's log into %s: %w", pod.Name, dir, err)
	}
	fmt.Fprintf(c.out, "fetched %s into %s\n", s.MergedDir(), dir)
	return nil
}
