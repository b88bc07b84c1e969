package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// ledgerRun runs the ledger workload's variants with 4 clients (0..2 in
// worker processes, this test binary as zkbench __lock-worker) for 12 s,
// with two kill-holder faults, on sessions of 2 s, and returns its results
// by variant.
func ledgerRun(t *testing.T, backendArgs []string, variants string) map[string]results.Result {
	t.Helper()
	lockWorkerEnv = []string{"ZKBENCH_TEST_MAIN=1"}
	t.Cleanup(func() { lockWorkerEnv = nil })
	dir := t.TempDir()
	args := append([]string{"run", "--workload", "ledger", "--variants", variants, "--clients", "4",
		"--duration", "12s", "--warmup", "0s", "--fault", "kill-holder@1s,kill-holder@4s",
		"-o", dir, "--run-id", "ledger", "--no-plots"}, backendArgs...)
	_, stderr, err := zkbench(t, args...)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr)
	}
	run, err := results.ReadFile(filepath.Join(dir, "ledger", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]results.Result{}
	for _, res := range run.Results {
		t.Logf("%s: ops %+v; faults %v; errors %v", res.Variant, res.Ops, res.Faults, res.Errors)
		if w := res.Work; w != nil {
			t.Logf("%s: committed %d, recovered %d, aborted %d, %d requests, %d bytes; anomalies %+v",
				res.Variant, w.Committed, w.Recovered, w.Aborted, w.Requests, w.Bytes, w.Anomalies)
			for _, c := range w.Crashes {
				t.Logf("  crash %+v", c)
			}
		}
		for _, n := range res.Notes {
			t.Logf("  note: %s", n)
		}
		out[res.Variant] = res
	}
	return out
}

// TestRunLedgerHolderCrashes kills two lock holders mid-work (after step 2
// of 3) with SIGKILL: each one's lock is freed only when its session times
// out, and its operation is left part done. The naive work leaves each
// crashed operation visible in the store (accounts ahead of the committed
// count); the idempotent work has the next holder finish it, and the store
// stays whole; etcd's transaction never writes part of one. Assertions
// are on counts, not timings, beyond a recovery that is not instant.
func TestRunLedgerHolderCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 12 s cases on real servers")
	}
	for name, bargs := range backendsForPause(t, "2s") {
		t.Run(name, func(t *testing.T) {
			vs := "naive,idempotent"
			if name == "etcd" {
				vs += ",txn"
			}
			byVariant := ledgerRun(t, bargs, vs)
			for _, v := range strings.Split(vs, ",") {
				res, ok := byVariant[v]
				if !ok {
					t.Fatalf("no result for %s", v)
				}
				w := res.Work
				if w == nil {
					t.Fatalf("%s: no work checked: notes %q", v, res.Notes)
				}
				if res.Faults["kill-holder"] != 2 || res.Faults["failed"] != 0 {
					t.Errorf("%s: faults %v: want two kill-holder, none failed", v, res.Faults)
				}
				if len(w.Crashes) != 2 {
					t.Fatalf("%s: %d crashes, want 2: %+v", v, len(w.Crashes), w.Crashes)
				}
				for _, c := range w.Crashes {
					if c.Fault != "kill-holder" || c.Step != workloads.KillStep(3) || c.Op == "" || c.Recovery <= 0 {
						t.Errorf("%s: crash %+v: want a holder killed after step %d of an operation, then a grant", v, c, workloads.KillStep(3))
					}
				}
				if _, ok := res.Latency["recovery"]; !ok {
					t.Errorf("%s: no recovery latency", v)
				}
				if w.Committed < 10 || w.Requests == 0 || res.PerOp["work_requests"] <= 0 {
					t.Errorf("%s: committed %d, requests %d, per op %v: want work done and counted", v, w.Committed, w.Requests, res.PerOp["work_requests"])
				}
				if res.Safety.Violations != 0 {
					t.Errorf("%s: mutual exclusion violated: %+v", v, res.Safety)
				}
				// The worker clients' counts are the case's too: the
				// clients and the servers agree, or a documented cause
				// explains why not.
				for _, n := range res.Notes {
					if strings.Contains(n, "UNEXPLAINED") {
						t.Errorf("%s: %s", v, n)
					}
				}
				a := w.Anomalies
				switch v {
				case "naive":
					if a.PartialVisible < 2 || a.Mismatched == 0 || a.Violations() == 0 {
						t.Errorf("naive: anomalies %+v: want both crashed operations left visible, accounts off the count", a)
					}
					for _, c := range w.Crashes {
						if c.Ended != results.CrashPartial {
							t.Errorf("naive: crash ended %q, want %q", c.Ended, results.CrashPartial)
						}
					}
					if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.HasPrefix(n, "LEDGER ANOMALIES") }) {
						t.Errorf("naive: no anomaly note: %q", res.Notes)
					}
				case "idempotent":
					if a.Violations() != 0 || a.Pending != 0 || w.Recovered < 2 {
						t.Errorf("idempotent: anomalies %+v, recovered %d: want none, both crashed operations finished", a, w.Recovered)
					}
					for _, c := range w.Crashes {
						if c.Ended != results.CrashCompleted {
							t.Errorf("idempotent: crash ended %q, want %q", c.Ended, results.CrashCompleted)
						}
					}
				case "txn":
					if a.Violations() != 0 {
						t.Errorf("txn: anomalies %+v: want none", a)
					}
					for _, c := range w.Crashes {
						if c.Ended != results.CrashNothing {
							t.Errorf("txn: crash ended %q, want %q", c.Ended, results.CrashNothing)
						}
					}
				}
			}
			naive, idem := byVariant["naive"].Work, byVariant["idempotent"].Work
			if naive.Requests*idem.Committed >= idem.Requests*naive.Committed {
				t.Errorf("idempotent work costs no more requests per operation than naive: %d/%d vs %d/%d",
					idem.Requests, idem.Committed, naive.Requests, naive.Committed)
			}
		})
	}
}

// TestRunLedgerBadInput: what the ledger and the kill faults refuse, and
// why.
func TestRunLedgerBadInput(t *testing.T) {
	dir := t.TempDir()
	zk := []string{"--backend", "zookeeper", "--endpoints", strings.Join(backendsForPause(t, "2s")["zookeeper"][3:4], ",")}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "lock", "--fault", "kill-holder@1s"}, "the lock workload's holders do no work in steps"},
		{[]string{"--workload", "barrier", "--fault", "kill-client:0@1s"}, "clients in worker processes"},
		{[]string{"--workload", "ledger", "--fault", "kill-client:7@1s"}, "no such client: the run has clients 0..2"},
		{[]string{"--workload", "ledger", "--clients", "1", "--fault", "kill-holder@1s"}, "--clients at least 2"},
		{[]string{"--workload", "ledger", "--fault", "kill-holder@1s,kill-holder@2s,kill-holder@3s"}, "3 kill-holder faults but only 2 clients in worker processes"},
		{[]string{"--workload", "ledger", "--fault", "kill-holder@1s+1s"}, "instant"},
		{[]string{"--workload", "ledger", "--steps", "1", "--fault", "kill-holder@1s"}, "fewer than 2 steps"},
		{append([]string{"--workload", "ledger", "--variants", "txn"}, zk...), "no guarded multi-node write"},
	} {
		args := append([]string{"run", "--clients", "3", "--duration", "200ms", "-o", dir, "--no-plots"}, tc.args...)
		if slices.Contains(tc.args, "--clients") {
			args = append([]string{"run", "--duration", "200ms", "-o", dir, "--no-plots"}, tc.args...)
		}
		_, _, err := zkbench(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one that says %q", tc.args, err, tc.want)
		}
	}
}

// TestRunKillClient kills client 0's worker at 1 s on the embedded etcd,
// in a lock case and in a ledger case: the case goes on without it, its
// ops still add up, the lock stays exclusive, and the ledger accounts for
// the crash (whatever the client was doing at that moment).
func TestRunKillClient(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 6 s cases on the embedded etcd")
	}
	lockWorkerEnv = []string{"ZKBENCH_TEST_MAIN=1"}
	t.Cleanup(func() { lockWorkerEnv = nil })
	for _, workload := range []string{"lock", "ledger"} {
		t.Run(workload, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"run", "--workload", workload, "--clients", "3", "--hold", "200ms", "--duration", "6s", "--warmup", "0s",
				"--lease-ttl", "2s", "--fault", "kill-client:0@1s", "-o", dir, "--run-id", "kill", "--no-plots"}
			if workload == "lock" {
				args = append(args, "--variants", "fair")
			} else {
				args = append(args, "--variants", "idempotent")
			}
			if _, stderr, err := zkbench(t, args...); err != nil {
				t.Fatalf("run: %v\nstderr:\n%s", err, stderr)
			}
			run, err := results.ReadFile(filepath.Join(dir, "kill", "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			res := run.Results[0]
			t.Logf("ops %+v; faults %v; safety %+v; notes %q", res.Ops, res.Faults, res.Safety, res.Notes)
			if res.Faults["kill-client"] != 1 || res.Faults["failed"] != 0 {
				t.Errorf("faults %v: want the kill injected, none failed", res.Faults)
			}
			if !slices.ContainsFunc(res.Notes, func(n string) bool {
				return strings.Contains(n, "client 0's worker process was killed by a kill-client fault")
			}) {
				t.Errorf("no note of the kill: %q", res.Notes)
			}
			if o := res.Ops; o.Issued != o.Succeeded+o.Failed+o.Unknown+o.StillWaiting || o.Succeeded < 3 {
				t.Errorf("ops %+v: want issued = succeeded + failed + unknown + still waiting, and grants", o)
			}
			if res.Safety.Violations != 0 {
				t.Errorf("safety %+v: want no overlap", res.Safety)
			}
			if workload == "ledger" {
				w := res.Work
				if w == nil || len(w.Crashes) != 1 || w.Crashes[0].Fault != "kill-client" || w.Crashes[0].Client != 0 || w.Crashes[0].Ended == "" {
					t.Fatalf("work %+v: want client 0's crash accounted for", w)
				}
				if w.Anomalies.Violations() != 0 {
					t.Errorf("idempotent work after a kill: anomalies %+v", w.Anomalies)
				}
			}
		})
	}
}
