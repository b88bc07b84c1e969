package kube

import (
	"fmt"
	"io"

	batchv1 "k8s.io/api/batch/v1"
)

// WriteNextSteps prints what to run once the manifests are written into
// dir (paths: the files, in the order Manifests.WriteDir returns them):
// apply the config, claim and shards' Job, wait for it to end, say why it
// failed, merge, and copy the merged results out of the volume into
// fetchTo through the fetch pod's log.
func (s Spec) WriteNextSteps(w io.Writer, paths []string, dir, fetchTo string) {
	ns := ""
	if s.Namespace != "" {
		ns = " -n " + s.Namespace
	}
	fmt.Fprintf(w, "\nthen (docs/kubernetes.md):\n")
	fmt.Fprintf(w, "  kubectl%s apply -f %s", ns, paths[0])
	for _, p := range paths[1 : len(paths)-2] {
		fmt.Fprintf(w, " -f %s", p)
	}
	fmt.Fprintf(w, "\n  # until the shards' Job is Complete or Failed (at most its deadline, %v):\n", s.Deadline)
	fmt.Fprintf(w, "  %s\n", WaitCommand(s.Namespace, s.Name, 10))
	fmt.Fprintf(w, "  # Failed: why, which shards, and their logs (I: each failed index):\n")
	fmt.Fprintf(w, "  kubectl%s get job/%s -o 'jsonpath={.status.conditions[?(@.type==\"Failed\")].reason}: failed shards {.status.failedIndexes}{\"\\n\"}'\n", ns, s.Name)
	fmt.Fprintf(w, "  kubectl%s logs -l %s=%s,%s=I\n", ns, batchv1.JobNameLabel, s.Name, batchv1.JobCompletionIndexAnnotation)
	fmt.Fprintf(w, "  # then merge (after Failed too: it merges the cases every shard finished, or names a shard with no file):\n")
	fmt.Fprintf(w, "  kubectl%s apply -f %s && %s && kubectl%s logs job/%s\n",
		ns, paths[len(paths)-2], WaitCommand(s.Namespace, s.MergeName(), 5), ns, s.MergeName())
	fmt.Fprintf(w, "  # then fetch: the fetch pod writes the merged results to its log (zkbench kube archive) and exits (if it fails, its log says why):\n")
	fmt.Fprintf(w, "  kubectl%s apply -f %s && kubectl%s wait --for=jsonpath='{.status.phase}'=Succeeded --timeout=5m pod/%s && mkdir -p %s && kubectl%s logs pod/%s | base64 -d | tar -xz -C %s\n",
		ns, paths[len(paths)-1], ns, s.FetchName(), fetchTo, ns, s.FetchName(), fetchTo)
	fmt.Fprintf(w, "  kubectl%s delete -f %s\n", ns, dir)
}
