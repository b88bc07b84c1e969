package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/zkbench/zkbench/results"
)

// resultsFileName is what `zkbench run` writes in its run folder.
const resultsFileName = "results.json"

// readResultsArgs reads the results files named on the command line. A
// folder stands for the results.json inside it (a run's own folder).
func readResultsArgs(args []string) ([]*results.Run, error) {
	runs := make([]*results.Run, 0, len(args))
	for _, a := range args {
		p := a
		if st, err := os.Stat(a); err == nil && st.IsDir() {
			p = filepath.Join(a, resultsFileName)
		}
		r, err := results.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w (give a results file, or a run folder holding %s)", err, resultsFileName)
		}
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}
