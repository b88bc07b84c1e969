package main

import (
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zkbench/zkbench/analysis"
)

// TestSummaryCommand prints the summary of kept runs (a 3-count sweep and
// the 7-count usl-etcd) in every format.
func TestSummaryCommand(t *testing.T) {
	for _, kept := range []string{"lock-etcd", "usl-etcd"} {
		dir := filepath.Join("..", "..", "docs", "runs", kept)
		out, stderr, err := zkbench(t, "summary", dir)
		if err != nil {
			t.Fatalf("summary %s: %v\n%s", kept, err, stderr)
		}
		if !strings.HasPrefix(out, "verdict:\n  lock on etcd: naive wakes ") {
			t.Errorf("%s: the summary does not begin with the herd in words:\n%s", kept, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if utf8.RuneCountInString(l) > analysis.SummaryWidth {
				t.Errorf("%s: a line of %d characters: %q", kept, utf8.RuneCountInString(l), l)
			}
		}
		wide, _, err := zkbench(t, "summary", "--wide", dir)
		if err != nil || !strings.Contains(wide, "stopped by") || !strings.Contains(wide, "B/op rx cli|srv tx") {
			t.Errorf("%s --wide (%v):\n%s", kept, err, wide)
		}
		raw, _, err := zkbench(t, "summary", "--format", "csv", filepath.Join(dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		if records, err := csv.NewReader(strings.NewReader(raw)).ReadAll(); err != nil || len(records) < 2 || records[0][0] != "backend" {
			t.Errorf("%s csv (%v):\n%s", kept, err, raw)
		}
		raw, _, err = zkbench(t, "summary", "--format", "json", dir)
		var js struct{ Verdict []string }
		if err != nil || json.Unmarshal([]byte(raw), &js) != nil || len(js.Verdict) < 2 {
			t.Errorf("%s json (%v):\n%s", kept, err, raw)
		}
		raw, _, err = zkbench(t, "summary", "--format", "markdown", dir)
		if err != nil || !strings.Contains(raw, "\n| --- |") {
			t.Errorf("%s markdown (%v):\n%s", kept, err, raw)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "xml"}, `"xml": want text, csv, json or markdown`},
		{[]string{"--format", "csv", "--wide"}, "--wide: --format csv prints every column already"},
	} {
		_, _, err := zkbench(t, append([]string{"summary", filepath.Join("..", "..", "docs", "runs", "lock-etcd")}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("summary %v: %v, want an error mentioning %q", tc.args, err, tc.want)
		}
	}
	if _, _, err := zkbench(t, "summary"); err == nil {
		t.Error("summary without RESULTS did not fail")
	}
}

// TestSummaryFlagsRefused: run and merge refuse a --format they do not
// know and --wide beside a format that has every column, before they run or
// read anything.
func TestSummaryFlagsRefused(t *testing.T) {
	runBadInput(t, []badInput{
		{"unknown format", []string{"--format", "yaml"}, `"yaml": want text, csv, json or markdown`},
		{"wide json", []string{"--format", "json", "--wide"}, "--wide: --format json prints every column already"},
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "html"}, `"html": want text, csv, json or markdown`},
		{[]string{"--format", "markdown", "--wide"}, "--wide: --format markdown prints every column already"},
	} {
		_, _, err := zkbench(t, append([]string{"merge", "-o", t.TempDir(), "no-such-shard.json"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("merge %v: %v, want an error mentioning %q", tc.args, err, tc.want)
		}
	}
}
