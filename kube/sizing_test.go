package kube_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/kube"
	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

// TestDeadlineCoversPresetGrid: a Job's deadline is counted over the run's
// own case list (runner's Cases), so a preset's grid, which replaces the
// --clients sweep and bounds every cell by at least 30 minutes, is covered
// cell by cell, not counted as variants x --clients x --repeat.
func TestDeadlineCoversPresetGrid(t *testing.T) {
	cfg := runner.Config{
		Backend: backends.ZooKeeper, Workload: "barrier", Clients: []int{10}, Repeat: 1,
		Duration: 5 * time.Second, Warmup: runner.Auto, Hold: runner.Auto,
		Servers: runner.Servers{Endpoints: []string{"zk-0.zk:2181"}, SessionTimeout: runner.Auto, LeaseTTL: runner.Auto,
			PreflightTimeout: 10 * time.Second},
	}
	r, err := runner.New(cfg, runner.WithPreset(workloads.PresetPaperBarrier, 0.1), runner.WithRunID("preset"))
	if err != nil {
		t.Fatal(err)
	}
	grid, err := workloads.PaperBarrierGrid(0.1)
	if err != nil {
		t.Fatal(err)
	}
	cases := r.Cases()
	barrier, err := workloads.Lookup("barrier")
	if err != nil {
		t.Fatal(err)
	}
	variants := len(barrier.DefaultVariants(backends.ZooKeeper))
	if len(cases) != len(grid)*variants {
		t.Fatalf("%d cases, want the grid's %d cells x %d variants", len(cases), len(grid), variants)
	}
	const shardTimeout = 2 * time.Minute
	d := kube.Deadline(r.CaseBounds(), shardTimeout)
	need := kube.ScheduleTime
	for _, c := range cases {
		need += c.Warmup + c.Duration + 2*shardTimeout
	}
	if d < need {
		t.Errorf("deadline %v, short of the preset's %d cases' bounds %v", d, len(cases), need)
	}
	// The rule of variants x --clients x --repeat counts one case of 10
	// clients a variant, bounded by --duration.
	short := kube.ScheduleTime + time.Duration(variants)*(cfg.Duration+time.Second+2*shardTimeout+kube.CaseOverhead)
	if d <= short {
		t.Errorf("deadline %v, no longer than the sweep rule's %v", d, short)
	}
}

func TestDeadlineSweep(t *testing.T) {
	// 2 cases of 20 s with a 500 ms warm-up, two 2-minute barrier bounds
	// and a minute each, and 10 minutes to schedule.
	bounds := []time.Duration{20*time.Second + 500*time.Millisecond, 20*time.Second + 500*time.Millisecond}
	if got, want := kube.Deadline(bounds, 2*time.Minute), 10*time.Minute+2*(20*time.Second+500*time.Millisecond+5*time.Minute); got != want {
		t.Errorf("deadline %v, want %v", got, want)
	}
}

func TestResources(t *testing.T) {
	res, err := kube.Resources("500m", "auto", 100)
	if err != nil {
		t.Fatal(err)
	}
	if mem, cpu := res.Requests.Memory().String(), res.Requests.Cpu().String(); mem != "306Mi" || cpu != "500m" { // 256Mi + 100 x 512Ki
		t.Errorf("requests memory %s cpu %s, want 306Mi and 500m", mem, cpu)
	}
	for _, tc := range []struct{ cpu, mem, want string }{
		{"lots", "auto", "--cpu"},
		{"1", "big", "--memory"},
		{"-2", "auto", "--cpu -2: want a positive quantity such as 1 or 500m"},
		{"0", "auto", "--cpu 0: want a positive quantity such as 1 or 500m"},
		{"1", "-5Gi", "--memory -5Gi: want a positive quantity such as 512Mi or 2Gi, or auto"},
		{"1", "0", "--memory 0: want a positive quantity"},
	} {
		if _, err := kube.Resources(tc.cpu, tc.mem, 1); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("cpu %q memory %q: %v, want an error naming %s", tc.cpu, tc.mem, err, tc.want)
		}
	}
	if _, err := kube.PullPolicy("Sometimes"); err == nil {
		t.Error("pull policy Sometimes accepted")
	}
	if p, err := kube.PullPolicy("Never"); err != nil || p != corev1.PullNever {
		t.Errorf("Never: %v %v", p, err)
	}
}

func TestCheckRunFlags(t *testing.T) {
	set := func(given map[string]string) (func(string) bool, func(string) string) {
		return func(n string) bool { _, ok := given[n]; return ok }, func(n string) string { return given[n] }
	}
	for name := range kube.RefusedRunFlags {
		changed, value := set(map[string]string{name: "x"})
		if err := kube.CheckRunFlags(changed, value, ""); err == nil || !strings.HasPrefix(err.Error(), "--"+name+":") {
			t.Errorf("--%s: %v", name, err)
		}
	}
	changed, value := set(map[string]string{"cacert": "/tmp/ca.pem"})
	if err := kube.CheckRunFlags(changed, value, "tls"); err == nil {
		t.Error("a --cacert outside the TLS Secret's mount accepted")
	}
	changed, value = set(map[string]string{"cacert": kube.TLSMount + "/ca.pem"})
	if err := kube.CheckRunFlags(changed, value, "tls"); err != nil {
		t.Error(err)
	}
	if !slices.Contains(kube.TLSFileFlags, "cacert") {
		t.Error("--cacert is not a TLS file flag")
	}
}

func TestStorageSize(t *testing.T) {
	if q, err := kube.StorageSize("5Gi"); err != nil || q.String() != "5Gi" {
		t.Errorf("5Gi: %v %v", q.String(), err)
	}
	for size, want := range map[string]string{
		"-1Gi": "--storage-size -1Gi: want a positive quantity such as 1Gi or 500Mi",
		"0":    "--storage-size 0: want a positive quantity such as 1Gi or 500Mi",
		"big":  `--storage-size "big"`,
	} {
		if _, err := kube.StorageSize(size); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", size, err, want)
		}
	}
}

// The Job's flags it would not use are refused, not dropped: a claim's
// size and class beside an existing --claim, etcd's Secrets on ZooKeeper.
func TestCheckJobFlags(t *testing.T) {
	for _, c := range []struct {
		given map[string]string // flags set
		want  string            // "": accepted
	}{
		{map[string]string{"claim": "nfs", "storage-size": "5Gi"}, "--storage-size: --claim uses an existing claim, whose size is its own: drop --storage-size"},
		{map[string]string{"claim": "nfs", "storage-class": "fast"}, "--storage-class: --claim uses an existing claim, whose class is its own: drop --storage-class"},
		{map[string]string{"storage-size": "5Gi", "storage-class": "fast"}, ""},
		{map[string]string{"claim": "nfs", "access-mode": "ReadWriteOnce"}, ""},
	} {
		changed := func(n string) bool { _, ok := c.given[n]; return ok }
		err := kube.CheckJobFlags(changed, func(n string) string { return c.given[n] })
		if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("%v: error %v, want %q", c.given, err, c.want)
		}
	}
}
