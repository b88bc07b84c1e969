// Command watchcompare sets zkbench's config workload beside etcd's own
// `benchmark watch-latency` at the same points (make bench-watch): per
// watcher count, each tool run's watch p50/p99 and the persistent variant's
// propagation p50/p99 from the zkbench run, with the ratio of the p99s and
// whether it lies within a tolerance (1.2x by default, either way).
//
//	watchcompare --zkbench RUNDIR [--latency NAMES] [--tolerance 1.2] TOOLOUT...
//
// Each TOOLOUT is the tool's standard output headed by the line
// "# benchmark <its arguments>" (the watcher count and layout come from
// it). The zkbench figures are propagate_start, propagate and, made of
// the two, the reloads counted as the tool counts its events (from the
// put's reply, one that beat the reply as 0: ToolDefinition). A figure the
// zkbench run did not record prints "absent".
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/zkbench/zkbench/results"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// defaultViews are the zkbench figures the table shows unless told.
const defaultViews = "propagate_start,propagate," + ToolDefinition

// splitViews reads a comma-separated list of zkbench figures.
func splitViews(list string) []string {
	var views []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			views = append(views, n)
		}
	}
	return views
}

func run(args []string) error {
	fs := flag.NewFlagSet("watchcompare", flag.ContinueOnError)
	zk := fs.String("zkbench", "", "the zkbench run's folder (or its results.json): config --variants persistent on etcd")
	lat := fs.String("latency", defaultViews, "zkbench figures to compare, comma-separated: latency names of the results file, or \""+ToolDefinition+"\" (from the reply, reloads that beat it as 0, as etcd's tool counts)")
	tol := fs.Float64("tolerance", 1.2, "the ratio zkbench p99 / tool p99 must lie within [1/t, t]")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *zk == "" || fs.NArg() == 0 {
		return fmt.Errorf("usage: watchcompare --zkbench RUNDIR TOOLOUT...")
	}
	if *tol < 1 {
		return fmt.Errorf("watchcompare: --tolerance %g: want at least 1", *tol)
	}
	views := splitViews(*lat)
	tools, err := readTools(fs.Args())
	if err != nil {
		return err
	}
	runs, err := results.ReadPaths([]string{*zk})
	if err != nil {
		return err
	}
	rows, warnings, err := Compare(tools, runs[0], views)
	if err != nil {
		return err
	}
	if err := WriteTable(os.Stdout, rows, *tol); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, w := range warnings {
		if !seen[w] {
			seen[w] = true
			fmt.Fprintln(os.Stdout, "warning: not the same point:", w)
		}
	}
	return nil
}
