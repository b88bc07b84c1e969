package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/results"
)

// summaryFlags are how a command prints a run's summary (run, merge,
// summary): --format and --wide.
type summaryFlags struct {
	format analysis.SummaryFormat
	wide   bool
}

func (s *summaryFlags) add(fl *pflag.FlagSet) {
	s.format = analysis.SummaryText
	fl.Var(&s.format, "format", "summary format: "+analysis.SummaryFormatNames()+
		" (text fits 120 columns; csv, json and markdown hold every column)")
	fl.BoolVar(&s.wide, "wide", false, "text: print every column of the summary table, not only those that fit 120 columns")
}

// options are the flags as analysis.SummaryOptions; --wide is for text.
func (s *summaryFlags) options() (analysis.SummaryOptions, error) {
	if s.wide && s.format != analysis.SummaryText {
		return analysis.SummaryOptions{}, fmt.Errorf("--wide: --format %s prints every column already; --wide widens the text table", s.format)
	}
	return analysis.SummaryOptions{Format: s.format, Wide: s.wide}, nil
}

// others is where a command prints its lines other than the summary: its
// stdout for text, stderr for csv, json and markdown, so that stdout holds
// the summary alone.
func (s *summaryFlags) others(stdout, stderr io.Writer) io.Writer {
	if s.format == analysis.SummaryText {
		return stdout
	}
	return stderr
}

// moreColumns tells a reader of the narrow text table of the run in dir
// where the other columns are, "" when they see them already.
func (s *summaryFlags) moreColumns(dir string) string {
	if s.format != analysis.SummaryText || s.wide {
		return ""
	}
	return fmt.Sprintf("every column: zkbench summary --wide %s (or --format csv|json|markdown)", dir)
}

func newSummaryCmd() *cobra.Command {
	var sf summaryFlags
	cmd := &cobra.Command{
		Use:   "summary RESULTS",
		Short: "Print a run's summary from its results file: the verdict, its cases, findings and notes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := sf.options()
			if err != nil {
				return err
			}
			runs, err := results.ReadPaths(args)
			if err != nil {
				return err
			}
			return analysis.WriteSummary(cmd.OutOrStdout(), runs[0], opts)
		},
	}
	sf.add(cmd.Flags())
	return cmd
}
