package plots

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zkbench/zkbench/internal/atomicfile"
	"github.com/zkbench/zkbench/results"
)

// ErrNoCharts: the runs hold nothing to plot (no results).
var ErrNoCharts = errors.New("plots: nothing to plot")

// WriteAll builds every figure the runs support (see Build) and writes each
// in every format ("png", "svg") into dir, creating it if needed. It
// returns the paths written, in order. Each file is written to a temporary
// name and renamed, so a reader never sees half an image.
func WriteAll(runs []*results.Run, dir string, formats []string) ([]string, error) {
	for _, f := range formats {
		if !slices.Contains(Formats, f) {
			return nil, fmt.Errorf("plots: format %q: want one of %v", f, Formats)
		}
	}
	if len(formats) == 0 {
		return nil, fmt.Errorf("plots: no format: want some of %v", Formats)
	}
	figs, err := Build(runs)
	if err != nil {
		return nil, err
	}
	if len(figs) == 0 {
		return nil, ErrNoCharts
	}
	if err := results.CheckWritable(dir); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	var paths []string
	for _, f := range figs {
		for _, format := range formats {
			var buf bytes.Buffer
			if err := Render(&buf, f, format); err != nil {
				return paths, err
			}
			path := filepath.Join(dir, f.Name+"."+format)
			if err := writeFile(path, buf.Bytes()); err != nil {
				return paths, err
			}
			paths = append(paths, path)
		}
	}
	return paths, nil
}

// writeFile writes data to path atomically (atomicfile.Write).
func writeFile(path string, data []byte) error {
	if err := atomicfile.Write(path, data); err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	return nil
}

// HgrmFormat is the format that exports every latency histogram as
// HdrHistogram percentile text (results.WriteHgrmFiles) beside the images.
const HgrmFormat = "hgrm"

// WriteFormats draws runs' plots in the image formats among formats (as
// WriteAll) and, with HgrmFormat among them, exports their histograms, all
// into dir. formats is a comma-separated list, as the --format flag takes it.
func WriteFormats(runs []*results.Run, dir, formats string) ([]string, error) {
	var images []string
	hgrm := false
	for _, f := range strings.Split(formats, ",") {
		switch f = strings.ToLower(strings.TrimSpace(f)); {
		case f == "":
		case f == HgrmFormat:
			hgrm = true
		case slices.Contains(Formats, f):
			images = append(images, f)
		default:
			return nil, fmt.Errorf("--format %q: want some of %s, %s", f, strings.Join(Formats, ", "), HgrmFormat)
		}
	}
	var paths []string
	if len(images) > 0 || !hgrm {
		ps, err := WriteAll(runs, dir, images)
		if err != nil {
			return nil, err
		}
		paths = ps
	}
	if hgrm {
		ps, err := results.WriteHgrmFiles(runs, dir)
		if err != nil {
			return paths, err
		}
		paths = append(paths, ps...)
	}
	return paths, nil
}
