package main

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/zkbench/zkbench/results"
)

// TestRunSharedLockFlags: the shared lock workloads' flags are refused by
// the workloads that do not read them, and bad values say what to do.
func TestRunSharedLockFlags(t *testing.T) {
	runBadInput(t, []badInput{
		{"read share on a lock", []string{"--read-share", "0.5"}, "--read-share: the lock workload does not read it"},
		{"read share above 1", []string{"--workload", "rwlock", "--read-share", "1.5"}, "want a share from 0 to 1"},
		{"grace on rwlock", []string{"--workload", "rwlock", "--grace", "1s"}, "--grace: the rwlock workload does not read it"},
		{"grace with consent only", []string{"--workload", "revoke", "--variants", "consent", "--grace", "1s"}, "--grace: only the forced variant reads it (add --variants forced)"},
		{"rate on rwlock", []string{"--workload", "rwlock", "--rate", "10"}, "--rate: the rwlock workload does not read it"},
		{"zero revoke-every", []string{"--workload", "revoke", "--variants", "consent", "--revoke-every", "0s"}, "--revoke-every 0s: want a positive pause"},
		{"negative revoke-every", []string{"--workload", "revoke", "--variants", "consent", "--revoke-every", "-5ms"}, "--revoke-every -5ms: want a positive pause"},
		{"pause a rwlock client", []string{"--workload", "rwlock", "--fault", "pause-client:0@1s+1s"}, "only the ledger, lock workloads run clients in worker processes"},
		{"pause a revoke client", []string{"--workload", "revoke", "--variants", "consent", "--fault", "pause-client:0@1s+1s"}, "only the ledger, lock workloads run clients in worker processes"},
	})
}

// TestRunFaultsRWLockExpireEtcd: the fault grammar drives the rwlock
// workload: client 1's lease is revoked on the server a second in (a
// holder or a waiter whose session expires). Its nodes go with the lease,
// the others go on, and no writer ever holds with anyone.
func TestRunFaultsRWLockExpireEtcd(t *testing.T) {
	dir := t.TempDir()
	_, stderr, err := zkbench(t, "run", "--workload", "rwlock", "--clients", "4", "--variants", "naive,fair", "--duration", "3s",
		"--warmup", "0s", "--hold", "20ms", "--read-share", "0.5", "--lease-ttl", "2s", "-o", dir, "--run-id", "rwx", "--no-plots",
		"--fault", "expire-session:1@1s")
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr)
	}
	run, err := results.ReadFile(filepath.Join(dir, "rwx", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Results) != 2 {
		t.Fatalf("%d results, want naive and fair", len(run.Results))
	}
	for _, res := range run.Results {
		t.Logf("%s: faults %v; ops %+v; errors %v; safety %+v; notes %q", res.Variant, res.Faults, res.Ops, res.Errors, res.Safety, res.Notes)
		if res.Faults["expire-session"] != 1 || res.Faults["session.lost"] < 1 {
			t.Errorf("%s: faults %v: want client 1's session expired and lost", res.Variant, res.Faults)
		}
		// The expired client learns of it late (etcd: its next keep-alive
		// reply) and may still be inside when the next client is granted:
		// the checker counts that overlap. Every one must involve client
		// 1; the others never overlap one another.
		for _, d := range res.Safety.Details {
			if !involvesClient1.MatchString(d) {
				t.Errorf("%s: a violation without the expired client: %s", res.Variant, d)
			}
		}
		if res.Ops.Succeeded == 0 {
			t.Errorf("%s: no grant", res.Variant)
		}
	}
}

// involvesClient1 matches a violation's detail that names client 1, alone
// ("client 1 ") or among readers ("clients [0 1 3]").
var involvesClient1 = regexp.MustCompile(`client 1 |[\[ ]1[\] ]`)

// TestRunFaultsRevokeKillZooKeeper: the only ZooKeeper server is killed
// mid-run and restarted while the revoker asks holders to let go; the
// revocations resume after it, and nothing is stale or overlapping. The
// restart begins 4 s into the case; the case lasts 20 s, leaving 16 s for a
// JVM to start on a loaded machine (5 to 9 s beside two busy loops, as in
// TestRunFaultsLocalZooKeeper), the clients to reconnect (a client whose
// connection was accepted but not answered waits 3 s before its next try)
// and a revocation to be counted (an 8 s case left 4 s, a 12 s one 8 s).
func TestRunFaultsRevokeKillZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a ZooKeeper JVM")
	}
	dir := t.TempDir()
	_, stderr, err := zkbench(t, "run", "--backend", "zookeeper", "--cluster", "local", "--workload", "revoke", "--variants", "consent",
		"--clients", "3", "--duration", "20s", "--warmup", "0s", "--hold", "5s", "--session-timeout", "6s",
		"--fence", "on", "-o", dir, "--run-id", "rvk", "--no-plots", "--fault", "kill-server:0@3s+1s")
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr)
	}
	run, err := results.ReadFile(filepath.Join(dir, "rvk", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	res := run.Results[0]
	t.Logf("faults %v; ops %+v; errors %v; safety %+v; notes %q", res.Faults, res.Ops, res.Errors, res.Safety, res.Notes)
	if res.Faults["kill-server"] != 1 || res.Faults["undone"] != 1 || res.Faults["failed"] != 0 {
		t.Errorf("faults %v: want the server killed and restarted", res.Faults)
	}
	if !timelineHas(run, "fault", "end kill-server:0: restart-server:0", -1) {
		t.Errorf("the server was not restarted: %v", run.Timeline)
	}
	if res.Safety.Violations != 0 {
		t.Errorf("safety %+v", res.Safety)
	}
	var after int64
	for i, c := range res.Series.Counts {
		if res.Series.Interval*time.Duration(i) > 5*time.Second {
			after += c
		}
	}
	if after == 0 {
		t.Errorf("no revocation after the server came back: series %v", res.Series.Counts)
	}
}
