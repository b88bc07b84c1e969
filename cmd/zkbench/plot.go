package main

import (
	"fmt"
	"slices"
	"strings"

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
			paths, err := writeFigures(runs, out, splitFormats(formats))
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

// writeFigures draws runs' plots in the image formats among formats and,
// with "hgrm", exports their histograms, all into dir.
func writeFigures(runs []*results.Run, dir string, formats []string) ([]string, error) {
	for _, f := range formats {
		if f != "hgrm" && !slices.Contains(plots.Formats, f) {
			return nil, fmt.Errorf("--format %q: want some of %s, hgrm", f, strings.Join(plots.Formats, ", "))
		}
	}
	images := slices.DeleteFunc(slices.Clone(formats), func(f string) bool { return f == "hgrm" })
	var paths []string
	if len(images) > 0 || len(formats) == 0 {
		ps, err := plots.WriteAll(runs, dir, images)
		if err != nil {
			return nil, err
		}
		paths = ps
	}
	if slices.Contains(formats, "hgrm") {
		ps, err := results.WriteHgrmFiles(runs, dir)
		if err != nil {
			return paths, err
		}
		paths = append(paths, ps...)
	}
	return paths, nil
}

func splitFormats(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" {
			out = append(out, f)
		}
	}
	return out
}
