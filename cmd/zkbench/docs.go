package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/docsgen"
)

func newDocsCmd() *cobra.Command {
	var runs string
	var check bool
	long, _ := help("docs") // "" with no file: TestEveryCommandHasHelp fails then
	cmd := &cobra.Command{
		Use:   "docs FILE...",
		Short: "Write the published tables of markdown files from the kept runs' results files",
		Long:  long + " Tables: " + strings.Join(docsgen.Names(), ", ") + ".",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var stale []string
			for _, f := range args {
				names, changed, err := docsgen.RewriteFile(f, runs, check)
				switch {
				case err != nil:
					return err
				case !changed:
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %d tables, as published\n", f, len(names))
				case check:
					stale = append(stale, f)
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %d tables written (%s)\n", f, len(names), strings.Join(names, ", "))
				}
			}
			if len(stale) > 0 {
				return fmt.Errorf("%w: %s", docsgen.ErrStale, strings.Join(stale, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runs, "runs", "docs/runs", "the directory of the kept runs (one results.json a run)")
	cmd.Flags().BoolVar(&check, "check", false, "write nothing; fail when a table differs from its results files")
	return cmd
}
