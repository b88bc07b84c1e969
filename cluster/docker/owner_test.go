package docker

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/zkbench/zkbench/internal/procstat"
)

// TestJudge decides, for each kind of owner label, whether its cluster is
// left over, seen from a process on host "vm1" that owns nothing.
func TestJudge(t *testing.T) {
	self := owner{host: "vm1", machine: "m1", boot: "b2", pidNS: "4026531836", pid: 100, start: 5000}
	// Process 200 runs, started at tick 7000; every other pid is free.
	startOf := func(pid int) (uint64, error) {
		if pid == 200 {
			return 7000, nil
		}
		if pid == 300 {
			return 0, fmt.Errorf("procstat: process %d runs but /proc does not show it", pid)
		}
		return 0, fmt.Errorf("%w: %d", procstat.ErrNoProcess, pid)
	}
	other := func(edit func(*owner)) string {
		o := owner{host: "vm1", machine: "m1", boot: "b2", pidNS: "4026531836", pid: 200, start: 7000}
		edit(&o)
		return o.String()
	}
	for _, tc := range []struct {
		name  string
		label string
		gone  bool
		why   string
	}{
		{"owner runs", other(func(*owner) {}), false, "owned by process 200, which runs"},
		{"pid gone", other(func(o *owner) { o.pid = 201 }), true, "left by process 201 (no longer running)"},
		{"pid alive with a different start time", other(func(o *owner) { o.start = 6999 }), true,
			"left by process 200 (no longer running; its pid now names another process)"},
		{"earlier boot", other(func(o *owner) { o.boot = "b1" }), true, "left by process 200 before this machine restarted"},
		{"earlier boot, renamed host", other(func(o *owner) { o.boot, o.host = "b1", "old-name" }), true, "before this machine restarted"},
		{"other host", other(func(o *owner) { o.host, o.machine, o.boot, o.pid = "vm2", "m2", "b9", 201 }), false, "on another host, vm2"},
		{"other host of the same name", other(func(o *owner) { o.machine, o.boot, o.pid = "m2", "b9", 201 }), false, "on another host"},
		{"other host, no machine ids", other(func(o *owner) { o.host, o.machine, o.boot, o.pid = "vm2", "", "b9", 201 }), false, "on another host"},
		{"another pid namespace", other(func(o *owner) { o.pidNS, o.pid = "4026532000", 201 }), false, "another pid namespace"},
		{"hidden from /proc", other(func(o *owner) { o.pid = 300 }), false, "does not show it"},
		{"owner without /proc", other(func(o *owner) { o.pid, o.start = 0, 0 }), false, "which /proc cannot check"},
		{"no label", "", true, "left by a zkbench older than owner labels"},
		{"unreadable label", "vm1/1234", false, "unreadable owner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gone, why := judge(tc.label, self, startOf)
			if gone != tc.gone || !strings.Contains(why, tc.why) {
				t.Errorf("judge(%q) = %v, %q: want %v, %q", tc.label, gone, why, tc.gone, tc.why)
			}
		})
	}
	if gone, why := judge(other(func(o *owner) { o.pid = 201 }), owner{host: "vm1"}, startOf); gone {
		t.Errorf("a process without /proc judged a cluster gone: %s", why)
	}
}

// TestThisProcess: the owner label of this process names it, and judge
// finds it running.
func TestThisProcess(t *testing.T) {
	self := thisProcess()
	if self.pid != os.Getpid() || self.boot == "" || self.pidNS == "" || self.start == 0 {
		t.Fatalf("thisProcess() = %+v", self)
	}
	o, err := parseOwner(self.String())
	if err != nil || o != self {
		t.Fatalf("parseOwner(%q) = %+v, %v: want %+v", self.String(), o, err, self)
	}
	if gone, why := judge(self.String(), self, procstat.StartTicks); gone {
		t.Errorf("this process judged gone: %s", why)
	}
}

func FuzzParseOwner(f *testing.F) {
	f.Add("vm1/3d1219c7c4c5404aaa1f6d2a48adfda4/35a4e57e-4a59-42c0-b7c2-d3058bedfe02/4026531836/1234/98765")
	f.Add("a/b//c/d//0/0")
	f.Add("////1/2")
	f.Add("vm1/x")
	f.Fuzz(func(t *testing.T, s string) {
		o, err := parseOwner(s)
		if err != nil {
			return
		}
		again, err := parseOwner(o.String())
		if err != nil || again != o {
			t.Fatalf("%q parses to %+v, which prints as %q and parses to %+v, %v", s, o, o.String(), again, err)
		}
	})
}
