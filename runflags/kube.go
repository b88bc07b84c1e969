package runflags

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/zkbench/zkbench/kube"
	"github.com/zkbench/zkbench/runner"
)

// KubeJob are the flags of `zkbench kube job` and `zkbench kube run`: a
// run's (but --output: the shards write to the volume) and the Job's.
type KubeJob struct {
	*Run
	// Output is -o, which each command binds itself: kube job's folder of
	// manifests, kube run's of the fetched results.
	Output                                       string
	Image, Name, Namespace, PullPolicy           string
	Claim, StorageSize, StorageClass, AccessMode string
	CPU, Memory                                  string
	Deadline                                     time.Duration
	PasswordSecret, TLSSecret                    string
	NoPlots                                      bool
}

// BindKubeJob declares the flags of kube job and kube run on fl but -o,
// image being --image's default (the zkbench image of this zkbench's
// version).
func BindKubeJob(fl *pflag.FlagSet, image string) *KubeJob {
	run := pflag.NewFlagSet("run", pflag.ContinueOnError)
	k := &KubeJob{Run: Bind(run)}
	run.VisitAll(func(flag *pflag.Flag) {
		if flag.Name != "output" {
			fl.AddFlag(flag)
		}
	})
	fl.StringVar(&k.Image, "image", image, "the zkbench image the pods run (make images builds it; docs/docker.md)")
	fl.StringVar(&k.Name, "name", "", "the Job's name, prefix of the other objects' (default: zkbench-<run-id>)")
	fl.StringVar(&k.Namespace, "namespace", "", "namespace of every object (default: kubectl's)")
	fl.StringVar(&k.PullPolicy, "pull-policy", string(corev1.PullIfNotPresent), "the pods' imagePullPolicy: IfNotPresent, Always or Never")
	fl.StringVar(&k.Claim, "claim", "", "an existing PersistentVolumeClaim for the results (default: the manifests create <name>-results)")
	fl.StringVar(&k.StorageSize, "storage-size", "1Gi", "size of the results claim")
	fl.StringVar(&k.StorageClass, "storage-class", "", "storage class of the results claim (default: the cluster's)")
	fl.StringVar(&k.AccessMode, "access-mode", string(corev1.ReadWriteMany), "access mode of the results claim (made, or --claim's): ReadWriteMany (shards spread over the nodes), ReadWriteOnce (every shard on one node), ReadWriteOncePod (1 shard only)")
	fl.StringVar(&k.CPU, "cpu", "1", "CPU each shard's pod requests")
	fl.StringVar(&k.Memory, "memory", "auto", "memory each shard's pod requests; auto: 256Mi and 512Ki per client of the largest shard")
	fl.DurationVar(&k.Deadline, "deadline", 0, "bound on the shards' Job (activeDeadlineSeconds); 0: every case's warm-up, duration and shard barriers and a minute, plus 10m to schedule the pods")
	fl.StringVar(&k.PasswordSecret, "password-secret", "", "etcd: SECRET:KEY of a Secret holding the password (set as $ZKBENCH_ETCD_PASSWORD in the pods)")
	fl.StringVar(&k.TLSSecret, "tls-secret", "", "etcd: a Secret with the TLS files, mounted at "+kube.TLSMount+" (give --cacert etc. as paths there)")
	fl.BoolVar(&k.NoPlots, "no-plots", false, "do not draw plots")
	return k
}

// Manifests are the Job's manifests for the flags set in fl, and the most
// clients a shard holds. The run's flags are checked as each shard will
// check the run's spec (as shard 0, on the --endpoints; nothing is
// reached), and a run without a --run-id is given a time-based one.
func (k *KubeJob) Manifests(fl *pflag.FlagSet) (*kube.Manifests, int, error) {
	value := func(name string) string { return fl.Lookup(name).Value.String() }
	if err := kube.CheckRunFlags(fl.Changed, value, k.TLSSecret); err != nil {
		return nil, 0, err
	}
	if err := kube.CheckJobFlags(fl.Changed, value); err != nil {
		return nil, 0, err
	}
	switch {
	case !fl.Changed("shards") || k.Shards < 1:
		return nil, 0, fmt.Errorf("--shards %d: give the number of shards (pods) the run's clients are split over, at least 1", k.Shards)
	case len(k.Endpoints) == 0:
		return nil, 0, errors.New("--endpoints: a Job's pods reach a running cluster (an embedded etcd or --cluster local would start one per pod, and the shards must share one): give its client endpoints as the pods see them, e.g. zk-0.zk:2181 or etcd-0.etcd:2379")
	}
	if k.RunID == "" {
		k.RunID = "k8s-" + time.Now().UTC().Format("20060102-150405")
	}
	// Each pod gives its own index and output, and takes the secrets from
	// its environment.
	run := *k.Run
	run.Output, run.ShardIndex = kube.ResultsMount, 0
	if k.PasswordSecret != "" {
		run.Password = "from --password-secret" // only to check; never written
	}
	spec, err := run.Spec(fl)
	var r *runner.Runner
	if err == nil {
		r, err = runner.NewFromSpec(spec)
	}
	if err != nil {
		return nil, 0, err
	}
	spec.Output = ""
	runSpec, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return nil, 0, err
	}
	perShard := r.MaxShardClients()
	res, err := kube.Resources(k.CPU, k.Memory, perShard)
	if err != nil {
		return nil, 0, err
	}
	size, err := kube.StorageSize(k.StorageSize)
	if err != nil {
		return nil, 0, err
	}
	pull, err := kube.PullPolicy(k.PullPolicy)
	if err != nil {
		return nil, 0, err
	}
	deadline := k.Deadline
	if deadline == 0 {
		deadline = kube.Deadline(r.CaseBounds(), k.ShardTimeout)
	}
	m, err := kube.Build(kube.Spec{
		Name: cmp.Or(k.Name, kube.DefaultName(k.RunID)), Namespace: k.Namespace, Image: k.Image, PullPolicy: pull,
		Shards: k.Shards, RunID: k.RunID, RunSpec: string(runSpec) + "\n", NoPlots: k.NoPlots,
		Claim: k.Claim, StorageSize: size, StorageClass: k.StorageClass,
		AccessMode: corev1.PersistentVolumeAccessMode(k.AccessMode), // kube.Spec.Check refuses a bad one
		Resources:  res, Deadline: deadline,
		PasswordSecret: k.PasswordSecret, TLSSecret: k.TLSSecret,
	})
	return m, perShard, err
}
