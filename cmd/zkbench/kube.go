package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	dockercluster "github.com/zkbench/zkbench/cluster/docker"
	"github.com/zkbench/zkbench/kube"
	"github.com/zkbench/zkbench/runner"
)

func newKubeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kube",
		Short: "Run zkbench on Kubernetes: write the manifests of a sharded run",
		Long: `kube writes the Kubernetes manifests that run a sharded zkbench run on a cluster:
an Indexed Job whose pods are the run's shards, and the merge of their results
(docs/kubernetes.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newKubeJobCmd())
	return cmd
}

// kubeJobFlags are `zkbench kube job`'s own flags; the run's are
// `zkbench run`'s.
type kubeJobFlags struct {
	output, image, name, namespace, pullPolicy  string
	claim, storageSize, storageClass, accessMod string
	cpu, memory                                 string
	deadline                                    time.Duration
	passwordSecret, tlsSecret, fetchImage       string
	own                                         map[string]bool // the names of these flags
}

// defaultImage is the zkbench image `make images` builds (docker/images.sh)
// at this zkbench's version: the pods must run the zkbench that wrote their
// flags. A build without a version (go build) names :latest.
func defaultImage() string {
	if version == "dev" || version == "" {
		return dockercluster.DefaultZkbenchImage
	}
	return strings.TrimSuffix(dockercluster.DefaultZkbenchImage, ":latest") + ":" + version
}

func newKubeJobCmd() *cobra.Command {
	run, f := newRunCmdFlags()
	k := &kubeJobFlags{}
	cmd := &cobra.Command{
		Use:   "job [run flags] --shards S --endpoints HOST:PORT,... [-o DIR]",
		Short: "Write an Indexed Job that runs a sharded zkbench run, and its merge",
		Long: `job writes the manifests of a sharded run (docs/kubernetes.md) into
<output>/<name>/, generated from Kubernetes' own API types:

  00-config.yaml         a ConfigMap with the run's configuration: run id, shards,
                         image, the run's spec (run-spec.json, the run as data),
                         each shard's command and the merge's
  10-results-claim.yaml  a PersistentVolumeClaim (ReadWriteMany) the shards write
                         their results to (left out with --claim)
  20-shards-job.yaml     the Indexed Job: completions = parallelism = S,
                         backoffLimitPerIndex 0; pod I runs
                         /zkbench run --spec /etc/zkbench/run/run-spec.json
                         --output /results/ID/shards/I, its --shard-index taken
                         from JOB_COMPLETION_INDEX
  30-merge-job.yaml      a Job running zkbench merge --shards-dir /results/ID/shards
                         --shards S: apply it once the shards' Job has ended
  40-fetch-pod.yaml      a pod holding the volume, to kubectl cp the results from

It takes zkbench run's flags, makes the run's spec of them and checks it
exactly as zkbench run does, so that a flag a shard would refuse is refused
here, not in S pods. A Job's pods
reach a running cluster: --endpoints is required and --cluster is refused.
ZooKeeper counts maxClientCnxns per client IP, that is per pod (or per node
behind SNAT): size --clients/S against it.

Every pod runs as uid and gid 65532, non-root, with fsGroup 65532, the
RuntimeDefault seccomp profile, no privilege escalation and no capabilities
(the "restricted" Pod Security Standard). With --access-mode ReadWriteOnce
every shard is required on one node (a pod affinity) instead of spread over
the nodes; ReadWriteOncePod is refused with more than one shard.`,
		Example: `  zkbench kube job --backend zookeeper --endpoints zk-0.zk:2181,zk-1.zk:2181,zk-2.zk:2181 \
    --shards 8 --clients 8000 --variants naive,fair --duration 30s --run-id lock-8k -o k8s
  kubectl apply -f k8s/zkbench-lock-8k/00-config.yaml -f k8s/zkbench-lock-8k/10-results-claim.yaml \
    -f k8s/zkbench-lock-8k/20-shards-job.yaml
  # it prints a wait that ends on Complete or Failed (kubectl wait --for=condition=complete would not end on Failed)
  kubectl apply -f k8s/zkbench-lock-8k/30-merge-job.yaml

  zkbench kube job --endpoints etcd-0.etcd:2379 --shards 4 --clients 400 --run-id etcd-400 \
    --cacert /etc/zkbench/tls/ca.pem --tls-secret etcd-client-tls --user bench --password-secret etcd-auth:password`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runKubeJob(cmd, f, k)
		},
	}
	fl := cmd.Flags()
	// The run's flags, but its --output: the shards write to the volume.
	run.Flags().VisitAll(func(flag *pflag.Flag) {
		if flag.Name != "output" {
			fl.AddFlag(flag)
		}
	})
	own := pflag.NewFlagSet("kube job", pflag.ContinueOnError)
	own.StringVarP(&k.output, "output", "o", "k8s", "folder for the manifests; writes <output>/<name>/*.yaml")
	own.StringVar(&k.image, "image", defaultImage(), "the zkbench image the pods run (make images builds it; docs/docker.md)")
	own.StringVar(&k.name, "name", "", "the Job's name, prefix of the other objects' (default: zkbench-<run-id>)")
	own.StringVar(&k.namespace, "namespace", "", "namespace of every object (default: kubectl's)")
	own.StringVar(&k.pullPolicy, "pull-policy", string(corev1.PullIfNotPresent), "the pods' imagePullPolicy: IfNotPresent, Always or Never")
	own.StringVar(&k.claim, "claim", "", "an existing PersistentVolumeClaim for the results (default: the manifests create <name>-results)")
	own.StringVar(&k.storageSize, "storage-size", "1Gi", "size of the results claim")
	own.StringVar(&k.storageClass, "storage-class", "", "storage class of the results claim (default: the cluster's)")
	own.StringVar(&k.accessMod, "access-mode", string(corev1.ReadWriteMany), "access mode of the results claim (made, or --claim's): ReadWriteMany (shards spread over the nodes), ReadWriteOnce (every shard on one node), ReadWriteOncePod (1 shard only)")
	own.StringVar(&k.cpu, "cpu", "1", "CPU each shard's pod requests")
	own.StringVar(&k.memory, "memory", "auto", "memory each shard's pod requests; auto: 256Mi and 512Ki per client of the largest shard")
	own.DurationVar(&k.deadline, "deadline", 0, "bound on the shards' Job (activeDeadlineSeconds); 0: every case's warm-up, duration and shard barriers, plus 10m to schedule the pods")
	own.StringVar(&k.passwordSecret, "password-secret", "", "etcd: SECRET:KEY of a Secret holding the password (set as $ZKBENCH_ETCD_PASSWORD in the pods)")
	own.StringVar(&k.tlsSecret, "tls-secret", "", "etcd: a Secret with the TLS files, mounted at "+kube.TLSMount+" (give --cacert etc. as paths there)")
	own.StringVar(&k.fetchImage, "fetch-image", kube.DefaultFetchImage, "image of the fetch pod (needs tar, for kubectl cp)")
	own.VisitAll(fl.AddFlag)
	return cmd
}

func runKubeJob(cmd *cobra.Command, f *runFlags, k *kubeJobFlags) error {
	fl := cmd.Flags()
	value := func(name string) string { return fl.Lookup(name).Value.String() }
	if err := kube.CheckRunFlags(fl.Changed, value, k.tlsSecret); err != nil {
		return err
	}
	switch {
	case !fl.Changed("shards") || f.shards < 1:
		return fmt.Errorf("--shards %d: give the number of shards (pods) the run's clients are split over, at least 1", f.shards)
	case len(f.endpoints) == 0:
		return errors.New("--endpoints: a Job's pods reach a running cluster (an embedded etcd or --cluster local would start one per pod, and the shards must share one): give its client endpoints as the pods see them, e.g. zk-0.zk:2181 or etcd-0.etcd:2379")
	}
	if f.runID == "" {
		f.runID = "k8s-" + time.Now().UTC().Format("20060102-150405")
	}
	name := cmp.Or(k.name, kube.DefaultName(f.runID))

	// The run's spec, checked as each shard will check it (as shard 0, on
	// the --endpoints); nothing is reached. Each pod gives its own index and
	// output, and takes the secrets from its environment.
	saved := *f
	f.output, f.shardIndex = kube.ResultsMount, 0
	if k.passwordSecret != "" {
		f.password = "from --password-secret" // only to check; never written
	}
	spec, err := f.runSpec(fl)
	*f = saved
	var r *runner.Runner
	if err == nil {
		r, err = runner.NewFromSpec(spec)
	}
	if err != nil {
		return err
	}
	spec.Output = ""
	runSpec, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	perShard := r.MaxShardClients()
	res, err := kube.Resources(k.cpu, k.memory, perShard)
	if err != nil {
		return err
	}
	size, err := resource.ParseQuantity(k.storageSize)
	if err != nil {
		return fmt.Errorf("--storage-size %q: %v", k.storageSize, err)
	}
	pull, err := kube.PullPolicy(k.pullPolicy)
	if err != nil {
		return err
	}
	deadline := k.deadline
	if deadline == 0 {
		deadline = kube.Deadline(r.CaseBounds(), f.shardTimeout)
	}
	m, err := kube.Build(kube.Spec{
		Name: name, Namespace: k.namespace, Image: k.image, PullPolicy: pull,
		Shards: f.shards, RunID: f.runID, RunSpec: string(runSpec) + "\n", NoPlots: f.noPlots,
		Claim: k.claim, StorageSize: size, StorageClass: k.storageClass,
		AccessMode: corev1.PersistentVolumeAccessMode(k.accessMod), // kube.Spec.Check refuses a bad one
		Resources:  res, Deadline: deadline,
		PasswordSecret: k.passwordSecret, TLSSecret: k.tlsSecret, FetchImage: k.fetchImage,
	})
	if err != nil {
		return err
	}
	dir := filepath.Join(k.output, name)
	paths, err := m.WriteDir(dir)
	if err != nil {
		return fmt.Errorf("-o %s: %w", k.output, err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "kube job %s: run %s, %d shards of at most %d clients each, image %s, deadline %v\n",
		name, f.runID, f.shards, perShard, k.image, deadline)
	for _, p := range paths {
		fmt.Fprintf(out, "  %s\n", p)
	}
	m.Spec.WriteNextSteps(out, paths, dir, filepath.Join(runner.DefaultOutput, f.runID))
	return nil
}
