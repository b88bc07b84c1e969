package kube

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// RefusedRunFlags are the run flags a Job's pods cannot use, and why.
var RefusedRunFlags = map[string]string{
	"cluster":     "a Job's pods cannot share servers started inside each pod (an embedded etcd, --cluster local or docker): run the cluster first and give its --endpoints",
	"nodes":       "zkbench starts no servers in a Job: give the --endpoints of a running cluster",
	"shard-index": "the Job gives each pod its index ($JOB_COMPLETION_INDEX): leave --shard-index out",
	"server-pids": "the servers do not run in the shards' pods",
	"spec":        "kube job writes the pods' spec from the run's flags: give those instead",
	"password":    "a password in a manifest is readable by whoever reads the Job: keep it in a Secret and give --password-secret SECRET:KEY",
	"digest":      "a ZooKeeper password in a manifest is readable by whoever reads the Job, and zkbench reads the digest from no Secret yet: run the Job against a ZooKeeper without digest authentication",
}

// TLSFileFlags are the run flags that name files: inside the pods they
// come from the Spec.TLSSecret volume, mounted at TLSMount.
var TLSFileFlags = []string{"cacert", "cert", "key"}

// CheckRunFlags refuses the run flags a Job's pods cannot use: changed
// says whether the user set a flag, value is its value, tlsSecret the
// Secret of the TLS files ("": none).
func CheckRunFlags(changed func(name string) bool, value func(name string) string, tlsSecret string) error {
	for _, name := range slices.Sorted(maps.Keys(RefusedRunFlags)) {
		if changed(name) {
			return fmt.Errorf("--%s: %s", name, RefusedRunFlags[name])
		}
	}
	for _, name := range TLSFileFlags {
		if !changed(name) {
			continue
		}
		v := value(name)
		if tlsSecret == "" || !strings.HasPrefix(v, TLSMount+"/") {
			return fmt.Errorf("--%s %s: the file must be in the pods: put the TLS files in a Secret, give --tls-secret SECRET and --%s %s/FILE", name, v, name, TLSMount)
		}
	}
	return nil
}

// CheckJobFlags refuses the Job's flags that the Job would not use:
// changed says whether the user set a flag, value is its value. A flag
// dropped silently would leave its user believing the Job has a volume of
// that size or class. (etcd's Secrets on ZooKeeper are refused with the
// other backend's flags, by the run's rule.)
func CheckJobFlags(changed func(name string) bool, value func(name string) string) error {
	if value("claim") != "" {
		// The manifests write no claim then: the existing one has its own
		// size and class (--storage-size has a default, so only one given
		// is refused).
		for _, name := range []string{"storage-size", "storage-class"} {
			if changed(name) {
				return fmt.Errorf("--%s: --claim uses an existing claim, whose %s is its own: drop --%s",
					name, strings.TrimPrefix(name, "storage-"), name)
			}
		}
	}
	return nil
}

// DefaultName is a Job's name for a run: zkbench-<run-id>, lower case,
// with dots and underscores as dashes.
func DefaultName(runID string) string {
	return "zkbench-" + strings.ToLower(strings.NewReplacer("_", "-", ".", "-").Replace(runID))
}

// AutoMemory is the memory a shard's pod requests for perShard clients:
// 512 KiB a client over a base for the process: about three times the
// resident memory per ZooKeeper client of the fair lock at 10,000 clients
// in docs/results.md (176 KB), and above the 434 to 462 KB a client of a run
// holding the naive lock too (docs/kubernetes-clusters.md).
func AutoMemory(perShard int) resource.Quantity {
	return *resource.NewQuantity(256<<20+int64(perShard)*512<<10, resource.BinarySI)
}

// Resources are each shard's requests from --cpu and --memory ("auto":
// AutoMemory of perShard clients).
// A request of 0 or less is refused: the API server refuses a negative
// one, and 0 (not documented as "no request") would let the scheduler pack
// the shards onto a node that cannot hold their clients.
func Resources(cpu, memory string, perShard int) (corev1.ResourceRequirements, error) {
	c, err := positiveQuantity("cpu", cpu, "1 or 500m")
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	m := AutoMemory(perShard)
	if memory != "auto" {
		if m, err = positiveQuantity("memory", memory, "512Mi or 2Gi, or auto"); err != nil {
			return corev1.ResourceRequirements{}, err
		}
	}
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: c, corev1.ResourceMemory: m}}, nil
}

// StorageSize checks --storage-size, the size of the results claim the
// manifests create: 0 or less is refused (the API server refuses a
// negative size, and a Spec's zero size would silently become 1Gi).
func StorageSize(s string) (resource.Quantity, error) {
	return positiveQuantity("storage-size", s, "1Gi or 500Mi")
}

// positiveQuantity is flag's value as a quantity above 0, or an error
// naming the flag with examples (eg) of what it takes.
func positiveQuantity(flag, value, eg string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("--%s %q: %v (e.g. %s)", flag, value, err, eg)
	}
	if q.Sign() <= 0 {
		return resource.Quantity{}, fmt.Errorf("--%s %s: want a positive quantity such as %s", flag, value, eg)
	}
	return q, nil
}

// ScheduleTime is what Deadline allows for scheduling the pods and
// pulling the image; CaseOverhead what it allows each case to open and
// close its sessions.
const (
	ScheduleTime = 10 * time.Minute
	CaseOverhead = time.Minute
)

// Deadline bounds a sharded run's Job (activeDeadlineSeconds): per case
// its bound (warm-up and duration, one a case of the run's case list),
// both shard barriers' bounds (shardTimeout each) and CaseOverhead, plus
// ScheduleTime.
func Deadline(caseBounds []time.Duration, shardTimeout time.Duration) time.Duration {
	d := ScheduleTime
	for _, b := range caseBounds {
		d += b + 2*shardTimeout + CaseOverhead
	}
	return d
}

// PullPolicy checks --pull-policy.
func PullPolicy(s string) (corev1.PullPolicy, error) {
	p := corev1.PullPolicy(s)
	if !slices.Contains([]corev1.PullPolicy{corev1.PullIfNotPresent, corev1.PullAlways, corev1.PullNever}, p) {
		return "", fmt.Errorf("--pull-policy %q: want IfNotPresent, Always or Never", s)
	}
	return p, nil
}
