package report

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/plots"
	"github.com/zkbench/zkbench/results"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current report")

// markdownOf is the Markdown report of the results files at paths,
// without plots.
func markdownOf(t *testing.T, paths ...string) *bytes.Buffer {
	t.Helper()
	d, err := Build(readRuns(t, paths...), Options{NoPlots: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := d.Markdown(&out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// docsRuns lists the kept runs' results files, docs/runs/*/results.json.
func docsRuns(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "docs", "runs", "*", "results.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no docs/runs/*/results.json (%v)", err)
	}
	return paths
}

func readRuns(t *testing.T, paths ...string) []*results.Run {
	t.Helper()
	var runs []*results.Run
	for _, p := range paths {
		r, err := results.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	return runs
}

// TestMarkdownGolden renders report.md (without plots, whose pictures the
// plots package's goldens hold) of fixed inputs and compares it with
// testdata/<name>.md.golden, so that no table, figure or sentence changes
// silently. go test ./report -update rewrites the golden files.
func TestMarkdownGolden(t *testing.T) {
	t.Parallel()
	type input struct {
		name  string
		paths []string
	}
	var synthetic, measured []string
	for _, n := range testresults.Files {
		synthetic = append(synthetic, testresults.Path(n))
	}
	for _, n := range testresults.Measured {
		measured = append(measured, testresults.Path(n))
	}
	inputs := []input{{"synthetic", synthetic}, {"measured", measured}}
	for _, p := range docsRuns(t) {
		inputs = append(inputs, input{"docs-runs-" + filepath.Base(filepath.Dir(p)), []string{p}})
	}
	// The config workload's size sweep together: the watchers-within-target
	// table answers per size.
	if cfg, _ := filepath.Glob(filepath.Join("..", "docs", "runs", "config-*", "results.json")); len(cfg) > 0 {
		inputs = append(inputs, input{"docs-runs-config-sizes", cfg})
	}
	// The capacity-planning runs of one backend together: the latency
	// targets table gives zkbench plan's prediction of each validation run
	// from the sweep and the idle runs, with the model's kept error.
	if plan, _ := filepath.Glob(filepath.Join("..", "docs", "runs", "plan-zk-*", "results.json")); len(plan) > 0 {
		idle, _ := filepath.Glob(filepath.Join("..", "docs", "runs", "idle-zookeeper-r*", "results.json"))
		inputs = append(inputs, input{"docs-runs-plan-zookeeper",
			append(append([]string{filepath.Join("..", "docs", "runs", "usl-zookeeper", "results.json")}, idle...), plan...)})
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			got := markdownOf(t, in.paths...)
			golden := filepath.Join("testdata", in.name+".md.golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./report -update to write it)", err)
			}
			if line, g, w, differ := firstDiff(got.String(), string(want)); differ {
				t.Errorf("report.md differs from %s at line %d:\n got: %s\nwant: %s\n(if the change is meant, run go test ./report -update and review the diff)",
					golden, line, g, w)
			}
		})
	}
}

// firstDiff returns the first line (1-based) at which got and want differ.
func firstDiff(got, want string) (line int, g, w string, differ bool) {
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		g, w = "<end>", "<end>"
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return i + 1, g, w, true
		}
	}
	return 0, "", "", false
}

// TestDocsRuns: every kept run in docs/runs still reads and reports, the
// report links each of its figures, and every figure draws (as SVG: the
// same layout, axes, text and legend as the PNG, through the same drawing
// calls, without rasterising 600 images under the race detector, which
// took four minutes). TestKeptRunReport writes a whole report, PNGs and
// HTML included, and opens it in a browser.
func TestDocsRuns(t *testing.T) {
	t.Parallel()
	for _, p := range docsRuns(t) {
		t.Run(filepath.Base(filepath.Dir(p)), func(t *testing.T) {
			runs := readRuns(t, p)
			d, err := Build(runs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var md bytes.Buffer
			if err := d.Markdown(&md); err != nil {
				t.Fatal(err)
			}
			var images []Image
			for _, bl := range d.Blocks {
				if img, ok := bl.(Image); ok {
					images = append(images, img)
				}
			}
			if len(images) == 0 {
				t.Fatal("the report has no plots")
			}
			if n := bytes.Count(md.Bytes(), []byte("]("+PlotsDir+"/")); n != len(images) {
				t.Errorf("report.md links %d plots, the report has %d", n, len(images))
			}
			for _, img := range images {
				if err := plots.Render(io.Discard, img.Chart, "svg"); err != nil {
					t.Errorf("%s: %v", img.Name, err)
				}
			}
		})
	}
}
