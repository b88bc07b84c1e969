package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkbench/zkbench/internal/fourlw"
)

func mode(t *testing.T, endpoint string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	reply, err := fourlw.Query(ctx, endpoint, "srvr")
	if err != nil {
		return "", err
	}
	s, err := fourlw.ParseSrvr(reply)
	return s.Mode, err
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

func TestStandaloneLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{TickTime: 500 * time.Millisecond, HeapMB: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	st := c.State()
	if len(st.Members) != 1 || !st.OwnsDir {
		t.Fatalf("state %+v", st)
	}
	ep := c.Endpoints()[0]
	if m, err := mode(t, ep); err != nil || m != "standalone" {
		t.Fatalf("mode %q, %v", m, err)
	}
	cfg, err := os.ReadFile(st.Members[0].ConfigPath)
	if err != nil || !strings.Contains(string(cfg), "maxClientCnxns=0") {
		t.Fatalf("config: %v\n%s", err, cfg)
	}
	pid := c.Members()[0].PID
	if !alive(pid) {
		t.Fatalf("pid %d not alive", pid)
	}
	if got := c.PIDs()[ep]; got != pid {
		t.Fatalf("PIDs()[%s] = %d, want %d", ep, got, pid)
	}

	// The state survives a JSON round trip.
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(raw, &back); err != nil || back.Members[0].ClientPort != st.Members[0].ClientPort {
		t.Fatalf("round trip: %v %+v", err, back)
	}

	// Paused, it answers nothing; resumed, it answers again.
	if err := c.Pause(0); err != nil {
		t.Fatal(err)
	}
	if _, err := mode(t, ep); !errors.Is(err, fourlw.ErrNoAnswer) {
		t.Errorf("paused server answered srvr: %v", err)
	}
	if err := c.Resume(0); err != nil {
		t.Fatal(err)
	}
	if m, err := mode(t, ep); err != nil || m != "standalone" {
		t.Fatalf("resumed: mode %q, %v", m, err)
	}

	// Killed, it is gone; restarted on the same port, it serves.
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if alive(pid) || c.Members()[0].PID != 0 {
		t.Fatalf("killed pid %d still alive or recorded", pid)
	}
	if _, err := mode(t, ep); !errors.Is(err, fourlw.ErrUnreachable) {
		t.Errorf("killed server: %v, want unreachable", err)
	}
	if err := c.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if c.Endpoints()[0] != ep {
		t.Fatalf("restart moved %s to %s", ep, c.Endpoints()[0])
	}
	pid = c.Members()[0].PID
	if m, err := mode(t, ep); err != nil || m != "standalone" {
		t.Fatalf("restarted: mode %q, %v", m, err)
	}

	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("pid %d alive after Stop", pid)
	}
	if _, err := os.Stat(st.Dir); !os.IsNotExist(err) {
		t.Errorf("dir %s left after Stop: %v", st.Dir, err)
	}
}

func TestEnsembleElectsAndFailsOver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The tick of the other test ensembles. With ZooKeeper's limits
	// (syncLimit 5, initLimit 10 ticks), 200 ms ticks gave a leader up
	// after 1 s without a ping and a follower 2 s to sync, which a loaded
	// machine can exceed: an election between Start and the checks below
	// makes a member answer that it is not serving.
	c, err := Start(ctx, Options{Nodes: 3, TickTime: 500 * time.Millisecond, HeapMB: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	leader := -1
	for i, ep := range c.Endpoints() {
		m, err := mode(t, ep)
		if err != nil {
			t.Fatal(err)
		}
		switch m {
		case "leader":
			if leader >= 0 {
				t.Fatalf("two leaders: %d and %d", leader, i)
			}
			leader = i
		case "follower":
		default:
			t.Fatalf("member %d mode %q", i, m)
		}
	}
	if leader < 0 {
		t.Fatal("no leader")
	}
	// Kill the leader: the other two elect one of themselves.
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for newLeader := -1; newLeader < 0; {
		if time.Now().After(deadline) {
			t.Fatal("no new leader within 30s of killing the old one")
		}
		for i, ep := range c.Endpoints() {
			if m, err := mode(t, ep); i != leader && err == nil && m == "leader" {
				newLeader = i
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The old leader rejoins as a follower.
	if err := c.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if m, err := mode(t, c.Endpoints()[leader]); err != nil || m != "follower" {
		t.Fatalf("restarted old leader: mode %q, %v", m, err)
	}
}

func TestNotInstalledSaysWhatToInstall(t *testing.T) {
	t.Setenv("ZOOKEEPER_HOME", t.TempDir())
	_, err := Start(context.Background(), Options{})
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
	if !strings.Contains(err.Error(), "apt-get install zookeeper") {
		t.Errorf("message does not say what to install: %v", err)
	}
	t.Setenv("ZOOKEEPER_HOME", "")
	t.Setenv("JAVA_HOME", t.TempDir())
	if _, err := Find(); !errors.Is(err, ErrNoJava) {
		t.Errorf("Find with an empty JAVA_HOME = %v, want ErrNoJava", err)
	}
}

func TestRejectsEvenEnsemble(t *testing.T) {
	if _, err := Start(context.Background(), Options{Nodes: 2}); err == nil {
		t.Fatal("Start accepted 2 nodes")
	}
}

func TestStartFailureQuotesLog(t *testing.T) {
	dir := t.TempDir()
	// The JVM dies as it reads its configuration, a second or two after
	// it starts; a loaded machine may take several. 60 s is far from that
	// and from the ctx a Start that missed the death would wait for.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	_, err := Start(ctx, Options{Dir: dir, HeapMB: 64, Extra: map[string]string{"tickTime": "soon"}})
	if err == nil {
		t.Fatal("a server with tickTime=soon started")
	}
	if !strings.Contains(err.Error(), "exited during start") || !strings.Contains(err.Error(), "soon") {
		t.Fatalf("error does not quote the server's log: %v", err)
	}
	d := time.Since(start)
	if d > 60*time.Second {
		t.Errorf("took %v to notice the server died", d)
	}
	t.Logf("noticed the server's death after %v", d.Round(time.Millisecond))
	// A folder the caller gave is kept, with the log in it.
	if _, err := os.Stat(dir + "/node1/server.log"); err != nil {
		t.Errorf("log not kept: %v", err)
	}
}
