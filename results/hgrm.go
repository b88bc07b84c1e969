package results

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zkbench/zkbench/figures"
)

// HgrmScale is the value unit of the .hgrm exports: histograms hold
// nanoseconds, the files say milliseconds, as HdrHistogram's own plotter
// (HistogramLogAnalyzer, the online plotter) expects.
const HgrmScale = 1e6

// WriteHgrm writes hs in HdrHistogram's percentile distribution text
// (the .hgrm format: Value, Percentile, TotalCount, 1/(1-Percentile), with
// the Mean/StdDeviation/Max/Total footer), values in milliseconds.
func WriteHgrm(w io.Writer, hs *Histogram) error {
	h, err := hs.Decode()
	if err != nil {
		return err
	}
	_, err = h.PercentilesPrint(w, 5, HgrmScale)
	return err
}

// WriteHgrmFiles writes every latency histogram of runs into dir, one .hgrm
// file each named <backend>-<workload>-<variant>-<clients>-<repeat>.<name>.hgrm
// (prefixed with the run id when runs holds several runs), and returns
// their paths. ErrNoHistograms: no case has a histogram with a value.
func WriteHgrmFiles(runs []*Run, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	var paths []string
	for _, run := range runs {
		for _, res := range run.Results {
			names := make([]figures.Latency, 0, len(res.Latency))
			for n, h := range res.Latency {
				if h != nil && h.Count > 0 {
					names = append(names, n)
				}
			}
			slices.Sort(names)
			for _, n := range names {
				base := fmt.Sprintf("%s-%s-%s-%d-%d.%s.hgrm", res.Backend, res.Workload, res.Variant, res.Clients, res.Repeat, n)
				if len(runs) > 1 {
					base = run.ID + "-" + base
				}
				var b bytes.Buffer
				if err := WriteHgrm(&b, res.Latency[n]); err != nil {
					return paths, fmt.Errorf("%s: %w", base, err)
				}
				path := filepath.Join(dir, strings.ReplaceAll(base, string(filepath.Separator), "_"))
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					return paths, fmt.Errorf("results: %w", err)
				}
				paths = append(paths, path)
			}
		}
	}
	if len(paths) == 0 {
		return nil, ErrNoHistograms
	}
	return paths, nil
}

// ErrNoHistograms: there was no latency histogram to export.
var ErrNoHistograms = errors.New("results: no latency histogram with a value")
