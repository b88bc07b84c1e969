package workloads

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testcluster"
	"github.com/zkbench/zkbench/results"
)

// TestConfigEveryClientReloads: on both backends every variant brings every
// client to the last version with the data written; the watch variants
// notify each client about once an update (one-shot may coalesce, never
// more than one per update), the persistent one reads nothing, polling
// arms no watch.
func TestConfigEveryClientReloads(t *testing.T) {
	const n = 5
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range NewConfig().Variants(b.Kind()) {
			t.Run(v, func(t *testing.T) {
				cfg := results.Config{Duration: 2 * time.Second, Rate: 10,
					Params: map[string]string{ParamSize: strconv.Itoa(4 << 10), ParamPoll: "50ms"}}
				res := runRecipeCase(t, NewConfig(), b, v, n, cfg)
				if res.Ops.Succeeded < 5 || res.Safety.Checked != n || res.Safety.Violations != 0 {
					t.Fatalf("%d updates, safety %+v, errors %v, notes %v", res.Ops.Succeeded, res.Safety, res.Errors, res.Notes)
				}
				prop, last := res.Latency["propagate"], res.Latency["propagate_last"]
				if last == nil || last.Count != res.Ops.Succeeded {
					t.Fatalf("propagate_last %+v, want one value an update (%d)", last, res.Ops.Succeeded)
				}
				skipped := res.PerOp["versions_skipped"] * float64(res.Ops.Succeeded)
				if prop == nil || float64(prop.Count)+skipped != float64(n*res.Ops.Succeeded) {
					t.Fatalf("propagate %+v + %.0f skipped != %d clients x %d updates", prop, skipped, n, res.Ops.Succeeded)
				}
				perClient := res.PerOp["watch_events"] / n
				t.Logf("%s %s: %.2f notifications and %.2f requests a client an update, %.0f bytes received an update, p99 %v, last p99 %v",
					b.Kind(), v, perClient, res.PerOp["requests"]/n, res.PerOp["bytes_received"], time.Duration(prop.P99), time.Duration(last.P99))
				switch v {
				case ConfigPolling:
					if res.Client.WatchesArmed != 0 {
						t.Errorf("polling armed %d watches", res.Client.WatchesArmed)
					}
				case ConfigPersistent:
					if res.Client.WatchesArmed != 0 || res.Client.Requests["get"] != 0 {
						t.Errorf("persistent armed %d watches and read %d times within the interval, want 0 and 0 (one stream, data in the events)",
							res.Client.WatchesArmed, res.Client.Requests["get"])
					}
					if perClient < 0.95 || perClient > 1.2 {
						t.Errorf("persistent: %.2f notifications a client an update, want 1", perClient)
					}
				case ConfigOneShot:
					if perClient > 1.2 || perClient < 0.5 {
						t.Errorf("one-shot: %.2f notifications a client an update, want about 1", perClient)
					}
				}
			})
		}
	})
}

// TestConfigRefusals: a size over the servers' limit and the persistent
// variant on ZooKeeper are refused before any server starts.
func TestConfigRefusals(t *testing.T) {
	w := NewConfig()
	if err := w.CheckRun(backends.ZooKeeper, []string{ConfigPersistent}, nil); !errors.Is(err, backends.ErrNoDataWatch) {
		t.Errorf("persistent on zookeeper: %v", err)
	}
	if err := w.CheckRun(backends.Etcd, []string{ConfigPersistent}, map[string]string{ParamSize: "1MB"}); err != nil {
		t.Errorf("1MB on etcd: %v", err)
	}
	if err := w.CheckRun(backends.ZooKeeper, []string{ConfigOneShot}, map[string]string{ParamSize: "1MB"}); !errors.Is(err, ErrBadCase) {
		t.Errorf("1MB on zookeeper (jute.maxbuffer 0xfffff): %v", err)
	}
	if err := w.CheckRun(backends.Etcd, nil, map[string]string{ParamSize: "2MB"}); !errors.Is(err, ErrBadCase) {
		t.Errorf("2MB on etcd: %v", err)
	}
	for in, want := range map[string]int{"512": 512, "64KB": 64 << 10, "1MB": 1 << 20, "1 MiB": 1 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}
