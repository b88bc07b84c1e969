package runflags

import (
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/runner"
	"github.com/zkbench/zkbench/workloads"
)

// TestCheckFlagsRead: a flag the run would not read is refused, naming
// it and who reads it; the flags it reads pass. (cmd/zkbench's run tests
// give the same refusals on the command line.)
func TestCheckFlagsRead(t *testing.T) {
	lock, err := workloads.Lookup("lock")
	if err != nil {
		t.Fatal(err)
	}
	barrier, err := workloads.Lookup("barrier")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		given flagsGiven
		spec  *workloads.Spec
		want  string // "": accepted
	}{
		{"lock reads hold", flagsGiven{Changed: []string{"hold", "think"}, Backend: "etcd"}, &lock, ""},
		{"other backend", flagsGiven{Changed: []string{"lease-ttl"}, Backend: "zookeeper"}, &lock, "--lease-ttl: only etcd reads it"},
		{"knob", flagsGiven{Changed: []string{"think"}, Backend: "etcd"}, &barrier, "--think: the barrier workload does not read it (only the"},
		{"preset on a lock", flagsGiven{Changed: []string{"preset"}, Backend: "etcd", Preset: workloads.PresetPaperBarrier}, &lock, "--preset: the lock workload does not read it (only the barrier workload does)"},
		{"scale alone", flagsGiven{Changed: []string{"scale"}, Backend: "etcd"}, &barrier, "--scale: it scales a --preset's grid"},
		{"clients with a preset", flagsGiven{Changed: []string{"clients", "preset"}, Backend: "etcd", Preset: workloads.PresetPaperBarrier}, &barrier, "--clients: --preset"},
		{"nodes with endpoints", flagsGiven{Changed: []string{"nodes"}, Backend: "etcd", Endpoints: true}, nil, "--nodes: zkbench starts no servers"},
		{"no workload", flagsGiven{Changed: []string{"think", "digest"}, Backend: "zookeeper"}, nil, ""},
		{"cert without key", flagsGiven{Changed: []string{"cert"}, Backend: "etcd"}, nil, "--cert without --key: give the client's certificate and its key, or neither"},
		{"key without cert", flagsGiven{Changed: []string{"key", "cacert"}, Backend: "etcd"}, &lock, "--key without --cert"},
		{"cert and key", flagsGiven{Changed: []string{"key", "cert"}, Backend: "etcd"}, &lock, ""},
		{"a Job's etcd Secret on zookeeper", flagsGiven{Changed: []string{"tls-secret"}, Backend: "zookeeper"}, &lock, "--tls-secret: only etcd reads it"},
	} {
		err := checkFlagsRead(tc.given, tc.spec)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestParamFlags: every workload parameter is one flag, its help naming
// the workloads that read it; a value is checked against the run's
// workload and variants.
func TestParamFlags(t *testing.T) {
	lock, err := workloads.Lookup("lock")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range paramFlags() {
		if seen[d.Param.Flag()] {
			t.Errorf("--%s declared twice", d.Param.Flag())
		}
		seen[d.Param.Flag()] = true
		usage, _ := d.Usage()
		for _, w := range d.Workloads {
			if !strings.Contains(usage, w) {
				t.Errorf("--%s: usage %q does not name %s", d.Param.Flag(), usage, w)
			}
		}
		if _, ok := lock.Param(d.Param.Key); !ok {
			if err := d.Check(lock, lock.DefaultVariants("etcd"), d.Param.Default); err == nil || !strings.Contains(err.Error(), "the lock workload does not read it") {
				t.Errorf("--%s on a lock: %v", d.Param.Flag(), err)
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("no parameter flags")
	}
}

func TestAutoDuration(t *testing.T) {
	var d autoDuration
	for _, tc := range []struct {
		in, out string
		bad     bool
	}{{"auto", "auto", false}, {"1.5s", "1.5s", false}, {"0", "0s", false}, {"-1s", "", true}, {"soon", "", true}} {
		err := d.Set(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && d.String() != tc.out) {
			t.Errorf("%q: %v %v", tc.in, d.String(), err)
		}
	}
	if d.Set("auto"); time.Duration(d) != runner.Auto {
		t.Errorf("auto is %v", time.Duration(d))
	}
	if !strings.Contains(variantsUsage(), "lock: ") {
		t.Errorf("variants usage %q", variantsUsage())
	}
}

func TestParseClients(t *testing.T) {
	got, err := parseClients(" 10, 100,10,1000 ")
	if err != nil || len(got) != 3 || got[0] != 10 || got[2] != 1000 {
		t.Errorf("%v %v, want [10 100 1000]", got, err)
	}
	for _, bad := range []string{"", "ten", "0", "100001"} {
		if _, err := parseClients(bad); err == nil || !strings.HasPrefix(err.Error(), "--clients") {
			t.Errorf("%q: %v, want an error naming --clients", bad, err)
		}
	}
}

func TestParsePIDs(t *testing.T) {
	got, err := parsePIDs("127.0.0.1:2181=42,127.0.0.1:2182=43")
	if err != nil || got["127.0.0.1:2181"] != 42 || got["127.0.0.1:2182"] != 43 {
		t.Errorf("%v %v", got, err)
	}
	for _, bad := range []string{"127.0.0.1:2181", "=42", "a=0", "a=x"} {
		if _, err := parsePIDs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
