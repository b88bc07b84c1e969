package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/runflags"
)

func newCleanCmd() *cobra.Command {
	var f *runflags.Clean
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what interrupted runs left: namespaces under /zkbench, clusters in Docker",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.Spec(cmd.Flags())
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return c.Run(ctx, cmd.OutOrStdout())
		},
	}
	f = runflags.BindClean(cmd.Flags())
	return cmd
}
