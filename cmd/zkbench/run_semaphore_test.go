package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/results"
)

// TestRunSemaphore: zkbench run --workload semaphore --permits 3 sweeps
// both variants on the embedded etcd; every case keeps at most three
// holders, its parameters say so, and the verdict compares naive with
// fair. Cases end after 20 acquisitions (a minute's backstop for a loaded
// machine).
func TestRunSemaphore(t *testing.T) {
	dir := t.TempDir()
	out, stderr, err := zkbench(t, "run", "--workload", "semaphore", "--permits", "3", "--clients", "5,8",
		"--ops", "20", "--duration", "60s", "--warmup", "0s", "--hold", "5ms", "-o", dir, "--run-id", "sem", "--no-plots")
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr)
	}
	run, err := results.ReadFile(filepath.Join(dir, "sem", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != results.StatusComplete || len(run.Results) != 4 || run.Config.Params["permits"] != "3" {
		t.Fatalf("status %s, %d results, params %v", run.Status, len(run.Results), run.Config.Params)
	}
	for _, res := range run.Results {
		if res.Workload != "semaphore" || res.Ops.Succeeded < 20 || res.Safety.Violations != 0 {
			t.Errorf("%s/%d: workload %s, ops %+v, safety %+v", res.Variant, res.Clients, res.Workload, res.Ops, res.Safety)
		}
	}
	if len(run.Leftovers) != 0 {
		t.Errorf("leftovers: %v", run.Leftovers)
	}
	if !strings.Contains(out, "semaphore on etcd: naive wakes ") {
		t.Errorf("no verdict naive against fair:\n%s", out)
	}
}

// TestRunSemaphoreFlags: --permits belongs to the semaphore workload and
// wants a whole number of at least 1.
func TestRunSemaphoreFlags(t *testing.T) {
	runBadInput(t, []badInput{
		{"permits on a lock", []string{"--permits", "3"}, "--permits: the lock workload does not read it"},
		{"no permits", []string{"--workload", "semaphore", "--permits", "0"}, "want a whole number of at least 1"},
	})
}
