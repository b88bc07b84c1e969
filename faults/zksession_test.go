package faults_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
	zkbackend "github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/faults"
	"github.com/zkbench/zkbench/faults/proxy"
	"github.com/zkbench/zkbench/faults/schedule"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// stateLog keeps the session states ZKSessions reported, per session.
type stateLog struct {
	mu sync.Mutex
	by map[int64][]faults.SessionState
}

func (l *stateLog) add(s int64, st faults.SessionState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[int64][]faults.SessionState{}
	}
	l.by[s] = append(l.by[s], st)
}

func (l *stateLog) of(s int64) []faults.SessionState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.by[s])
}

func TestZKSessionsSeesStatesAndExpires(t *testing.T) {
	ep := testcluster.ZooKeeperEndpoints(t)[0]
	p, err := proxy.New(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	log := &stateLog{}
	zs := faults.NewZKSessions(log.add)
	// The longest session the test servers allow: an expiry that is not
	// forced comes no sooner.
	const timeout = 10 * time.Second
	conn, _, err := zk.Connect([]string{p.Addr()}, timeout, zk.WithLogger(quiet{}), zk.WithDialer(zs.Dialer(nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	waitUntil(t, "session", func() bool { return conn.State() == zk.StateHasSession })
	sid := conn.SessionID()
	if got := log.of(sid); !slices.Equal(got, []faults.SessionState{faults.SessionConnected}) || !zs.Known(sid) {
		t.Fatalf("states %v, want [connected]", got)
	}

	// A reset: the client sees the connection drop and gets its session back.
	p.ResetAll()
	waitUntil(t, "reconnected", func() bool { return len(log.of(sid)) == 3 })
	if got := log.of(sid); !slices.Equal(got, []faults.SessionState{faults.SessionConnected, faults.SessionDisconnected, faults.SessionReconnected}) {
		t.Fatalf("states after a reset %v", got)
	}

	// Forced expiry: the ephemeral node goes at once, the client hears of it.
	ns := testcluster.TestNamespace(t, testcluster.ZooKeeperBackend(t))
	for _, path := range []string{"/zkbench", ns} {
		if _, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	eph := ns + "/eph"
	if _, err := conn.Create(eph, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	direct, _, err := zk.Connect([]string{ep}, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := zs.Expire(ctx, []string{ep}, sid); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "ephemeral node removed", func() bool {
		ok, _, err := direct.Exists(eph)
		return err == nil && !ok
	})
	t.Logf("forced expiry removed the ephemeral node in %v (session timeout %v)", time.Since(start).Round(time.Millisecond), timeout)
	if time.Since(start) > timeout-2*time.Second {
		t.Fatalf("expiry took %v of a %v session: not forced", time.Since(start), timeout)
	}
	waitUntil(t, "client told", func() bool { return slices.Contains(log.of(sid), faults.SessionExpired) })
	t.Logf("states of session 0x%x: %v", sid, log.of(sid))
	if err := zs.Expire(ctx, []string{ep}, sid); !errors.Is(err, faults.ErrSessionGone) {
		t.Fatalf("second Expire: %v, want ErrSessionGone", err)
	}
	if err := zs.Expire(ctx, []string{ep}, 12345); !errors.Is(err, faults.ErrUnknownSession) {
		t.Fatalf("Expire of an unseen session: %v, want ErrUnknownSession", err)
	}
}

func TestZKSessionsCloseIsNotADisconnect(t *testing.T) {
	ep := testcluster.ZooKeeperEndpoints(t)[0]
	log := &stateLog{}
	zs := faults.NewZKSessions(log.add)
	conn, _, err := zk.Connect([]string{ep}, 4*time.Second, zk.WithLogger(quiet{}), zk.WithDialer(zs.Dialer(nil)))
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "session", func() bool { return conn.State() == zk.StateHasSession })
	sid := conn.SessionID()
	conn.Close()
	time.Sleep(200 * time.Millisecond)
	if got := log.of(sid); !slices.Equal(got, []faults.SessionState{faults.SessionConnected}) {
		t.Fatalf("states %v: a deliberate close must not read as a disconnect", got)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(fmt.Sprintf("timed out waiting: %s", what))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTargetCutsOneZooKeeperClientByTag cuts one client of a real backend
// through shared proxies that tell clients apart by the session in their
// ZooKeeper handshake: its session expires on the server, the other
// client's does not, and it learns of the expiry when the cut ends.
func TestTargetCutsOneZooKeeperClientByTag(t *testing.T) {
	ep := testcluster.ZooKeeperEndpoints(t)
	tags := proxy.NewTags()
	g, err := proxy.NewGroup(context.Background(), ep, proxy.WithTags(tags))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	// The schedule counts from tl.start; the timeline is reset just before
	// the schedule runs, so slow set-up on a loaded machine cannot eat the
	// cut (CI saw a cut that had mostly passed before it was armed).
	tl := newTimeline()
	sessions := faults.NewSessionTimeline(tl)
	zs := faults.NewZKSessions(sessions.Observe)
	zs.TagClients(tags)
	b, err := zkbackend.New(zkbackend.Config{Endpoints: g.Addrs(), SessionTimeout: 2 * time.Second}, zkbackend.WithDialer(zs.Dialer(nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ns := namespace(t, b)
	s0, s1 := newSession(t, b), newSession(t, b)
	ids := []int64{s0.ID(), s1.ID()}
	zs.SetClients(ids)
	sessions.SetSessions(ids)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, s := range []backends.Session{s0, s1} {
		if _, err := s.Create(ctx, fmt.Sprintf("%s/eph-%d", ns, i), nil); err != nil {
			t.Fatal(err)
		}
	}
	target := faults.NewTarget(faults.WithProxies(g), faults.WithTaggedClients(), faults.WithClients(2))
	// Cut for 6 s: the server expires the 2 s session within about 3 s
	// (a tick late at most), and the test must see that while the cut
	// lasts, which 4 s left a loaded machine too little room for.
	fs, err := schedule.ParseAll([]string{"cut-client:1@0s+6s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := schedule.Validate(fs, target.Limits()); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer rcancel()
	go schedule.Run(rctx, tl.restart(), fs, target, tl)
	waitUntil(t, "client 1's node removed by the server", func() bool {
		gctx, gcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer gcancel()
		_, _, err := s0.Get(gctx, ns+"/eph-1")
		return errors.Is(err, backends.ErrNoNode)
	})
	select {
	case <-s1.Done():
		t.Fatal("client 1 learned of its expiry while cut off")
	default:
	}
	gctx, gcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer gcancel()
	if _, _, err := s0.Get(gctx, ns+"/eph-0"); err != nil {
		t.Fatalf("client 0 while client 1 is cut: %v", err)
	}
	select {
	case <-s1.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("client 1 never learned of its expiry after the cut")
	}
	<-rctx.Done()
	ev, ok := tl.find("session", string(faults.SessionExpired))
	if !ok || ev.client != 1 {
		t.Fatalf("timeline lacks client 1's expiry:%s", tl)
	}
	select {
	case <-s0.Done():
		t.Fatal("client 0's session ended")
	default:
	}
	t.Logf("timeline:%s", tl)
}
