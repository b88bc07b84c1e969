package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// pauseRun runs a 3-client fair lock case whose client 0 runs in a worker
// process (this test binary as zkbench __lock-worker) and is paused by
// pause-client, and returns its result and timeline.
func pauseRun(t *testing.T, backendArgs []string, fence, fault string) (results.Result, *results.Run) {
	t.Helper()
	lockWorkerEnv = []string{"ZKBENCH_TEST_MAIN=1"}
	t.Cleanup(func() { lockWorkerEnv = nil })
	dir := t.TempDir()
	args := append([]string{"run", "--workload", "lock", "--variants", "fair", "--clients", "3",
		"--hold", "2s", "--duration", "8s", "--warmup", "0s", "--fence", fence, "--fault", fault,
		"-o", dir, "--run-id", "pause", "--no-plots"}, backendArgs...)
	_, stderr, err := zkbench(t, args...)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr)
	}
	run, err := results.ReadFile(filepath.Join(dir, "pause", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Results) != 1 {
		t.Fatalf("%d results", len(run.Results))
	}
	res := run.Results[0]
	t.Logf("ops %+v; errors %v; faults %v", res.Ops, res.Errors, res.Faults)
	t.Logf("safety %+v", res.Safety)
	if f := res.Safety.Fence; f != nil {
		t.Logf("fence %+v", *f)
	}
	for _, n := range res.Notes {
		t.Logf("note: %s", n)
	}
	for _, e := range run.Timeline {
		t.Logf("  %6.3fs %s %s (client %d)", e.At.Seconds(), e.Kind, e.What, e.Client)
	}
	if o := res.Ops; o.Issued != o.Succeeded+o.Failed+o.Unknown+o.StillWaiting || o.Succeeded == 0 {
		t.Errorf("ops %+v: want issued = succeeded + failed + unknown + still waiting, and grants", o)
	}
	if res.Faults["pause-client"] != 1 || res.Faults["failed"] != 0 || res.Faults["undone"] != 1 {
		t.Errorf("faults %v: want the pause injected and undone, nothing failed", res.Faults)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "client 0 ran in a worker process") }) {
		t.Errorf("no note that client 0 ran in a worker process: %q", res.Notes)
	}
	return res, run
}

// backendsForPause are the backends the pause tests run on, with sessions
// of session: the test binary's shared ZooKeeper (ticks of 500 ms, so
// sessions of 1 s to 10 s hold), and zkbench's own embedded etcd.
func backendsForPause(t *testing.T, session string) map[string][]string {
	return map[string][]string{
		"zookeeper": {"--backend", "zookeeper", "--endpoints", strings.Join(testcluster.ZooKeeperEndpoints(t), ","), "--session-timeout", session},
		"etcd":      {"--backend", "etcd", "--lease-ttl", session},
	}
}

// TestRunPauseClientPastTimeout pauses the first holder (client 0, in its
// own process) at 1 s for 5 s, past its 2 s session: the lock passes on
// while it sleeps, and when it wakes it writes with its old token before it
// learns. The checker reports the overlap; without a fence the late write
// is accepted (a violation), with one it is rejected (prevented).
func TestRunPauseClientPastTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 8 s cases on real servers")
	}
	for name, bargs := range backendsForPause(t, "2s") {
		for _, fence := range []string{"off", "on"} {
			t.Run(name+"/fence-"+fence, func(t *testing.T) {
				res, run := pauseRun(t, bargs, fence, "pause-client:0@1s+5s")
				overlap := slices.ContainsFunc(res.Safety.Details, func(d string) bool {
					return strings.Contains(d, "while client 0 held it")
				})
				if !overlap {
					t.Errorf("no overlap with the paused client 0 reported: %q", res.Safety.Details)
				}
				f := res.Safety.Fence
				if f == nil || f.Stale < 1 {
					t.Fatalf("fence %+v: want the paused holder's late write counted stale", f)
				}
				if fence == "off" {
					if f.Rejected != 0 || res.Safety.Violations < 1+f.Stale {
						t.Errorf("unfenced: %+v, violations %d: want the overlap and every stale write as violations, none rejected", *f, res.Safety.Violations)
					}
				} else {
					if f.Rejected != f.Stale || res.Safety.Prevented != f.Rejected {
						t.Errorf("fenced: %+v, prevented %d: want every stale write rejected", *f, res.Safety.Prevented)
					}
				}
				if !timelineHas(run, "session", "lost", 0) {
					t.Errorf("client 0's lost session is not in the timeline")
				}
				if !timelineHas(run, "fault", "pause-client:0", 0) {
					t.Errorf("the pause is not in the timeline")
				}
			})
		}
	}
}

// TestRunPauseClientShort pauses the holder for less than a third of its
// session timeout: nothing happens to the lock. The session is 6 s, not
// the 2 s of the pause past it: a keep-alive is due every third of it, so
// the session may go unheard for a third plus the pause, and what is left
// before it expires (the time the resumed worker has to be scheduled and
// send one) is 2.2 s with a 1.8 s pause, where a 600 ms pause of a 2 s
// session left 0.73 s.
func TestRunPauseClientShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 8 s cases on real servers")
	}
	for name, bargs := range backendsForPause(t, "6s") {
		t.Run(name, func(t *testing.T) {
			res, run := pauseRun(t, bargs, "on", "pause-client:0@1s+1800ms")
			if res.Safety.Violations != 0 || res.Safety.Prevented != 0 {
				t.Errorf("safety %+v after a short pause: want nothing", res.Safety)
			}
			if f := res.Safety.Fence; f == nil || f.Stale != 0 || f.Writes < 2 {
				t.Errorf("fence %+v: want writes and none stale", f)
			}
			if timelineHas(run, "session", "lost", -2) {
				t.Errorf("a session was lost after a short pause")
			}
			if res.Errors["session_lost"] != 0 || res.Errors["lock_lost"] != 0 {
				t.Errorf("errors %v after a short pause", res.Errors)
			}
		})
	}
}

func TestRunPauseClientBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--clients", "1", "--fault", "pause-client:0@1s+1s"}, "besides the 1 in worker processes"},
		{[]string{"--backend", "zookeeper", "--endpoints", "127.0.0.1:1", "--fault", "pause-client:1@1s+1s", "--fault", "expire-session:1@2s"}, "cannot expire"},
	} {
		args := append([]string{"run", "--duration", "200ms", "-o", dir, "--no-plots"}, tc.args...)
		_, _, err := zkbench(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one that says %q", tc.args, err, tc.want)
		}
	}
}

// The worker command reads its spec on stdin and answers a spec or backend
// it cannot use with one error event on stdout, and fails.
func TestLockWorkerCommandBadInput(t *testing.T) {
	for name, tc := range map[string]struct{ spec, want string }{
		"not json":        {"{\n", "spec"},
		"unknown variant": {`{"variant":"nope","path":"/zkbench/x/lock"}` + "\n", "nope"},
		"no settings":     {`{"variant":"fair","path":"/zkbench/x/lock","config":{"backend":"zookeeper"}}` + "\n", "without its settings"},
		"bad config":      {`{"variant":"fair","path":"/zkbench/x/lock","config":[1]}` + "\n", "config"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := newRootCmd()
			var out, errb bytes.Buffer
			cmd.SetIn(strings.NewReader(tc.spec))
			cmd.SetOut(&out)
			cmd.SetErr(&errb)
			cmd.SetArgs([]string{workloads.LockWorkerCommand})
			cmd.SetContext(context.Background())
			err := cmd.Execute()
			if !errors.Is(err, workloads.ErrLockWorker) {
				t.Errorf("err %v, want ErrLockWorker", err)
			}
			var ev struct {
				Seq  int    `json:"seq"`
				Kind string `json:"kind"`
				Err  string `json:"err"`
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &ev) != nil ||
				ev.Seq != 1 || ev.Kind != "error" || !strings.Contains(ev.Err, tc.want) {
				t.Errorf("stdout %q: want one error event saying %q", out.String(), tc.want)
			}
		})
	}
}
