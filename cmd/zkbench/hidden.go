package main

import (
	"fmt"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

// The hidden commands zkbench re-executes itself with, or a container runs.

// newEtcdMemberCmd is the hidden command that runs one etcd member process
// for cluster/etcd's StartLocal: zkbench re-executes itself with it, so a
// local etcd cluster needs no etcd install. It runs until SIGTERM or SIGINT,
// then closes the member cleanly.
func newEtcdMemberCmd() *cobra.Command {
	return &cobra.Command{
		Use:    etcdcluster.MemberCommand + " --name N --data-dir D --listen-client URL --listen-peer URL --initial-cluster N=URL,...",
		Short:  "Run one etcd member (used by zkbench itself)",
		Hidden: true,
		// The flags are cluster/etcd's own (ParseMemberArgs), so that its
		// tests can run a member from their own binary as well.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := etcdcluster.ParseMemberArgs(args)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return etcdcluster.RunMember(ctx, cfg)
		},
	}
}

// newHealthcheckCmd is the hidden command a container's health check runs
// (docker/compose.yaml: the zkbench image has no shell): it preflights the
// cluster at --endpoints once, within --timeout, and exits 0 when every
// member answers.
func newHealthcheckCmd() *cobra.Command {
	var (
		kind      string
		endpoints string
		timeout   time.Duration
	)
	cmd := &cobra.Command{
		Use:    "__healthcheck --backend zookeeper|etcd --endpoints A,B,C",
		Short:  "Exit 0 when the cluster at --endpoints answers (a container health check)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := runner.ParseBackend(kind, false)
			if err != nil {
				return err
			}
			info, err := runner.Healthcheck(cmd.Context(), k, strings.Split(endpoints, ","), timeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "healthy: %d member(s)\n", len(info.Members))
			return nil
		},
	}
	cmd.Flags().StringVar(&kind, "backend", "etcd", "zookeeper or etcd")
	cmd.Flags().StringVar(&endpoints, "endpoints", "", "the members to check, comma-separated")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answers")
	_ = cmd.MarkFlagRequired("endpoints")
	return cmd
}

// newLockWorkerCmd is the hidden command that runs one lock client in a
// process of its own, for pause-client faults: `zkbench run` re-executes
// itself with it (workloads.ClientProcesses) and SIGSTOPs it for the
// pause. Its configuration comes as JSON on stdin, not in argv, so that a
// password stays out of the process list; it exits when stdin closes (after
// releasing the lock), when its session is lost, or on SIGTERM or SIGINT.
func newLockWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    workloads.LockWorkerCommand,
		Short:  "Run one lock client (used by zkbench run for pause-client faults)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return workloads.RunLockWorker(ctx, runner.OpenLockWorkerBackend, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
}

// lockWorkerEnv is added to a worker's environment (tests set it so that
// their binary runs main; see run_test.go's TestMain).
var lockWorkerEnv []string
