package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/kube"
	"github.com/zkbench/zkbench/results"
)

// localShards makes `zkbench run --shards` start this test binary as its
// shards (see TestMain).
func localShards(t *testing.T) {
	lockWorkerEnv = []string{"ZKBENCH_TEST_MAIN=1"}
	t.Cleanup(func() { lockWorkerEnv = nil })
}

// fewGrants says which case of the run at path had fewer than 10 grants
// ("" when none had).
func fewGrants(t *testing.T, path string) string {
	t.Helper()
	run, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range run.Results {
		if res.Ops.Succeeded < 10 {
			return fmt.Sprintf("%s: %d grants", res.Variant, res.Ops.Succeeded)
		}
	}
	return ""
}

// TestRunLocalShards runs `zkbench run --shards 2` on each backend: the
// parent starts the servers and two shard processes, and writes the merged
// results, which read like a run of one process; `zkbench merge` of the
// shards' own files gives the same counts.
func TestRunLocalShards(t *testing.T) {
	localShards(t)
	for _, backend := range []string{"etcd", "zookeeper"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "zookeeper" && testing.Short() {
				t.Skip("starts a ZooKeeper JVM")
			}
			const clients = 16
			// The checks below need grants in every case, enough for a
			// per-grant figure: a loaded machine can give a 1.5 s case none
			// (runner's TestShardsHerdSpansShards saw that beside two busy
			// loops), so such a run is repeated with a window three times
			// as long, twice at most.
			var dir, out, stderr string
			testcluster.Widen(t, 1500*time.Millisecond, func(window time.Duration) string {
				dir = t.TempDir()
				var err error
				out, stderr, err = zkbench(t, "run", "--backend", backend, "--shards", "2", "--clients", "16", "--variants", "naive,fair",
					"--duration", window.String(), "--warmup", "200ms", "-o", dir, "--run-id", "local2", "--no-plots")
				if err != nil {
					t.Fatalf("run: %v\nstderr:\n%s", err, stderr)
				}
				return fewGrants(t, filepath.Join(dir, "local2", "results.json"))
			})
			for _, want := range []string{"[shard 0]", "[shard 1]", "2 shards on this machine"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if !strings.Contains(out, "naive") || !strings.Contains(out, "results: "+filepath.Join(dir, "local2", "results.json")) {
				t.Errorf("stdout:\n%s", out)
			}
			run, err := results.ReadFile(filepath.Join(dir, "local2", "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := run.Validate(); err != nil {
				t.Fatal(err)
			}
			if run.Status != results.StatusComplete || run.MergedShards != 2 || run.Shard != nil || len(run.Results) != 2 ||
				run.Config.Params["shards"] != "2" || run.ClusterMode == "remote" {
				t.Fatalf("status %s (%s), merged %d, %d results, params %v, mode %s",
					run.Status, run.StatusDetail, run.MergedShards, len(run.Results), run.Config.Params, run.ClusterMode)
			}
			for _, res := range run.Results {
				if res.Clients != clients || res.Merged == nil || len(res.Merged.Shards) != 2 || res.Ops.Succeeded == 0 ||
					res.Safety.Violations != 0 || res.Latency["acquire"].Count != res.Ops.Succeeded {
					t.Errorf("%s: clients %d, merged %+v, ops %+v, safety %+v", res.Variant, res.Clients, res.Merged, res.Ops, res.Safety)
				}
				// The servers' cost, from shard 0: the local ZooKeeper's
				// process (its PID handed down), the embedded etcd's metrics.
				if !res.Cost.ServerCostMeasured || res.Cost.ServerCPUSeconds <= 0 {
					t.Errorf("%s: server cost not measured: %+v", res.Variant, res.Cost)
				}
				t.Logf("%s: %d grants, watch events/op %.2f client | %.2f server, notes %q", res.Variant, res.Ops.Succeeded,
					res.PerOp["watch_events"], res.PerOp["server_watch_events"], res.Notes)
			}
			// The herd spans both shards: above what one shard's clients
			// could make (see runner's TestShardsHerdSpansShards).
			if herd := run.Results[0].PerOp["server_watch_events"]; herd < 0.6*(clients-1) || herd <= clients/2 {
				t.Errorf("naive: %.2f server watch events per grant: the herd should span both shards (about %d); notes %q", herd, clients-1, run.Results[0].Notes)
			}

			shardFiles, _ := filepath.Glob(filepath.Join(dir, "local2", "shards", "*", "local2", "results.json"))
			if len(shardFiles) != 2 {
				t.Fatalf("shard files %v", shardFiles)
			}
			mdir := t.TempDir()
			mout, _, err := zkbench(t, append([]string{"merge", "-o", mdir, "--no-plots"}, shardFiles...)...)
			if err != nil {
				t.Fatal(err)
			}
			merged, err := results.ReadFile(filepath.Join(mdir, "local2", "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			for i, res := range merged.Results {
				if res.Ops != run.Results[i].Ops || res.Latency["acquire"].Count != run.Results[i].Latency["acquire"].Count {
					t.Errorf("merge of the shard files: %s ops %+v, the run's %+v", res.Variant, res.Ops, run.Results[i].Ops)
				}
			}
			if !strings.Contains(mout, "merged from 2 shards") {
				t.Errorf("merge output:\n%s", mout)
			}
			// The merged file reads like any other.
			if backend == "etcd" {
				rout, stderr, err := zkbench(t, "report", filepath.Join(mdir, "local2"), "-o", filepath.Join(t.TempDir(), "report"))
				if err != nil || !strings.Contains(rout, "report.md") {
					t.Errorf("report of the merged file: %v\n%s%s", err, rout, stderr)
				}
				if _, stderr, err := zkbench(t, "compare", filepath.Join(dir, "local2"), filepath.Join(mdir, "local2")); err != nil {
					t.Errorf("compare of merged files: %v\n%s", err, stderr)
				}
			}
			// Twice the same shard: refused.
			if _, _, err := zkbench(t, "merge", "-o", mdir, shardFiles[0], shardFiles[0]); err == nil || !strings.Contains(err.Error(), "given twice") {
				t.Errorf("merge of one shard twice: %v", err)
			}
		})
	}
}

// TestRunShardFlags: --shard-index comes from $JOB_COMPLETION_INDEX when
// not given, and sharding flags without --shards are refused.
func TestRunShardFlags(t *testing.T) {
	t.Setenv(kube.IndexEnv, "5")
	_, _, err := zkbench(t, "run", "--shards", "2", "--endpoints", "127.0.0.1:1", "--run-id", "x")
	if err == nil || !strings.Contains(err.Error(), "--shard-index 5: a run of 2 shards") {
		t.Errorf("index from the environment: %v", err)
	}
	_, _, err = zkbench(t, "run", "--shards", "2", "--shard-index", "0", "--endpoints", "127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "give --run-id") {
		t.Errorf("shard without run id: %v", err)
	}
	_, _, err = zkbench(t, "run", "--shard-index", "0")
	if err == nil || !strings.Contains(err.Error(), "need --shards") {
		t.Errorf("index without shards: %v", err)
	}
}

// TestRunLocalShardsInterrupt: Ctrl-C on `zkbench run --shards` stops every
// shard; the parent merges what they measured and no shard outlives it.
func TestRunLocalShardsInterrupt(t *testing.T) {
	out := t.TempDir()
	cmd := child(t, "", "run", "--shards", "2", "--clients", "4", "--variants", "fair", "--duration", "60s", "--warmup", "0s",
		"-o", out, "--run-id", "shint", "--no-plots")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Interrupt once both shards measure and a status line counts grants.
	sc := bufio.NewScanner(stderr)
	var lines []string
	if !scanToCountedOps(sc, &lines, 2) {
		t.Fatalf("no status line counted a grant: %q", lines)
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("exit after SIGINT: %v (stderr so far %q)", err, lines)
	}
	if took := time.Since(sent); took > 20*time.Second {
		t.Errorf("took %v to stop after SIGINT", took)
	} else {
		t.Logf("stopped %v after SIGINT", took.Round(time.Millisecond))
	}
	if left := processesWith("--run-id=shint"); len(left) > 0 {
		t.Errorf("shard processes outlived the run: %v", left)
	}
	run, err := results.ReadFile(filepath.Join(out, "shint", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != results.StatusInterrupted || len(run.Results) != 1 || run.Results[0].StoppedBy != "interrupted" || run.Results[0].Ops.Succeeded == 0 {
		t.Fatalf("status %s with %d results", run.Status, len(run.Results))
	}
}

// processesWith lists the PIDs of processes whose command line contains arg.
func processesWith(arg string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.Contains(string(raw), arg) {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}
