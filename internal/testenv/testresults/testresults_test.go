package testresults

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/results"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the generator")

// TestCommittedFiles checks that the committed files decode and, while they
// are synthetic, that they are what the generator makes (run with -update
// after changing it).
func TestCommittedFiles(t *testing.T) {
	for _, name := range Files {
		t.Run(name, func(t *testing.T) {
			gen, err := Generate(name)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.MarshalIndent(gen, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, '\n')
			if *update {
				if err := os.WriteFile(Path(name), want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run, err := results.ReadFile(Path(name))
			if err != nil {
				t.Fatal(err)
			}
			if len(run.Results) == 0 {
				t.Fatal("no results")
			}
			if !strings.Contains(run.Tool, "generator") {
				return // a real run replaced the synthetic one
			}
			got, err := os.ReadFile(Path(name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from the generator's output; run go test ./internal/testenv/testresults -update", name)
			}
		})
	}
}

func TestMeasuredFiles(t *testing.T) {
	for _, name := range Measured {
		run, err := results.ReadFile(Path(name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(run.Tool, "generator") || run.Status != results.StatusComplete || len(run.Results) != 9 {
			t.Fatalf("%s: tool %q, status %s, %d results", name, run.Tool, run.Status, len(run.Results))
		}
	}
}
