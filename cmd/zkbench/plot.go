package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/plots"
	"github.com/zkbench/zkbench/results"
)

func newPlotCmd() *cobra.Command {
	var out, formats string
	cmd := &cobra.Command{
		Use:   "plot RESULTS...",
		Short: "Draw the plots of one or more results files",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := results.ReadPaths(args)
			if err != nil {
				return err
			}
			paths, err := plots.WriteFormats(runs, out, formats)
			if err != nil {
				return err
			}
			for _, p := range paths {
				fmt.Fprintln(cmd.OutOrStdout(), p)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "plots", "folder to write the plots into (created if missing)")
	cmd.Flags().StringVar(&formats, "format", "png,svg", "formats, comma-separated: png, svg (plots), hgrm (HdrHistogram percentile text of every latency histogram)")
	return cmd
}
