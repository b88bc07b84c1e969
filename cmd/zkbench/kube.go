package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	dockercluster "github.com/zkbench/zkbench/cluster/docker"
	"github.com/zkbench/zkbench/kube"
	"github.com/zkbench/zkbench/runflags"
	"github.com/zkbench/zkbench/runner"
)

func newKubeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kube",
		Short: "Run zkbench on Kubernetes: a sharded run as an Indexed Job",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newKubeJobCmd(), newKubeRunCmd(), newKubeArchiveCmd())
	return cmd
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
	var k *runflags.KubeJob
	cmd := &cobra.Command{
		Use:   "job [run flags] --shards S --endpoints HOST:PORT,... [-o DIR]",
		Short: "Write an Indexed Job that runs a sharded zkbench run, and its merge",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runKubeJob(cmd, k)
		},
	}
	k = runflags.BindKubeJob(cmd.Flags(), defaultImage())
	cmd.Flags().StringVarP(&k.Output, "output", "o", "k8s", "folder for the manifests; writes <output>/<name>/*.yaml")
	return cmd
}

func runKubeJob(cmd *cobra.Command, k *runflags.KubeJob) error {
	m, perShard, err := k.Manifests(cmd.Flags())
	if err != nil {
		return err
	}
	dir := filepath.Join(k.Output, m.Spec.Name)
	paths, err := m.WriteDir(dir)
	if err != nil {
		return fmt.Errorf("-o %s: %w", k.Output, err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "kube job %s: run %s, %d shards of at most %d clients each, image %s, deadline %v\n",
		m.Spec.Name, k.RunID, k.Shards, perShard, k.Image, m.Spec.Deadline)
	for _, p := range paths {
		fmt.Fprintf(out, "  %s\n", p)
	}
	m.Spec.WriteNextSteps(out, paths, dir, filepath.Join(runner.DefaultOutput, k.RunID))
	return nil
}

// newKubeArchiveCmd is what the fetch pod runs: the zkbench image has no
// tar for kubectl cp, so the merged results leave the volume through the
// pod's log.
func newKubeArchiveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "archive DIR",
		Short: "Write DIR as base64 lines of a tar.gz to stdout (the fetch pod's log)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return kube.WriteArchive(cmd.OutOrStdout(), args[0])
		},
	}
}
