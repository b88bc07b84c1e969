// Package kube writes the Kubernetes manifests of a sharded zkbench run
// (docs/kubernetes.md): an Indexed Job whose pods are the run's shards, each
// running `zkbench run --spec` on the run's spec (in the run's ConfigMap)
// with its index from JOB_COMPLETION_INDEX and writing its results file to a
// shared volume; the run's configuration in that ConfigMap; the claim of that volume; the Job that
// merges the shards' files with `zkbench merge`; and a pod that copies the
// merged results out through its log (archive.go). It also runs them on a
// cluster through client-go (ClusterRun, `zkbench kube run`). Every object is built from k8s.io/api's types, so a
// field that the API does not know cannot be written.
package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// IndexEnv is the variable the Job controller sets in each pod of an
// Indexed Job to the pod's completion index; `zkbench run --shards S`
// takes its --shard-index from it.
const IndexEnv = "JOB_COMPLETION_INDEX"

// IndexAnnotation is the annotation the Job controller puts on each pod of
// an Indexed Job: its completion index.
const IndexAnnotation = batchv1.JobCompletionIndexAnnotation

// Paths inside the pods.
const (
	// Binary is zkbench in the zkbench/zkbench image (docker/zkbench).
	Binary = "/zkbench"
	// ResultsMount is where the shared volume is mounted.
	ResultsMount = "/results"
	// ConfigMount is where the run's ConfigMap is mounted, read-only.
	ConfigMount = "/etc/zkbench/run"
	// SpecFile is the run's spec inside the pods (the ConfigMap's SpecKey).
	SpecFile = ConfigMount + "/" + SpecKey
	// TLSMount is where a Secret with etcd's TLS files is mounted.
	TLSMount = "/etc/zkbench/tls"
)

// SpecKey is the ConfigMap's key of the run's spec.
const SpecKey = "run-spec.json"

// PasswordEnv is the variable `zkbench run` reads etcd's password from.
const PasswordEnv = "ZKBENCH_ETCD_PASSWORD"

// Labels on every object and pod.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	// AnnotationRunID carries the run id (an id may be longer than a label).
	AnnotationRunID = "zkbench.io/run-id"
)

// Spec is a sharded run to write as manifests. Name, Image, Shards, RunID
// and RunSpec are required; the rest have defaults.
type Spec struct {
	// Name names the Job (the shards' pods are <Name>-<index>-...) and
	// prefixes the other objects' names: a DNS label.
	Name      string
	Namespace string // empty: whichever namespace kubectl applies to
	Image     string
	// PullPolicy defaults to IfNotPresent (an image loaded into the nodes,
	// as kind load does, is used as is).
	PullPolicy corev1.PullPolicy
	Shards     int
	RunID      string
	// RunSpec is the run every shard runs, a runner.Spec as JSON (`zkbench
	// run --spec`): sharded over Shards, without secrets (the pods take them
	// from their environment), its shard index and output each pod's own
	// (JOB_COMPLETION_INDEX, ShardOutput). It is the ConfigMap's SpecKey,
	// mounted at SpecFile.
	RunSpec string
	// NoPlots: the merge draws no plots.
	NoPlots bool
	// Claim is an existing PersistentVolumeClaim for the results; empty:
	// the manifests create <Name>-results of StorageSize (default 1Gi) in
	// StorageClass (default: the cluster's), AccessMode (default
	// ReadWriteMany: shards on several nodes write to it at once).
	Claim        string
	StorageSize  resource.Quantity
	StorageClass string
	AccessMode   corev1.PersistentVolumeAccessMode
	// Resources are each shard's.
	Resources corev1.ResourceRequirements
	// Deadline bounds the shards' Job (activeDeadlineSeconds); MergeDeadline
	// the merge's (default 10 minutes).
	Deadline, MergeDeadline time.Duration
	// PasswordSecret, "secret:key", sets ZKBENCH_ETCD_PASSWORD from a Secret.
	PasswordSecret string
	// TLSSecret is a Secret mounted at TLSMount (etcd's TLS files).
	TLSSecret string
}

// File is one manifest file: Name (such as 20-shards.yaml) and its objects.
type File struct {
	Name    string
	Objects []runtime.Object
}

// Manifests are a run's manifests, in the order they are applied.
type Manifests struct {
	Spec  Spec
	Files []File
}

func (s *Spec) defaults() {
	if s.PullPolicy == "" {
		s.PullPolicy = corev1.PullIfNotPresent
	}
	if s.StorageSize.IsZero() {
		s.StorageSize = resource.MustParse("1Gi")
	}
	if s.AccessMode == "" {
		s.AccessMode = corev1.ReadWriteMany
	}
	if s.MergeDeadline == 0 {
		s.MergeDeadline = 10 * time.Minute
	}
}

// Names of the objects.
func (s Spec) configName() string { return s.Name + "-config" }
func (s Spec) claimName() string {
	if s.Claim != "" {
		return s.Claim
	}
	return s.Name + "-results"
}

// MergeName is the merge Job's name.
func (s Spec) MergeName() string { return s.Name + "-merge" }

// FetchName is the fetch pod's name.
func (s Spec) FetchName() string { return s.Name + "-fetch" }

// ShardOutput is the --output of shard index's `zkbench run` ("$(...)"
// is expanded by the kubelet from the pod's environment): each shard its
// own folder on the shared volume, so their results.json do not collide.
func (s Spec) ShardOutput(index string) string {
	return ResultsMount + "/" + s.RunID + "/shards/" + index
}

// ShardsDir holds every shard's --output folder, ShardOutput(I) being
// ShardsDir/I: the merge's --shards-dir.
func (s Spec) ShardsDir() string { return ResultsMount + "/" + s.RunID + "/shards" }

// MergeOutput is the merge's -o; the merged file is
// <MergeOutput>/<run-id>/results.json.
func (s Spec) MergeOutput() string { return ResultsMount + "/" + s.RunID + "/merged" }

// MergedDir is the merged run's folder, <MergeOutput>/<run-id>: its
// results.json and plots, which the fetch pod archives.
func (s Spec) MergedDir() string { return s.MergeOutput() + "/" + s.RunID }

// FetchDeadline bounds the fetch pod (activeDeadlineSeconds): it archives
// MergedDir to its log and exits.
const FetchDeadline = 10 * time.Minute

// FetchArgs are the arguments of the fetch pod's container: `kube archive`
// of MergedDir, which writes it to the pod's log as base64 lines of a
// gzip-compressed tar (WriteArchive) for `kubectl logs | base64 -d | tar
// -xz` or ReadArchive.
func (s Spec) FetchArgs() []string { return []string{"kube", "archive", s.MergedDir()} }

// ShardArgs are the arguments of each shard's container (its command is
// Binary): `run` of the run's spec, into the shard's own folder; the shard's
// index comes from JOB_COMPLETION_INDEX.
func (s Spec) ShardArgs() []string {
	return []string{"run", "--spec=" + SpecFile, "--output=" + s.ShardOutput("$("+IndexEnv+")"), "--no-plots"}
}

// MergeArgs are the arguments of the merge's container: the shards'
// folder and their count (`zkbench merge --shards-dir` reads ShardsDir/0 to
// ShardsDir/S-1 and names a missing shard), as short for 100,000 shards as
// for 2.
func (s Spec) MergeArgs() []string {
	args := []string{"merge", "--shards-dir=" + s.ShardsDir(), "--shards=" + strconv.Itoa(s.Shards), "--output=" + s.MergeOutput()}
	if s.NoPlots {
		args = append(args, "--no-plots")
	}
	return args
}

// Check refuses a spec the API server or the run would refuse, saying
// which setting to change.
func (s Spec) Check() error {
	switch {
	case s.Shards < 1:
		return fmt.Errorf("--shards %d: a Job needs at least 1 shard (parallelism = completions = shards)", s.Shards)
	case s.Shards > 100000:
		return fmt.Errorf("--shards %d: an Indexed Job has at most 100,000 completions", s.Shards)
	case s.Image == "":
		return errors.New("--image: give the zkbench image the pods run")
	case s.RunID == "":
		return errors.New("--run-id: every shard must name the same run")
	case s.RunSpec == "":
		return errors.New("kube: no run spec: every shard runs one (zkbench kube job writes it from the run's flags)")
	}
	// The longest name derived from Name: a pod's hostname <Name>-<index>,
	// and the objects' suffixes; each must be a DNS label.
	for _, n := range []string{s.Name, s.Name + "-" + strconv.Itoa(s.Shards-1), s.configName(), s.MergeName(), s.FetchName(), s.claimName()} {
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			return fmt.Errorf("--name %q: %q (a name derived from it) is not a DNS label: %s; give a shorter --name of lower-case letters, digits and '-'",
				s.Name, n, strings.Join(errs, "; "))
		}
	}
	if s.Namespace != "" {
		if errs := validation.IsDNS1123Label(s.Namespace); len(errs) > 0 {
			return fmt.Errorf("--namespace %q: %s", s.Namespace, strings.Join(errs, "; "))
		}
	}
	if s.PasswordSecret != "" {
		name, key, ok := strings.Cut(s.PasswordSecret, ":")
		if !ok || len(validation.IsDNS1123Subdomain(name)) > 0 || len(validation.IsConfigMapKey(key)) > 0 {
			return fmt.Errorf("--password-secret %q: want SECRET:KEY, a Secret in the Job's namespace and its key holding etcd's password", s.PasswordSecret)
		}
	}
	if s.TLSSecret != "" && len(validation.IsDNS1123Subdomain(s.TLSSecret)) > 0 {
		return fmt.Errorf("--tls-secret %q: not a Secret's name", s.TLSSecret)
	}
	switch s.AccessMode {
	case "", corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod:
	default:
		return fmt.Errorf("--access-mode %q: want ReadWriteMany, ReadWriteOnce or ReadWriteOncePod", s.AccessMode)
	}
	if s.AccessMode == corev1.ReadWriteOncePod && s.Shards > 1 {
		return fmt.Errorf("--access-mode ReadWriteOncePod with --shards %d: only one pod can mount the claim, and the %d shards run at once (the others would stay Pending and the run fail at the barrier): use ReadWriteMany (or --claim, an existing ReadWriteMany claim), or ReadWriteOnce, which puts every shard on one node",
			s.Shards, s.Shards)
	}
	if s.Deadline < 0 || s.MergeDeadline < 0 {
		return errors.New("--deadline: must be positive")
	}
	return nil
}

// MaxObjectBytes bounds each object's JSON: `kubectl apply` stores the
// whole object in its kubectl.kubernetes.io/last-applied-configuration
// annotation, and the annotations of an object may hold at most 256 KiB.
// Nothing in the manifests grows with the shards; the run's spec is the
// one thing that can make an object large.
const MaxObjectBytes = 200 << 10

// checkSize refuses an object kubectl apply could not store.
func checkSize(obj runtime.Object) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("kube: %T: %w", obj, err)
	}
	if len(b) > MaxObjectBytes {
		o := obj.(metav1.Object)
		return fmt.Errorf("%s %s would be %d bytes, more than the %d that kubectl apply can keep in its last-applied annotation (256 KiB at most): shorten the run's flags (a long --clients or --endpoints list; the run's spec in the ConfigMap holds them)",
			obj.GetObjectKind().GroupVersionKind().Kind, o.GetName(), len(b), MaxObjectBytes)
	}
	return nil
}

// Build returns the run's manifests, or why spec cannot be run.
func Build(spec Spec) (*Manifests, error) {
	spec.defaults()
	if err := spec.Check(); err != nil {
		return nil, err
	}
	m := &Manifests{Spec: spec}
	m.Files = append(m.Files, File{Name: "00-config.yaml", Objects: []runtime.Object{spec.configMap()}})
	if spec.Claim == "" {
		m.Files = append(m.Files, File{Name: "10-results-claim.yaml", Objects: []runtime.Object{spec.claim()}})
	}
	m.Files = append(m.Files,
		File{Name: "20-shards-job.yaml", Objects: []runtime.Object{spec.ShardsJob()}},
		File{Name: "30-merge-job.yaml", Objects: []runtime.Object{spec.MergeJob()}},
		File{Name: "40-fetch-pod.yaml", Objects: []runtime.Object{spec.fetchPod()}},
	)
	for _, f := range m.Files {
		for _, o := range f.Objects {
			if err := checkSize(o); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (s Spec) meta(name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: s.Namespace,
		Labels: map[string]string{
			LabelName: "zkbench", LabelInstance: s.Name, LabelComponent: component,
		},
		Annotations: map[string]string{AnnotationRunID: s.RunID},
	}
}

// ShellQuote joins args as a POSIX shell would read them back.
func ShellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@+%", r))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// configMap is the run's configuration: what every shard runs and how the
// merge joins them, readable with kubectl get configmap and mounted into
// every pod at ConfigMount.
func (s Spec) configMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: s.meta(s.configName(), "config"),
		Data: map[string]string{
			"run-id":        s.RunID,
			"shards":        strconv.Itoa(s.Shards),
			"image":         s.Image,
			SpecKey:         s.RunSpec,
			"shard-command": ShellQuote(append([]string{Binary}, s.ShardArgs()...)) + "\n",
			"merge-command": ShellQuote(append([]string{Binary}, s.MergeArgs()...)) + "\n",
			"results": "shard I: " + s.ShardOutput("I") + "/" + s.RunID + "/results.json\n" +
				"merged:  " + s.MergeOutput() + "/" + s.RunID + "/results.json\n",
		},
	}
}

func (s Spec) claim() *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: s.meta(s.claimName(), "results"),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{s.AccessMode},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: s.StorageSize},
			},
		},
	}
	if s.StorageClass != "" {
		c.Spec.StorageClassName = &s.StorageClass
	}
	return c
}

// volumes are every pod's: the results claim and the run's ConfigMap (and
// the TLS Secret); readOnly for the fetch pod.
func (s Spec) volumes(readOnly bool) ([]corev1.Volume, []corev1.VolumeMount) {
	vols := []corev1.Volume{
		{Name: "results", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.claimName(), ReadOnly: readOnly},
		}},
		{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: s.configName()}},
		}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "results", MountPath: ResultsMount, ReadOnly: readOnly},
		{Name: "config", MountPath: ConfigMount, ReadOnly: true},
	}
	if s.TLSSecret != "" {
		vols = append(vols, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: s.TLSSecret},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: "tls", MountPath: TLSMount, ReadOnly: true})
	}
	return vols, mounts
}

func (s Spec) env() []corev1.EnvVar {
	if s.PasswordSecret == "" {
		return nil
	}
	name, key, _ := strings.Cut(s.PasswordSecret, ":")
	return []corev1.EnvVar{{Name: PasswordEnv, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key},
	}}}
}

// UID is the user and group every pod runs as, and the group that owns
// the results volume (fsGroup): not root, so that the pods pass the
// "restricted" Pod Security Standard. The zkbench image (FROM scratch, a
// static binary readable and executable by all) runs as any uid.
const UID = 65532

// podSecurity is every pod's security context: the "restricted" Pod
// Security Standard's (non-root, RuntimeDefault seccomp) and an fsGroup so
// that the volume's files are the pods' group's, writable by them.
func podSecurity() *corev1.PodSecurityContext {
	id := int64(UID)
	yes := true
	onMismatch := corev1.FSGroupChangeOnRootMismatch
	return &corev1.PodSecurityContext{
		RunAsNonRoot: &yes, RunAsUser: &id, RunAsGroup: &id, FSGroup: &id, FSGroupChangePolicy: &onMismatch,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// containerSecurity is every container's: no privilege escalation, no
// capabilities.
func containerSecurity() *corev1.SecurityContext {
	no := false
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: &no,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// placement is where the shards' pods go. With a ReadWriteMany volume they
// are spread over the nodes: each node's cores and (behind SNAT) its IP are
// shared by its shards. A ReadWriteOnce volume is mounted by the pods of one
// node only, so with it every shard is required on the node of the others
// (the first goes anywhere, the scheduler puts the rest beside it): spread
// over nodes they would hang in ContainerCreating (Multi-Attach).
func (s Spec) placement() ([]corev1.TopologySpreadConstraint, *corev1.Affinity) {
	shards := &metav1.LabelSelector{MatchLabels: map[string]string{LabelInstance: s.Name, LabelComponent: "shard"}}
	if s.AccessMode == corev1.ReadWriteOnce {
		return nil, &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: shards, TopologyKey: corev1.LabelHostname,
			}},
		}}
	}
	return []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: shards,
	}}, nil
}

// shardGrace is how long a shard has after SIGTERM (a deleted Job, a
// deadline): it stops its case, lines up at the end barrier and writes its
// results, as `zkbench run` does on Ctrl-C.
const shardGrace = 60

// ShardsJob is the Indexed Job of the shards: completions = parallelism =
// Shards, so that every shard runs at once (they meet at each case's
// barrier), and no shard is retried (backoffLimitPerIndex 0): a shard
// started again would arrive at a case the others have measured.
func (s Spec) ShardsJob() *batchv1.Job {
	vols, mounts := s.volumes(false)
	n := int32(s.Shards)
	zero := int32(0)
	mode := batchv1.IndexedCompletion
	grace := int64(shardGrace)
	noLinks := false
	meta := s.meta(s.Name, "shard")
	spread, affinity := s.placement()
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			CompletionMode:       &mode,
			Completions:          &n,
			Parallelism:          &n,
			BackoffLimitPerIndex: &zero,
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				// An evicted or preempted shard is not started again either
				// (the default would count it against backoffLimitPerIndex,
				// which is 0: say so explicitly, and never Ignore it).
				{Action: batchv1.PodFailurePolicyActionFailIndex, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
					{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
				}},
				// A shard that exits non-zero failed its share; the other
				// shards go on (their cases time out at the barrier and are
				// marked incomplete, which the merge reports).
				{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0},
				}},
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels, Annotations: meta.Annotations},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: &grace,
					EnableServiceLinks:            &noLinks,
					TopologySpreadConstraints:     spread,
					Affinity:                      affinity,
					SecurityContext:               podSecurity(),
					Containers: []corev1.Container{{
						Name: "shard", Image: s.Image, ImagePullPolicy: s.PullPolicy,
						Command: []string{Binary}, Args: s.ShardArgs(),
						Env: s.env(), VolumeMounts: mounts, Resources: s.Resources,
						SecurityContext: containerSecurity(),
					}},
					Volumes: vols,
				},
			},
		},
	}
	if s.Deadline > 0 {
		d := int64((s.Deadline + time.Second - 1) / time.Second)
		job.Spec.ActiveDeadlineSeconds = &d
	}
	return job
}

// MergeJob is the Job that merges the shards' files, once the shards' Job
// is complete: one pod, not retried (a merge that failed says why in its
// log; run it again after fixing that).
func (s Spec) MergeJob() *batchv1.Job {
	vols, mounts := s.volumes(false)
	zero := int32(0)
	one := int32(1)
	d := int64(s.MergeDeadline / time.Second)
	noLinks := false
	meta := s.meta(s.MergeName(), "merge")
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			Completions: &one, Parallelism: &one, BackoffLimit: &zero, ActiveDeadlineSeconds: &d,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels, Annotations: meta.Annotations},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					EnableServiceLinks: &noLinks,
					SecurityContext:    podSecurity(),
					Containers: []corev1.Container{{
						Name: "merge", Image: s.Image, ImagePullPolicy: s.PullPolicy,
						Command: []string{Binary}, Args: s.MergeArgs(), VolumeMounts: mounts,
						SecurityContext: containerSecurity(),
					}},
					Volumes: vols,
				},
			},
		},
	}
}

// fetchPod copies the merged results out through its log: it mounts the
// volume read-only and runs zkbench's `kube archive` of MergedDir (the
// zkbench image has no tar for kubectl cp), then exits.
func (s Spec) fetchPod() *corev1.Pod {
	vols, mounts := s.volumes(true)
	d := int64(FetchDeadline / time.Second)
	noLinks := false
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: s.meta(s.FetchName(), "fetch"),
		Spec: corev1.PodSpec{
			RestartPolicy:         corev1.RestartPolicyNever,
			ActiveDeadlineSeconds: &d,
			EnableServiceLinks:    &noLinks,
			SecurityContext:       podSecurity(),
			Containers: []corev1.Container{{
				Name: "fetch", Image: s.Image, ImagePullPolicy: s.PullPolicy,
				Command: []string{Binary}, Args: s.FetchArgs(), VolumeMounts: mounts,
				SecurityContext: containerSecurity(),
			}},
			Volumes: vols,
		},
	}
}

// WaitCommand is a POSIX shell command that waits until job ends and says
// how: it polls the Job's true conditions every `every` seconds until they
// hold Complete or Failed (`kubectl wait --for=condition=complete` would
// wait out its whole timeout on a Job that failed), prints them, and exits
// 0 on Complete, 1 on Failed or when kubectl fails (no such Job, no
// cluster). The Job's activeDeadlineSeconds bounds the wait. kubectl is
// given "-n namespace" if namespace is not empty.
func WaitCommand(namespace, job string, every int) string {
	kubectl := "kubectl"
	if namespace != "" {
		kubectl += " -n " + namespace
	}
	return fmt.Sprintf(`(while s=$(%s get job/%s -o 'jsonpath={.status.conditions[?(@.status=="True")].type}') && `+
		`case " $s " in *" Complete "*|*" Failed "*) false;; esac; do sleep %d; done; `+
		`echo "job/%s: ${s:-not found}"; case " $s " in *" Complete "*) true;; *) false;; esac)`,
		kubectl, job, every, job)
}

// Marshal writes objs as YAML documents separated by ---.
func Marshal(w io.Writer, objs ...runtime.Object) error {
	for i, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return fmt.Errorf("kube: %T: %w", o, err)
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// header is the comment at the top of every file.
func (m *Manifests) header(f File) string {
	return fmt.Sprintf("# zkbench run %s: %d shards (docs/kubernetes.md). Written by `zkbench kube job`; %s.\n",
		m.Spec.RunID, m.Spec.Shards, fileRole[f.Name])
}

var fileRole = map[string]string{
	"00-config.yaml":        "the run's configuration",
	"10-results-claim.yaml": "the volume the shards write their results to",
	"20-shards-job.yaml":    "the shards: an Indexed Job, one pod per shard",
	"30-merge-job.yaml":     "apply once the shards' Job is complete: merges their files",
	"40-fetch-pod.yaml":     "apply after the merge: a pod that writes the merged results to its log, as base64 of a tar.gz",
}

// Bytes is file f's YAML.
func (m *Manifests) Bytes(f File) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(m.header(f))
	if err := Marshal(&b, f.Objects...); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteDir writes every file into dir (created if needed) and returns their
// paths in order.
func (m *Manifests) WriteDir(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range m.Files {
		b, err := m.Bytes(f)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// IndexFromEnv is the pod's completion index from IndexEnv; ok is false
// when it is not set (not a pod of an Indexed Job).
func IndexFromEnv() (index int, ok bool, err error) {
	v, set := os.LookupEnv(IndexEnv)
	if !set {
		return 0, false, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, false, fmt.Errorf("$%s %q: not a shard index", IndexEnv, v)
	}
	return n, true, nil
}
