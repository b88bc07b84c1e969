package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

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
	// newClient makes the cluster's client (kubernetes.NewForConfig; tests
	// give a fake clientset).
	newClient func(*rest.Config) (kubernetes.Interface, error)
}

// cleanupTimeout bounds the deletion of the run's objects, after an
// interrupt too.
const cleanupTimeout = 30 * time.Second

func newKubeRunCmd() *cobra.Command {
	return newKubeRunCmdWith(func(cfg *rest.Config) (kubernetes.Interface, error) {
		return kubernetes.NewForConfig(cfg)
	})
}

// newKubeRunCmdWith is kube run reaching the cluster with newClient.
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
	cfg, server, namespace, err := f.clientConfig()
	if err != nil {
		return err
	}
	client, err := f.newClient(cfg)
	if err != nil {
		return fmt.Errorf("kube: %s: %w", server, err)
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
	cleanErr := f.cleanup(c, interrupted, stderr)
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

// clientConfig loads the kubeconfig as kubectl does ($KUBECONFIG, else
// ~/.kube/config; --kubeconfig and --context override; in a pod, its
// service account), and says which server and namespace it names.
func (f *kubeRun) clientConfig() (cfg *rest.Config, server, namespace string, err error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
	cfg, err = cc.ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, "", "", errors.New("no kubeconfig: give --kubeconfig PATH, set $KUBECONFIG, or write ~/.kube/config (the file kubectl reads; `kubectl config view` shows it)")
	case err != nil:
		return nil, "", "", fmt.Errorf("kubeconfig: %w (`kubectl config view` shows what kubectl reads; --kubeconfig and --context choose another)", err)
	}
	cfg.UserAgent = "zkbench/" + version
	server = cfg.Host
	if raw, err := cc.RawConfig(); err == nil {
		if name := cmp.Or(f.context, raw.CurrentContext); name != "" {
			server += " (context " + name + ")"
		}
	}
	namespace, _, err = cc.Namespace()
	if err != nil {
		return nil, "", "", fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, server, namespace, nil
}

// cleanup deletes what c created, on a fresh context (the run's may be
// cancelled), unless --keep; either way it says what.
func (f *kubeRun) cleanup(c *kube.ClusterRun, interrupted bool, w io.Writer) error {
	created := c.Created()
	if len(created) == 0 {
		return nil
	}
	ns := c.Namespace()
	if f.keep {
		slices.Reverse(created) // as Delete deletes them: the pods before the claim they hold
		fmt.Fprintf(w, "kept (--keep): %s; delete them with: kubectl -n %s delete %s\n",
			strings.Join(created, ", "), ns, strings.Join(created, " "))
		return nil
	}
	if interrupted {
		fmt.Fprintf(w, "\nzkbench: interrupted: deleting %s (the shards stop; Ctrl-C again to leave them)\n", strings.Join(created, ", "))
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := c.Delete(ctx); err != nil {
		left := c.Created()
		return fmt.Errorf("%w (left: kubectl -n %s delete %s)", err, ns, strings.Join(left, " "))
	}
	return nil
}
