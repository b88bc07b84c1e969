package kube

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// How ClusterRun reads the state of Jobs and pods, and says it in a line.

// jobEnd is job's true Complete or Failed condition, nil while it runs.
// Since Kubernetes 1.31 the controller sets it once the Job's pods have
// terminated (SuccessCriteriaMet and FailureTarget come first).
func jobEnd(job *batchv1.Job) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// why is a Job condition's reason and message.
func why(c *batchv1.JobCondition) string {
	return strings.Join(slices.DeleteFunc([]string{c.Reason, c.Message}, func(s string) bool { return s == "" }), ": ")
}

// podEnd says how pod ended: its phase, and its container's exit code and
// reason, or the pod's reason (DeadlineExceeded, Evicted).
func podEnd(pod *corev1.Pod) string {
	parts := []string{string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		parts = append(parts, pod.Status.Reason)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			parts = append(parts, fmt.Sprintf("exit code %d", t.ExitCode))
			if t.Reason != "" && t.Reason != "Error" && t.Reason != "Completed" {
				parts = append(parts, t.Reason)
			}
		}
	}
	return strings.Join(parts, ", ")
}

// podPhases counts pods by phase, with the reasons pods are pending:
// "pods 1 Pending (1 ImagePullBackOff zkbench/zkbench:v1), 2 Running". A
// pod without a phase yet is Pending.
func podPhases(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "no pods yet"
	}
	count := map[corev1.PodPhase]int{}
	pending := map[string]int{}
	for _, pod := range pods {
		phase := cmp.Or(pod.Status.Phase, corev1.PodPending)
		count[phase]++
		if phase == corev1.PodPending {
			if r := pendingReason(&pod); r != "" {
				pending[r]++
			}
		}
	}
	var parts []string
	for _, phase := range []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown} {
		if count[phase] == 0 {
			continue
		}
		part := fmt.Sprintf("%d %s", count[phase], phase)
		if phase == corev1.PodPending && len(pending) > 0 {
			var rs []string
			for _, r := range slices.Sorted(maps.Keys(pending)) {
				rs = append(rs, fmt.Sprintf("%d %s", pending[r], r))
			}
			part += " (" + strings.Join(rs, "; ") + ")"
		}
		parts = append(parts, part)
	}
	return "pods " + strings.Join(parts, ", ")
}

// imageReasons are the waiting reasons that are about the image.
var imageReasons = []string{"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "ImageInspectError"}

// pendingReason says why pod is pending, "" when nothing says: a container
// waiting (its image with an image reason, its message with another), or
// the scheduler's message.
func pendingReason(pod *corev1.Pod) string {
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		w := cs.State.Waiting
		switch {
		case w == nil || w.Reason == "":
		case slices.Contains(imageReasons, w.Reason):
			return w.Reason + " " + cs.Image
		case w.Message != "":
			return w.Reason + ": " + shorten(w.Message)
		default:
			return w.Reason
		}
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason != "" {
			return cond.Reason + ": " + shorten(cond.Message)
		}
	}
	return ""
}

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		return s[:197] + "..."
	}
	return s
}

// parseIndexes reads a Job's status.failedIndexes, "1,3-5", as indexes.
func parseIndexes(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || b < a {
			return nil, fmt.Errorf("kube: failed indexes %q: %q is not an index or a range", s, part)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}
