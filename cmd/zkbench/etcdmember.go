package main

import (
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
)

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
