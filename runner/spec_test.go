package runner

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// TestSpecRoundTrip: a run's Spec encodes as JSON without its secrets,
// decodes to the same run, and a runner made from it has the same plan and
// cases as one made from the Config and options it describes.
func TestSpecRoundTrip(t *testing.T) {
	cfg := sweep()
	cfg.Backend, cfg.Clients, cfg.Repeat = backends.ZooKeeper, []int{2, 4}, 2
	cfg.Servers.Digest, cfg.Servers.Password = "bench:secret", "pw"
	cfg.Params = map[string]string{"fence": "off"}
	spec := Spec{Config: cfg, RunID: "spec-1", Output: t.TempDir(), Shard: &SpecShard{Index: 1, Count: 2, Timeout: time.Minute},
		RequireQuiet: true, ServerPIDs: map[string]int{"127.0.0.1:2181": 42}}
	cfg.Servers.Endpoints, spec.Config.Servers.Endpoints = []string{"127.0.0.1:2181"}, []string{"127.0.0.1:2181"}
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("secret")) || bytes.Contains(data, []byte(`"pw"`)) {
		t.Fatalf("a spec holds the servers' secrets: %s", data)
	}
	back, err := ReadSpec(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	back.Config.Servers.Digest, back.Config.Servers.Password = cfg.Servers.Digest, cfg.Servers.Password
	if !reflect.DeepEqual(back, spec) {
		t.Fatalf("decoded %+v\nwant %+v", back, spec)
	}
	r, err := NewFromSpec(back)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := New(cfg, WithRunID("spec-1"), WithOutput(spec.Output), WithShard(1, 2, time.Minute), WithQuietMachine(),
		WithServerProcesses(map[string]int{"127.0.0.1:2181": 42}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Cases(), direct.Cases()) || len(r.Cases()) != 4 {
		t.Errorf("cases from the spec %+v, from the options %+v", r.Cases(), direct.Cases())
	}
	if got := r.Spec(); !reflect.DeepEqual(got, back) {
		t.Errorf("the runner's own spec %+v, want what it was made from %+v", got, back)
	}
	// A spec another zkbench wrote with a field this one does not know
	// fails, naming it, rather than running something else.
	if _, err := ReadSpec(strings.NewReader(`{"config":{"workload":"lock"},"turbo":true}`)); err == nil || !strings.Contains(err.Error(), "turbo") {
		t.Errorf("unknown field: %v", err)
	}
}

// TestSpecFaults: a spec's faults are the option's (in the order they fire), and a bad one is
// refused naming the flag.
func TestSpecFaults(t *testing.T) {
	cfg := sweep()
	cfg.Servers.Mode, cfg.Servers.Nodes = Local, 3
	r, err := NewFromSpec(Spec{Config: cfg, Faults: []string{"kill-leader@1s+1s", "latency:20ms@0s+1s"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Spec().Faults; !reflect.DeepEqual(got, []string{"latency:20ms@0s+1s", "kill-leader@1s+1s"}) {
		t.Errorf("faults %v", got)
	}
	if _, err := NewFromSpec(Spec{Config: cfg, Faults: []string{"explode@1s"}}); err == nil || !strings.Contains(err.Error(), "--fault") {
		t.Errorf("bad fault: %v", err)
	}
}
