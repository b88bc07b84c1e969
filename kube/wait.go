package kube

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// jobGrace is how long after its activeDeadlineSeconds a Job may take to
// end: the Job controller's sync and the shards' shardGrace after SIGTERM.
// A Job not ended by then has no Job controller looking after it.
const jobGrace = 3 * time.Minute

// progress prints a line when what it says changes, or every quiet.
type progress struct {
	c         *ClusterRun
	what      string // job/NAME, pod/NAME
	start     time.Time
	deadline  time.Duration // 0: none
	last      string
	lastPrint time.Time
}

func (p *progress) show(state string) {
	now := time.Now()
	if state == p.last && now.Sub(p.lastPrint) < p.c.quiet {
		return
	}
	p.last, p.lastPrint = state, now
	elapsed := now.Sub(p.start).Round(time.Second).String()
	if p.deadline > 0 {
		elapsed += " of at most " + p.deadline.String()
	}
	fmt.Fprintf(p.c.out, "%s: %s: %s\n", p.what, elapsed, state)
}

// waitJob waits until Job name has ended, Complete or Failed, printing its
// pods by phase and its counts, and returns it. It gives up when ctx is
// done, or when the Job has not ended jobGrace after deadline (its
// activeDeadlineSeconds; 0: none, and no bound), counted from now.
func (c *ClusterRun) waitJob(ctx context.Context, name string, deadline time.Duration) (*batchv1.Job, error) {
	jobs := c.client.BatchV1().Jobs(c.spec.Namespace)
	p := &progress{c: c, what: "job/" + name, start: time.Now(), deadline: deadline}
	var job *batchv1.Job
	err := c.every(ctx, p.what, func() (bool, error) {
		var err error
		if job, err = jobs.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, fmt.Errorf("kube: waiting for job/%s: %w", name, err)
		}
		pods, err := c.pods(ctx, name, "")
		if err != nil {
			return false, err
		}
		end := jobEnd(job)
		// Failed or Complete, and none of its pods still stopping.
		if end != nil && job.Status.Active == 0 && (job.Status.Terminating == nil || *job.Status.Terminating == 0) {
			fmt.Fprintf(c.out, "job/%s: %s after %v: %s; %d succeeded, %d failed\n", name, end.Type,
				time.Since(p.start).Round(time.Second), podPhases(pods), job.Status.Succeeded, job.Status.Failed)
			return true, nil
		}
		p.show(fmt.Sprintf("%s; %d succeeded, %d failed", podPhases(pods), job.Status.Succeeded, job.Status.Failed))
		if deadline > 0 && time.Since(p.start) > deadline+jobGrace {
			return false, fmt.Errorf("kube: job/%s has not ended %v after its deadline of %v: is the Job controller running? (kubectl -n %s describe job/%s)",
				name, jobGrace, deadline, c.spec.Namespace, name)
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return job, nil
}

// waitPod waits until pod name has Succeeded or Failed, printing its phase
// (and why it is pending), and returns it. It gives up when ctx is done or
// after bound: the pod's activeDeadlineSeconds counts only from its start
// on a node, and a pod that no node takes stays Pending.
func (c *ClusterRun) waitPod(ctx context.Context, name string, bound time.Duration) (*corev1.Pod, error) {
	pods := c.client.CoreV1().Pods(c.spec.Namespace)
	p := &progress{c: c, what: "pod/" + name, start: time.Now(), deadline: bound}
	var pod *corev1.Pod
	err := c.every(ctx, p.what, func() (bool, error) {
		var err error
		if pod, err = pods.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, fmt.Errorf("kube: waiting for pod/%s: %w", name, err)
		}
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			fmt.Fprintf(c.out, "pod/%s: %s after %v\n", name, pod.Status.Phase, time.Since(p.start).Round(time.Second))
			return true, nil
		}
		p.show(podPhases([]corev1.Pod{*pod}))
		if time.Since(p.start) > bound {
			return false, fmt.Errorf("kube: pod/%s has not ended in %v (%s): kubectl -n %s describe pod/%s says why",
				name, bound, podPhases([]corev1.Pod{*pod}), c.spec.Namespace, name)
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return pod, nil
}

// every runs step every c.poll until it says done or fails, or ctx ends
// (an error that names what it waited for).
func (c *ClusterRun) every(ctx context.Context, what string, step func() (done bool, err error)) error {
	tick := time.NewTicker(c.poll)
	defer tick.Stop()
	for {
		if done, err := step(); done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube: waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// pods are Job job's pods, those of completion index only unless index is
// "", oldest first.
func (c *ClusterRun) pods(ctx context.Context, job, index string) ([]corev1.Pod, error) {
	sel := labels.Set{batchv1.JobNameLabel: job}
	if index != "" {
		sel[batchv1.JobCompletionIndexAnnotation] = index
	}
	// ResourceVersion "0": served from the API server's cache.
	list, err := c.client.CoreV1().Pods(c.spec.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String(), ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("kube: pods of job/%s: %w", job, err)
	}
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return list.Items, nil
}

// tailLog prints the last n lines of pod's log (all with n 0), each
// indented.
func (c *ClusterRun) tailLog(ctx context.Context, pod string, n int) {
	opts := &corev1.PodLogOptions{}
	if n > 0 {
		tail := int64(n)
		opts.TailLines = &tail
	}
	rc, err := c.logs(ctx, c.spec.Namespace, pod, opts)
	if err != nil {
		fmt.Fprintf(c.out, "    (no log: %v)\n", err)
		return
	}
	defer rc.Close()
	var lines []string
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if n > 0 && len(lines) > n { // the server's tail, or ours
			lines = lines[1:]
		}
	}
	for _, l := range lines {
		fmt.Fprintf(c.out, "    %s\n", l)
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		fmt.Fprintf(c.out, "    (log cut: %v)\n", err)
	}
}
