package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/internal/testenv/testresults"
	"github.com/zkbench/zkbench/results"
)

func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	out, err := execute(t, "plot", testresults.Path("lock-zookeeper.json"), testresults.Path("lock-etcd.json"), "-o", dir, "--format", "svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lock-fanout.svg", "lock-throughput.svg", "lock-latency-acquire.svg", "lock-timeline.svg"} {
		p := filepath.Join(dir, name)
		if !strings.Contains(out, p) {
			t.Errorf("output does not list %s", p)
		}
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.png")); len(m) != 0 {
		t.Errorf("--format svg wrote %v", m)
	}
	if _, err := execute(t, "plot", testresults.Path("lock-etcd.json"), "-o", dir, "--format", "gif"); err == nil {
		t.Error("plot accepted --format gif")
	}
	if _, err := execute(t, "plot"); err == nil {
		t.Error("plot without RESULTS did not fail")
	}
}

// TestPlotHgrm exports every latency histogram of a kept run as .hgrm.
func TestPlotHgrm(t *testing.T) {
	dir := t.TempDir()
	out, err := execute(t, "plot", filepath.Join("..", "..", "docs", "runs", "lock-etcd"), "-o", dir, "--format", "hgrm")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.hgrm"))
	if len(files) == 0 || len(files) != strings.Count(out, ".hgrm") {
		t.Fatalf("%d .hgrm files; output:\n%s", len(files), out)
	}
	if imgs, _ := filepath.Glob(filepath.Join(dir, "*.png")); len(imgs) != 0 {
		t.Errorf("--format hgrm drew %v", imgs)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "etcd-lock-fair-1000-1.acquire.hgrm"))
	if err != nil || !strings.Contains(string(raw), "Percentile") || !strings.Contains(string(raw), "#[Max") {
		t.Errorf("acquire histogram at 1,000 clients: %v\n%s", err, raw)
	}
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	// A run folder stands for its results.json.
	runDir := filepath.Join(t.TempDir(), "run-1")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(testresults.Path("lock-etcd.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, results.FileName), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := execute(t, "report", testresults.Path("lock-zookeeper.json"), runDir, "-o", dir,
		"--target-p99", "20ms", "--target-rate", "100", "--at-clients", "500", "--target-handoff", "5ms"); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no latency target (p99 ≤ 20 ms) is answered", "longer than 5 ms at p99", "| lock | etcd | fair | 500 | 100 | target |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Error(err)
	}
	if _, err := execute(t, "report", testresults.Path("lock-etcd.json"), "--target-p99", "0s", "-o", dir); err == nil {
		t.Error("report accepted --target-p99 0s")
	}
	if _, err := execute(t, "report", testresults.Path("lock-etcd.json"), "--target-handoff", "0s", "-o", dir); err == nil {
		t.Error("report accepted --target-handoff 0s")
	}
	_, err = execute(t, "report", filepath.Join(dir, "missing.json"), "-o", dir)
	if err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
	// One run twice would count its cases as two repeats.
	_, err = execute(t, "report", testresults.Path("lock-etcd.json"), testresults.Path("lock-etcd.json"), "-o", dir)
	if err == nil || !strings.Contains(err.Error(), "hold the same run") {
		t.Errorf("report of one run twice: %v", err)
	}
}

func TestCompareCommand(t *testing.T) {
	out, err := execute(t, "compare", testresults.Path("lock-zookeeper.json"), testresults.Path("lock-zookeeper.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "18 case(s) in both runs") || !strings.Contains(out, "lock / zookeeper / naive / 64 clients") || strings.Contains(out, " *\n") {
		t.Errorf("comparing a run with itself:\n%s", out)
	}
	out, err = execute(t, "compare", testresults.Path("lock-zookeeper.json"), testresults.Path("lock-etcd.json"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Cases []struct {
			Rows []map[string]any `json:"rows"`
		} `json:"cases"`
		Setup []string `json:"setup"`
	}
	if err := json.Unmarshal([]byte(out), &parsed); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%.400s", err, out)
	}
	if len(parsed.Cases) != 18 || len(parsed.Cases[0].Rows) == 0 || len(parsed.Setup) == 0 {
		t.Errorf("--json: %d cases, setup %q", len(parsed.Cases), parsed.Setup)
	}
	if _, err := execute(t, "compare", testresults.Path("lock-zookeeper.json")); err == nil {
		t.Error("compare with one file did not fail")
	}
}
