package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/results"
)

func newCompareCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Print what changed between two runs, figure by figure",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := results.ReadEach(args)
			if err != nil {
				return err
			}
			c, err := analysis.Compare(runs[0], runs[1])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(c)
			}
			return c.Write(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	return cmd
}
