package runner

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/faults/schedule"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// sweep is a small valid lock sweep on the embedded etcd.
func sweep() Config {
	return Config{
		Backend: backends.Etcd, Workload: "lock", Variants: []string{"fair"}, Clients: []int{2},
		Repeat: 1, Duration: time.Second,
		Servers: Servers{Nodes: 1, LeaseTTL: 5 * time.Second, SessionTimeout: 4 * time.Second, PreflightTimeout: 10 * time.Second},
	}
}

func faultsOf(t *testing.T, specs ...string) []schedule.Fault {
	t.Helper()
	fs, err := schedule.ParseAll(specs)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestNewRefuses checks that combinations that cannot work are refused by
// New, before any server is started, with a message that says why.
func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		opts []Option
		want string
	}{
		{"unknown backend", func(c *Config) { c.Backend = "consul" }, nil, "want etcd or zookeeper"},
		{"unknown workload", func(c *Config) { c.Workload = "bogus" }, nil, `unknown workload "bogus"`},
		{"a knob the workload does not read", func(c *Config) { c.Workload, c.Variants, c.Hold = "barrier", nil, time.Millisecond }, nil,
			"--hold: the barrier workload does not read it (only the"},
		{"a parameter the workload does not have", func(c *Config) { c.Params = map[string]string{"rounds": "3"} }, nil,
			`the lock workload has no parameter "rounds"`},
		{"a bad parameter", func(c *Config) { c.Params = map[string]string{"fence": "maybe"} }, nil, `parameter fence="maybe": want off or on`},
		{"a variant off its backend", func(c *Config) { c.Workload, c.Variants = "queue", []string{"native"}; c.Backend = backends.ZooKeeper }, nil,
			`unknown variant "native" of the queue workload on zookeeper`},
		{"no clients", func(c *Config) { c.Clients = nil }, nil, "at least one client count"},
		{"too many clients", func(c *Config) { c.Clients = []int{MaxClients + 1} }, nil, "at most 100000"},
		{"remote without endpoints", func(c *Config) { c.Servers.Mode = Remote }, nil, "needs --endpoints"},
		{"local and endpoints", func(c *Config) { c.Servers.Mode = Local; c.Servers.Endpoints = []string{"127.0.0.1:1"} }, nil, "exclude each other"},
		{"preset on a lock", nil, []Option{WithPreset(workloads.PresetPaperBarrier, 0.1)}, "add --workload barrier"},
		{"unknown preset", func(c *Config) { c.Workload = "barrier" }, []Option{WithPreset("zk-paper-lock", 0.1)}, "the only preset is"},
		{"preset scale", func(c *Config) { c.Workload = "barrier" }, []Option{WithPreset(workloads.PresetPaperBarrier, 2)}, "--scale"},
		{"pause-client off the lock", func(c *Config) { c.Workload = "barrier" },
			[]Option{WithFaults(faultsOf(t, "pause-client:0@1s+1s")...)}, "only the ledger, lock workloads run clients in worker processes"},
		{"pause-client open loop", func(c *Config) { c.Rate = 10 },
			[]Option{WithFaults(faultsOf(t, "pause-client:0@1s+1s")...)}, "open loop"},
		{"bad run id", nil, []Option{WithRunID("a/b")}, "--run-id"},
		{"a session no zkbench cluster grants", func(c *Config) { c.Backend, c.Servers.SessionTimeout = backends.ZooKeeper, time.Millisecond }, nil,
			"--session-timeout 1ms: ZooKeeper grants no session shorter than 2 ticks"},
		{"think in the open loop", func(c *Config) { c.Rate, c.Think = 10, time.Millisecond }, nil, "--think 1ms with --rate 10: the open loop"},
		// Faults the cluster cannot take: refused before its servers start.
		{"kill-leader on the embedded server", nil, []Option{WithFaults(faultsOf(t, "kill-leader@1s")...)}, "needs server processes zkbench runs itself"},
		{"a server the cluster has not", func(c *Config) { c.Servers.Mode, c.Servers.Nodes = Local, 3 },
			[]Option{WithFaults(faultsOf(t, "kill-server:3@1s")...)}, "no such server: the cluster has servers 0..2"},
		{"a partition off docker", func(c *Config) { c.Servers.Mode, c.Servers.Nodes = Local, 3 },
			[]Option{WithFaults(faultsOf(t, "partition-leader@1s+1s")...)}, "needs servers on a network zkbench controls (--cluster docker)"},
		{"a client the run has not", nil, []Option{WithFaults(faultsOf(t, "expire-session:2@1s")...)}, "no such client: the run has clients 0..1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sweep()
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			_, err := New(cfg, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestPresetRunsFaults runs a preset's grid through the one case loop: each
// cell is a case bounded by its barriers, and the faults fire in every
// case (before, a preset's cases never fired the faults they listed).
func TestPresetRunsFaults(t *testing.T) {
	dir := t.TempDir()
	cfg := sweep()
	cfg.Workload = "barrier"
	cfg.Params = map[string]string{workloads.ParamRounds: "20"}
	var progress bytes.Buffer
	r, err := New(cfg, WithPreset(workloads.PresetPaperBarrier, 0.01), WithOutput(dir), WithRunID("preset-faults"),
		WithFaults(faultsOf(t, "latency:1ms@0s+10s")...), WithProgress(&progress, false))
	if err != nil {
		t.Fatal(err)
	}
	grid := r.Preset()
	if len(grid) < 2 {
		t.Fatalf("grid %v: want several cells", grid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := r.Run(ctx)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, progress.String())
	}
	if len(run.Results) != len(grid) {
		t.Fatalf("%d results for %d cells", len(run.Results), len(grid))
	}
	for i, res := range run.Results {
		if res.Clients != grid[i].Clients || res.Ops.Succeeded != int64(grid[i].Barriers) || res.StoppedBy != workloads.StoppedByOps {
			t.Errorf("case %d: %d clients, ops %+v, stopped by %s; want cell %+v", i, res.Clients, res.Ops, res.StoppedBy, grid[i])
		}
		if res.Faults["latency"] != 1 {
			t.Errorf("case %d: faults %v: the latency fault did not fire", i, res.Faults)
		}
	}
	onDisk, err := results.ReadFile(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(onDisk.Results) != len(grid) || onDisk.Config.Params["preset"] != workloads.PresetPaperBarrier {
		t.Errorf("results file: %d results, params %v", len(onDisk.Results), onDisk.Config.Params)
	}
	if !strings.Contains(progress.String(), "faults: latency:1ms@0s+10s") {
		t.Errorf("progress does not list the faults:\n%s", progress.String())
	}
}

// TestRunWithoutOutput runs a sweep that writes no file and returns the run.
func TestRunWithoutOutput(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	r, err := New(sweep(), WithRunID("no-output"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Path() != "" || len(run.Results) != 1 || run.Results[0].Ops.Succeeded == 0 || run.Status != results.StatusComplete {
		t.Fatalf("path %q, run %+v", r.Path(), run)
	}
	entries, err := os.ReadDir(wd)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("a run without output wrote %v", entries)
	}
}

// TestRunInterruptedBeforeACase leaves no folder behind.
func TestRunInterruptedBeforeACase(t *testing.T) {
	dir := t.TempDir()
	r, err := New(sweep(), WithOutput(dir), WithRunID("cancelled"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run, err := r.Run(ctx)
	if run != nil || err == nil {
		t.Fatalf("run %v, err %v: want no run and an error", run, err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "cancelled")); !errors.Is(serr, fs.ErrNotExist) {
		t.Errorf("a folder was left: %v", serr)
	}
}

// TestNewDefaults: a run that names no variants runs its workload's
// defaults, its parameters at their declared defaults, and a workload
// with an open loop of its own (the queue) at its default rate, recorded
// as a setting the run chose.
func TestNewDefaults(t *testing.T) {
	for _, tc := range []struct {
		workload string
		variants []string
		params   map[string]string
		rate     float64
	}{
		{"lock", []string{"naive", "fair"}, map[string]string{"fence": "off"}, 0},
		{"revoke", []string{"consent", "forced"}, map[string]string{"grace": "100ms", "revoke_every": "50ms", "read_share": "0"}, 0},
		{"queue", []string{"naive", "recipe", "fair", "handoff", "native"}, map[string]string{"producers": "1", "item_size": "32"}, 100},
	} {
		cfg := sweep()
		cfg.Workload, cfg.Variants = tc.workload, nil
		p, err := validate(cfg, options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.workload, err)
		}
		if !slices.Equal(p.Variants, tc.variants) || p.cfg.Rate != tc.rate {
			t.Errorf("%s: variants %v rate %v, want %v and %v", tc.workload, p.Variants, p.cfg.Rate, tc.variants, tc.rate)
		}
		for k, v := range tc.params {
			if p.cfg.Params[k] != v {
				t.Errorf("%s: parameter %s = %q, want %q (all: %v)", tc.workload, k, p.cfg.Params[k], v, p.cfg.Params)
			}
		}
		chose := slices.ContainsFunc(p.settings, func(s results.Setting) bool { return s.Name == "rate" })
		if chose != (tc.rate > 0) {
			t.Errorf("%s: settings %v: a chosen rate recorded %v, want %v", tc.workload, p.settings, chose, tc.rate > 0)
		}
	}
}

// TestRequireQuietStopsOnALoadedMachine: with WithQuietMachine a case
// measured while processes outside the run took the cores ends the run,
// marked failed in its file, after that case; nothing of it reads as a
// quiet run. The loops run outside this process's tree (left to init),
// one per core, so that they hold far more than the rule's share however
// busy the machine already is.
func TestRequireQuietStopsOnALoadedMachine(t *testing.T) {
	for range runtime.NumCPU() {
		out, err := exec.Command("sh", "-c", "sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 & echo $!").Output()
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("loop pid %q: %v", out, err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	cfg := sweep()
	cfg.Clients = []int{2, 3}
	dir := t.TempDir()
	r, err := New(cfg, WithOutput(dir), WithRunID("loaded"), WithQuietMachine())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := r.Run(ctx)
	if !errors.Is(err, ErrLoadedMachine) || !strings.Contains(err.Error(), "--require-quiet") {
		t.Fatalf("err %v: want the loaded machine named", err)
	}
	if run == nil || len(run.Results) != 1 || run.Results[0].Loaded == nil || run.Status != results.StatusFailed {
		t.Fatalf("run %+v: want the first case only, marked loaded, in a failed run", run)
	}
	kept, err := results.ReadFile(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	if kept.Status != results.StatusFailed || !strings.Contains(kept.StatusDetail, "loaded machine") {
		t.Errorf("the file says %s (%s)", kept.Status, kept.StatusDetail)
	}
}
