package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// The test binary doubles as zkbench: with ZKBENCH_TEST_MAIN=1 it runs main
// with its arguments, so tests can run the real command in a child process
// (to send it signals, or give it a lower open-file limit).
//
// No test here reaches the machine's Docker engine: every run and clean
// would remove the clusters that killed zkbench processes left there, which
// are no test's to remove (cluster/docker tests that removal on clusters of
// its own). DOCKER_HOST names a socket that does not exist.
func TestMain(m *testing.M) {
	_ = os.Setenv("DOCKER_HOST", "unix:///nonexistent/zkbench-test-docker.sock")
	if os.Getenv("ZKBENCH_TEST_MAIN") == "1" {
		os.Args = append([]string{"zkbench"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	testcluster.Main(m)
}

// zkbench runs the root command in-process and returns stdout, stderr and
// the error.
func zkbench(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	cmd.SetContext(context.Background())
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

func TestRunEmbeddedEndToEnd(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	// Cases end after 10 acquisitions: a quiet machine makes them in
	// milliseconds, a loaded one may need seconds (a 400 ms case saw none
	// there); the minute's bound is only a backstop.
	const ops = 10
	out, stderr, err := zkbench(t, "run", "--clients", "2,4", "--variants", "naive,fair",
		"--ops", strconv.Itoa(ops), "--duration", "60s", "--warmup", "100ms", "-o", dir, "--run-id", "e2e")
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr)
	}
	t.Logf("run took %v", time.Since(start))
	path := filepath.Join(dir, "e2e", "results.json")
	run, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Validate(); err != nil {
		t.Fatal(err)
	}
	if run.Status != results.StatusComplete || run.ClusterMode != "embedded" || len(run.Results) != 4 {
		t.Fatalf("status %s, mode %s, %d results", run.Status, run.ClusterMode, len(run.Results))
	}
	if len(run.Cluster.Members) != 1 || run.Cluster.Members[0].Version == "" || run.Cluster.Members[0].PID != os.Getpid() {
		t.Errorf("cluster not recorded: %+v", run.Cluster)
	}
	for _, res := range run.Results {
		if res.Ops.Succeeded < ops || res.Safety.Violations != 0 || res.StoppedBy != results.StoppedByOps {
			t.Errorf("%s/%d: ops %+v, safety %+v, stopped by %s", res.Variant, res.Clients, res.Ops, res.Safety, res.StoppedBy)
		}
	}
	if len(run.Leftovers) != 0 {
		t.Errorf("leftovers: %v", run.Leftovers)
	}
	// No --hold: the lock workload's own, recorded as the run's choice.
	if run.Config.Hold != workloads.DefaultLockHold || !slices.ContainsFunc(run.Settings, func(s results.Setting) bool { return s.Name == "hold" }) {
		t.Errorf("hold %v (want the default %v) and settings %v", run.Config.Hold, workloads.DefaultLockHold, run.Settings)
	}
	for _, want := range []string{"verdict:\n  lock on etcd: naive wakes ", "fair (herd-free) ", "findings: ", "ops/s",
		"results: " + path, "every column: zkbench summary --wide " + filepath.Dir(path), "plots:", "\nnext: "} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "[4/4] lock fair, 4 clients") {
		t.Errorf("no progress line per case:\n%s", stderr)
	}
	pngs, _ := filepath.Glob(filepath.Join(dir, "e2e", "plots", "*.png"))
	if len(pngs) == 0 {
		t.Errorf("no plots drawn")
	}
	// The same --run-id and -o again: the run says that it writes over the
	// earlier one's results (the first said nothing of it).
	const over = "holds an earlier run's results: this run writes over them"
	if strings.Contains(stderr, over) {
		t.Errorf("a new run's folder said to hold an earlier run:\n%s", stderr)
	}
	if _, stderr, err = zkbench(t, "run", "--clients", "2", "--variants", "fair", "--ops", "3", "--duration", "60s",
		"-o", dir, "--run-id", "e2e", "--no-plots"); err != nil || !strings.Contains(stderr, path+" "+over) {
		t.Errorf("a second run of the same id: %v, and no note that it writes over the first:\n%s", err, stderr)
	}
}

func TestRunLocalZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a ZooKeeper JVM")
	}
	dir := t.TempDir()
	// 5 acquisitions a case, with a minute's backstop: a loaded machine may
	// grant none in a fixed 300 ms.
	_, stderr, err := zkbench(t, "run", "--backend", "zookeeper", "--clients", "3", "--variants", "fair,native",
		"--ops", "5", "--duration", "60s", "--warmup", "0s", "-o", dir, "--run-id", "zk", "--no-plots")
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr)
	}
	run, err := results.ReadFile(filepath.Join(dir, "zk", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if run.ClusterMode != "local" || run.Cluster.Kind != backends.ZooKeeper || len(run.Results) != 2 {
		t.Fatalf("mode %s, kind %s, %d results", run.ClusterMode, run.Cluster.Kind, len(run.Results))
	}
	for _, res := range run.Results {
		if res.Ops.Succeeded < 5 || res.StoppedBy != results.StoppedByOps || !res.Cost.ServerCostMeasured || res.Cost.ServerCPUSeconds <= 0 {
			t.Errorf("%s: ops %+v, stopped by %s, cost %+v", res.Variant, res.Ops, res.StoppedBy, res.Cost)
		}
	}
}

func TestRunBadInput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	unreachable := freePort(t)
	tests := []badInput{
		{"zero clients", []string{"--clients", "0"}, "at least 1 client"},
		{"negative clients", []string{"--clients=10,-5"}, "at least 1 client"},
		{"absurd clients", []string{"--clients", "200000"}, "at most 100000"},
		{"not a number", []string{"--clients", "ten"}, `"ten" is not a whole number`},
		{"zero duration", []string{"--duration", "0s"}, "--duration 0s: must be positive"},
		{"unknown variant", []string{"--variants", "naive,bogus"}, `unknown variant "bogus"`},
		{"unknown workload", []string{"--workload", "bogus"}, `unknown workload "bogus"`},
		{"unknown backend", []string{"--backend", "consul"}, "want etcd or zookeeper"},
		{"embedded zookeeper", []string{"--backend", "zookeeper", "--cluster", "embedded"}, "only etcd can run embedded"},
		{"even nodes", []string{"--cluster", "local", "--nodes", "2"}, "--nodes 2"},
		{"short lease", []string{"--lease-ttl", "1s"}, "minimum lease TTL is 2s"},
		{"unwritable output", []string{"-o", filepath.Join(file, "sub")}, "folder not writable"},
		{"unreachable etcd", []string{"--endpoints", unreachable}, "unreachable"},
		{"unreachable zookeeper", []string{"--backend", "zookeeper", "--endpoints", unreachable}, "preflight"},
		{"malformed endpoint", []string{"--endpoints", "http://[::1"}, "--endpoints"},
		{"zookeeper at an etcd", []string{"--backend", "zookeeper", "--endpoints", etcdHostPort(t)}, "preflight"},
		{"unknown fence", []string{"--fence", "maybe"}, `--fence "maybe": want off or on`},
		{"fence without a lock", []string{"--workload", "barrier", "--fence", "on"}, "only the lock, revoke workloads"},
		{"think on a barrier", []string{"--workload", "barrier", "--think", "1ms"}, "--think: the barrier workload does not read it"},
		{"rounds on a lock", []string{"--rounds", "5"}, "--rounds: the lock workload does not read it"},
		{"lease on zookeeper", []string{"--backend", "zookeeper", "--lease-ttl", "3s"}, "--lease-ttl: only etcd reads it"},
		{"session timeout on etcd", []string{"--session-timeout", "3s"}, "--session-timeout: only zookeeper reads it"},
		{"digest on etcd", []string{"--digest", "a:b"}, "--digest: only zookeeper reads it"},
		{"scale without preset", []string{"--workload", "barrier", "--scale", "0.2"}, "--scale: it scales a --preset"},
		{"clients with a preset", []string{"--workload", "barrier", "--preset", "zk-paper-barrier"}, "--clients: --preset zk-paper-barrier sets"},
		{"nodes with endpoints", []string{"--endpoints", "127.0.0.1:1", "--nodes", "3"}, "--nodes: zkbench starts no servers"},
		{"preset on a lock", []string{"--preset", "zk-paper-barrier"}, "--preset: the lock workload does not read it"},
		// the simple barrier's, two-phase commit's and membership's flags
		{"poll on a lock", []string{"--poll", "10ms"}, "--poll: the lock workload does not read it"},
		{"barrier-up on a barrier", []string{"--workload", "barrier", "--barrier-up", "1s"}, "--barrier-up: the barrier workload does not read it"},
		{"negative poll", []string{"--workload", "simple-barrier", "--poll", "-5ms"}, "--poll -5ms: want a positive pause"},
		{"abort share on a lock", []string{"--abort-share", "0.1"}, "--abort-share: the lock workload does not read it"},
		{"abort share above 1", []string{"--workload", "twophase", "--abort-share", "1.5"}, "--abort-share 1.5: want a share from 0 to 1"},
		{"churn on a lock", []string{"--churn", "5"}, "--churn: the lock workload does not read it"},
		{"native queue on zookeeper", []string{"--backend", "zookeeper", "--workload", "queue", "--variants", "native"}, "etcd's experimental recipe Queue"},
	}
	runBadInput(t, tests)
}

// badInput is one `zkbench run` that must be refused: its flags (beside a
// small case's) and what the error must mention.
type badInput struct {
	name string
	args []string
	want string
}

// runBadInput runs each case and checks that it fails within seconds, with
// an error mentioning its want, and writes no results file.
func runBadInput(t *testing.T, tests []badInput) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"run", "-o", out, "--run-id", "bad", "--no-plots", "--duration", "1s", "--clients", "2"}, tc.args...)
			start := time.Now()
			_, _, err := zkbench(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("took %v to fail", took)
			}
			if _, err := os.Stat(filepath.Join(out, "bad", "results.json")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a results file was written: %v", err)
			}
			t.Logf("%v", err)
		})
	}
}

// freePort returns a loopback address nothing listens on.
func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func etcdHostPort(t *testing.T) string {
	ep := testcluster.EtcdEndpoints(t)[0]
	return strings.TrimPrefix(strings.TrimPrefix(ep, "http://"), "https://")
}

// child runs this test binary as zkbench with args, through sh so that a
// shell prefix (ulimit) can apply.
func child(t *testing.T, prefix string, args ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := prefix + ` exec "$0" "$@"`
	cmd := exec.Command("sh", append([]string{"-c", script, exe}, args...)...)
	cmd.Env = append(os.Environ(), "ZKBENCH_TEST_MAIN=1")
	return cmd
}

func TestRunOpenFileLimit(t *testing.T) {
	out := t.TempDir()
	cmd := child(t, "ulimit -n 300 &&", "run", "--clients", "1000", "-o", out, "--no-plots")
	raw, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("exit %v, output:\n%s", err, raw)
	}
	if !strings.Contains(string(raw), "ulimit -n") || !strings.Contains(string(raw), "1000 clients") {
		t.Fatalf("output does not say how to raise the limit:\n%s", raw)
	}
}

// countedOps matches a status line that counts at least one operation.
var countedOps = regexp.MustCompile(`, [1-9][0-9]* ops`)

// scanToCountedOps reads sc, keeping its lines, until a status line says
// that operations were counted (written every 10 s to a pipe), after want
// lines that mention "measuring"; false if the output ends first.
func scanToCountedOps(sc *bufio.Scanner, lines *[]string, want int) bool {
	measuring := 0
	for sc.Scan() {
		*lines = append(*lines, sc.Text())
		if strings.Contains(sc.Text(), "measuring") {
			measuring++
		}
		if measuring >= want && countedOps.MatchString(sc.Text()) {
			return true
		}
	}
	return false
}

func TestRunInterrupt(t *testing.T) {
	out := t.TempDir()
	cmd := child(t, "", "run", "--clients", "3,5", "--variants", "fair", "--duration", "60s", "--warmup", "0s",
		"-o", out, "--run-id", "int", "--no-plots")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Interrupt during the first case, once its status line counts grants
	// (which a fixed wait after "measuring" cannot promise on a loaded
	// machine).
	sc := bufio.NewScanner(stderr)
	var lines []string
	if !scanToCountedOps(sc, &lines, 1) {
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
	took := time.Since(sent)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("exit after SIGINT: %v (stderr so far %q)", err, lines)
	}
	if took > 15*time.Second {
		t.Errorf("took %v to stop after SIGINT", took)
	}
	t.Logf("stopped %v after SIGINT", took.Round(time.Millisecond))
	run, err := results.ReadFile(filepath.Join(out, "int", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Validate(); err != nil {
		t.Fatal(err)
	}
	if run.Status != results.StatusInterrupted || len(run.Results) != 1 || run.Results[0].StoppedBy != "interrupted" ||
		run.Results[0].Ops.Succeeded == 0 {
		t.Fatalf("status %s with %d results: %+v", run.Status, len(run.Results), run.Results)
	}
	// Measured until the interrupt, not for its 60 s.
	if e := run.Results[0].Elapsed; e > sent.Sub(started)+took {
		t.Errorf("interrupted case measured %v, though the run ended %v after it started", e, sent.Sub(started)+took)
	}
}
