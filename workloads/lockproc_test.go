package workloads

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/safety"
)

// scriptWorker runs script (sh) as client 0's worker process and hands its
// events to a recorder, as a case does, until it exits.
func scriptWorker(t *testing.T, script string) (*lockProc, *lockRecorder, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cp := &ClientProcesses{Clients: []int{0}, Command: func(int) *exec.Cmd { return exec.Command("sh", "-c", script) }}
	procs, err := startLockProcs(ctx, cp, LockWorkerSpec{Variant: "fair", Path: "/zkbench/t/lock"})
	if err != nil {
		t.Fatal(err)
	}
	p := procs[0]
	rec := newLockRecorder(0, measuringWindow(), NewLockChecker(), safety.NewRegister(false), results.NewStripes(1), 100*time.Millisecond, false)
	start := time.Now()
	p.run(ctx, rec, NewRunLog(nil, time.Now()))
	return p, rec, time.Since(start)
}

// The parent acknowledges the worker's exit once it has recorded it, and
// the worker's released ends its release.
func TestLockProcAckAndReleased(t *testing.T) {
	p, rec, _ := scriptWorker(t, `read spec
echo '{"seq":1,"kind":"session","session":7}'
read start
echo '{"seq":2,"kind":"asked","at_ns":1000,"intended_ns":1000}'
echo '{"seq":3,"kind":"granted","at_ns":2000,"token":5}'
echo '{"seq":4,"kind":"write","at_ns":2000,"token":5}'
echo '{"seq":5,"kind":"exit","at_ns":3000,"ack":true}'
read ack
case "$ack" in
'{"cmd":"ack","seq":5}') echo '{"seq":6,"kind":"released","at_ns":4000}' ;;
*) echo '{"seq":6,"kind":"error","err":"want the ack of 5, got '"$ack"'"}' ;;
esac
`)
	if !strings.Contains(p.note, "exited during the case") {
		t.Errorf("note %q: want only that it exited", p.note)
	}
	if rec.state != stateIdle || rec.ops.Succeeded != 1 || rec.ops.Issued != 1 {
		t.Errorf("recorder %s with ops %+v: want the grant and its release recorded", rec.state, rec.ops)
	}
	if chk := rec.checker.Result(); chk.Exclusion.Unbalanced != 0 || chk.Safety.Checked != 1 {
		t.Errorf("checker %+v %+v", chk.Safety, chk.Exclusion)
	}
	if st := rec.fence.Stats(); st.Writes != 1 {
		t.Errorf("register %+v: want the write", st)
	}
}

// A line the parent cannot take is noted and the worker killed at once; its
// wait is settled as failed. Nothing is skipped.
func TestLockProcProtocolErrors(t *testing.T) {
	for name, tc := range map[string]struct{ events, want string }{
		"unknown kind": {`echo '{"seq":2,"kind":"bogus"}'`, `unknown event kind "bogus"`},
		"gap":          {`echo '{"seq":4,"kind":"granted","token":1}'`, "event 4 after 2"},
		"not json":     {`echo '3 granted 1 0'`, "unreadable event"},
		"out of order": {`echo '{"seq":3,"kind":"released"}'`, "released while asking"},
		"session":      {`echo '{"seq":3,"kind":"session","session":8}'`, "a second session event"},
	} {
		t.Run(name, func(t *testing.T) {
			events := tc.events
			if name != "unknown kind" {
				events = `echo '{"seq":2,"kind":"asked","at_ns":1000,"intended_ns":1000}'` + "\n" + events
			}
			p, rec, took := scriptWorker(t, "read spec\necho '{\"seq\":1,\"kind\":\"session\",\"session\":7}'\nread start\n"+
				events+"\nexec sleep 20\n")
			if !strings.Contains(p.note, "killed") || !strings.Contains(p.note, tc.want) {
				t.Errorf("note %q: want it killed for %q", p.note, tc.want)
			}
			if took > 10*time.Second {
				t.Errorf("the broken worker ran on for %v", took)
			}
			if rec.state != stateIdle {
				t.Errorf("recorder left %s", rec.state)
			}
			if name != "unknown kind" && (rec.ops.Failed != 1 || rec.errs["other"] != 1) {
				t.Errorf("ops %+v errors %v: want the abandoned wait failed", rec.ops, rec.errs)
			}
		})
	}
}
