package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/zkbench/zkbench/kube"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runflags"
	"github.com/zkbench/zkbench/runner"
)

// kubeRun are `zkbench kube run`'s flags: kube job's (but -o, here the
// results' folder), the cluster's and how the fetched run is shown.
type kubeRun struct {
	*runflags.KubeJob
	kubeconfig, context string
	keep                bool
	summary             summaryFlags // --format, --wide
	// newClient makes the cluster's client (kube.Connect).
	newClient func(*rest.Config) (kubernetes.Interface, error)
}

// cleanupTimeout bounds the deletion of the run's objects, after an
// interrupt too.
const cleanupTimeout = 30 * time.Second

func newKubeRunCmd() *cobra.Command { return newKubeRunCmdWith(nil) }

// newKubeRunCmdWith is kube run reaching the cluster with newClient (nil:
// kubernetes.NewForConfig).
func newKubeRunCmdWith(newClient func(*rest.Config) (kubernetes.Interface, error)) *cobra.Command {
	f := &kubeRun{newClient: newClient}
	cmd := &cobra.Command{
		Use:   "run [run flags] --shards S --endpoints HOST:PORT,... [--kubeconfig PATH] [--context NAME] [--keep]",
		Short: "Run a sharded run on Kubernetes, then fetch, summarize and plot its merged results",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runKubeRun(cmd, f)
		},
	}
	fl := cmd.Flags()
	f.KubeJob = runflags.BindKubeJob(fl, defaultImage())
	fl.StringVarP(&f.Output, "output", "o", runner.DefaultOutput, "folder for the fetched results; writes <output>/<run-id>/results.json"+runner.OutputHelp)
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: as kubectl, $KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&f.context, "context", "", "the kubeconfig's context to use (default: its current context)")
	fl.BoolVar(&f.keep, "keep", false, "leave the objects the run created in the cluster (default: delete them at the end; the claim holds the shards' files)")
	f.summary.add(fl)
	return cmd
}

// runKubeRun is `zkbench kube run`: the manifests of kube job, created in
// the cluster, waited for, merged and fetched into <output>/<run-id>, then
// shown as `zkbench merge` shows a merged run; what it created is deleted
// at the end, after an error or an interrupt too, unless --keep.
func runKubeRun(cmd *cobra.Command, f *kubeRun) error {
	if _, err := f.summary.options(); err != nil {
		return err
	}
	// The merge in the cluster draws no plots: they are drawn here, from
	// the fetched run, unless --no-plots (and the archive stays small).
	plots := !f.NoPlots
	f.NoPlots = true
	m, perShard, err := f.Manifests(cmd.Flags())
	if err != nil {
		return err
	}
	client, server, namespace, err := kube.Connect(f.kubeconfig, f.context, "zkbench/"+version, f.newClient)
	if err != nil {
		return err
	}
	m.Spec.Namespace = cmp.Or(f.Namespace, namespace)
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	c := kube.NewClusterRun(client, m, kube.WithProgress(stderr), kube.WithServer(server))
	fmt.Fprintf(stderr, "kube run %s: run %s, %d shards of at most %d clients each, image %s, deadline %v, namespace %s on %s\n",
		m.Spec.Name, f.RunID, f.Shards, perShard, f.Image, m.Spec.Deadline, c.Namespace(), server)

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := filepath.Join(f.Output, f.RunID)
	fetched, runErr := c.Run(ctx, dir)
	interrupted := ctx.Err() != nil
	stop() // a second Ctrl-C ends zkbench at once, leaving the objects
	cleanErr := c.Cleanup(f.keep, interrupted, cleanupTimeout, stderr)
	if !fetched {
		return errors.Join(runErr, cleanErr)
	}
	path := filepath.Join(dir, results.FileName)
	run, err := results.ReadFile(path)
	if err != nil {
		return errors.Join(runErr, cleanErr, err)
	}
	fmt.Fprintln(stderr)
	return errors.Join(runErr, cleanErr, f.summary.showMerged(stdout, stderr, run, dir, path, plots))
}
