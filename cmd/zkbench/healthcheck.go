package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/runner"
)

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
			k, err := parseKind(kind, false)
			if err != nil {
				return err
			}
			b, err := runner.NewBackend(k, runner.Servers{Endpoints: strings.Split(endpoints, ",")})
			if err != nil {
				return err
			}
			defer b.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			info, err := b.Preflight(ctx)
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
