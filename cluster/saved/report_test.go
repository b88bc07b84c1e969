package saved

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// TestReportWrite: status prints a line a member, the endpoints of a
// serving cluster, the way to remove a stale one, and the log of a member
// that does not answer.
func TestReportWrite(t *testing.T) {
	base := Report{Backend: backends.ZooKeeper, StateFile: "/s/cluster-zookeeper.json", Started: time.Now(),
		Endpoints: []string{"127.0.0.1:1", "127.0.0.1:2"}}
	for _, tc := range []struct {
		health  string
		members []MemberReport
		want    []string
	}{
		{"serving", []MemberReport{{Name: "zk1", Endpoint: "127.0.0.1:1", PID: 7, Running: true, Role: "leader", Version: "3.8"}},
			[]string{"zookeeper: serving, 1 member,", "zk1  127.0.0.1:1  pid 7  running  leader 3.8", "--endpoints 127.0.0.1:1,127.0.0.1:2"}},
		{"stale", []MemberReport{{Name: "zk1", PID: 7}, {Name: "zk2", PID: 8}},
			[]string{"2 members", "not running", "zkbench cluster down --state /s/cluster-zookeeper.json"}},
		{"degraded", []MemberReport{{Name: "zk1", PID: 7, Running: true, Error: "timeout", Log: "/s/zk1.log"}},
			[]string{"no answer: timeout", "zk1's log: /s/zk1.log"}},
	} {
		r := base
		r.Health, r.Members = tc.health, tc.members
		var out strings.Builder
		r.Write(&out)
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: no %q in\n%s", tc.health, w, out.String())
			}
		}
	}
}

// TestNothingSaved: down and status of a state file that does not exist
// find nothing and fail on nothing.
func TestNothingSaved(t *testing.T) {
	state := filepath.Join(t.TempDir(), "none.json")
	found, paths, err := DownAll(context.Background(), backends.Etcd, state, func(string) { t.Error("said something") })
	if found != 0 || err != nil || len(paths) != 1 || paths[0] != state {
		t.Errorf("down: found %d, paths %q, %v", found, paths, err)
	}
	reports, paths, err := StatusAll(context.Background(), "", state, time.Second)
	if len(reports) != 0 || err != nil || len(paths) != 1 {
		t.Errorf("status: %v, paths %q, %v", reports, paths, err)
	}
}
