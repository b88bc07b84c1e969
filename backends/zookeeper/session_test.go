package zookeeper_test

import (
	"context"
	"errors"
	"net"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
)

func TestNodesAndCreateRev(t *testing.T) {
	b := open(t, zookeeper.Config{})
	s := newSession(t, b)
	ns := namespace(t, b, s)
	ctx := ctxT(t)
	if s.ID() == 0 || s.Conn() == nil || s.Conn().State() != zk.StateHasSession {
		t.Fatalf("session id %x, conn %v", s.ID(), s.Conn())
	}

	n1, err := s.Create(ctx, ns+"/a", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	n2, err := s.Create(ctx, ns+"/b", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Create reads nothing back, so it cannot know the czxid; Get does.
	if n1.CreateRev != 0 || n2.CreateRev != 0 {
		t.Fatalf("Create CreateRev %d, %d: want 0 (no read after a create)", n1.CreateRev, n2.CreateRev)
	}
	data, g, err := s.Get(ctx, ns+"/a")
	if err != nil || string(data) != "x" || g.CreateRev <= 0 {
		t.Fatalf("Get = %q %+v %v", data, g, err)
	}
	_, g2, err := s.Get(ctx, ns+"/b")
	if err != nil || g2.CreateRev <= g.CreateRev {
		t.Fatalf("czxids %d then %d (%v): want positive and growing", g.CreateRev, g2.CreateRev, err)
	}
	if _, err := s.Create(ctx, ns+"/a", nil); !errors.Is(err, backends.ErrNodeExists) {
		t.Fatalf("second Create: %v, want ErrNodeExists", err)
	}
	if _, err := s.Create(ctx, ns+"/missing/c", nil); !errors.Is(err, backends.ErrNoNode) {
		t.Fatalf("Create without parent: %v, want ErrNoNode", err)
	}

	// Protected sequential names: prefix, 16 hex tag, '-', 10 digits.
	if err := s.EnsurePath(ctx, ns+"/q/deep"); err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`^lock-[0-9a-f]{16}-[0-9]{10}$`)
	var last backends.Node
	for i := 0; i < 3; i++ {
		n, err := s.CreateSequential(ctx, ns+"/q", "lock-", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !name.MatchString(n.Name) || n.Path != ns+"/q/"+n.Name {
			t.Fatalf("sequential node %+v", n)
		}
		if n.CreateRev != 0 || i > 0 && n.Seq <= last.Seq {
			t.Fatalf("node %+v not after %+v (or has a CreateRev it cannot know)", n, last)
		}
		last = n
	}
	kids, err := s.Children(ctx, ns+"/q")
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 4 || kids[0].Name != "deep" || kids[3].Seq != last.Seq {
		t.Fatalf("children %+v: want the persistent 'deep' first, then by Seq", kids)
	}
	if err := s.Delete(ctx, ns+"/a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, ns+"/a"); !errors.Is(err, backends.ErrNoNode) {
		t.Fatalf("second Delete: %v, want ErrNoNode", err)
	}
}

func TestCancelReturnsPromptly(t *testing.T) {
	b := open(t, zookeeper.Config{})
	s := newSession(t, b)
	ns := namespace(t, b, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if _, err := s.Create(ctx, ns+"/x", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create with a cancelled ctx: %v", err)
	}
	// A watch ends (closed, no event) when its ctx does.
	wctx, wcancel := context.WithCancel(context.Background())
	_, _, ch, err := s.ExistsW(wctx, ns+"/never")
	if err != nil {
		t.Fatal(err)
	}
	wcancel()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("cancelled watch delivered %v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("cancelled watch channel not closed %v after the cancels", time.Since(start))
	}
	// Milliseconds on a quiet machine; nothing here waits for the server.
	d := time.Since(start)
	if d > 10*time.Second {
		t.Fatalf("a cancelled Create and a cancelled watch took %v to return", d)
	}
	t.Logf("a cancelled Create and a cancelled watch returned within %v", d.Round(time.Millisecond))
}

// Close ends the session on the server at once: its ephemeral node goes
// before the session could have expired (its timeout is the 10 s the test
// servers allow at most), and Done is closed when Close returns.
func TestCloseEndsSession(t *testing.T) {
	b := open(t, zookeeper.Config{})
	watcher := newSession(t, b)
	ns := namespace(t, b, watcher)
	const timeout = 10 * time.Second
	s := newSession(t, open(t, zookeeper.Config{SessionTimeout: timeout}))
	ctx := ctxT(t)
	if _, err := s.Create(ctx, ns+"/eph", nil); err != nil {
		t.Fatal(err)
	}
	_, _, own, err := s.ExistsW(ctx, ns+"/other")
	if err != nil {
		t.Fatal(err)
	}
	_, _, gone, err := watcher.ExistsW(ctx, ns+"/eph")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.Close()
	closed := time.Since(start)
	select {
	case <-s.Done():
	default:
		t.Fatal("Done open after Close returned")
	}
	if ev := <-own; ev.Type != backends.EventSessionLost {
		t.Errorf("own watch after Close: %v", ev.Type)
	}
	// An expiry would come no sooner than the timeout after the session's
	// last packet, which was at the earliest when Close began.
	select {
	case ev := <-gone:
		if ev.Type != backends.EventDeleted {
			t.Errorf("other session's watch: %v, want deleted (ephemeral removed by Close)", ev.Type)
		}
		t.Logf("Close returned after %v, the ephemeral went within %v", closed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	case <-time.After(time.Until(start.Add(timeout - time.Second))):
		t.Fatalf("the ephemeral still there %v after Close began (Close returned after %v): Close did not end the %v session", time.Since(start), closed, timeout)
	}
	if _, err := s.Create(ctx, ns+"/again", nil); !errors.Is(err, backends.ErrSessionLost) {
		t.Errorf("Create after Close: %v, want ErrSessionLost", err)
	}
	s.Close() // twice is fine
}

// TestReplyTooLarge: a listing larger than the receive buffer fails with
// ErrReplyTooLarge (go-zookeeper only drops the connection), and the
// session carries on.
func TestReplyTooLarge(t *testing.T) {
	b := open(t, zookeeper.Config{RecvBufferSize: 8 << 10})
	s := newSession(t, b)
	ns := namespace(t, b, s)
	// The 1,300 creates below are round trips one after the other: on a
	// loaded machine under -race they outlast ctxT's 10 s, which bounds
	// only the calls that could hang.
	setup, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := 0; i < 300; i++ { // 300 x (4 + 32) bytes > 8 KiB
		if _, err := s.CreateSequential(setup, ns, "lock-", nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx := ctxT(t)
	start := time.Now()
	_, err := s.Children(ctx, ns)
	if !errors.Is(err, zookeeper.ErrReplyTooLarge) {
		t.Fatalf("Children of 300 into 8 KiB: %v, want ErrReplyTooLarge", err)
	}
	// ctx (10 s) bounds the call: a hang would end in DeadlineExceeded.
	t.Logf("ErrReplyTooLarge after %v", time.Since(start).Round(time.Millisecond))
	t.Log(err)
	if _, _, err := s.Get(ctx, ns); err != nil {
		t.Fatalf("session unusable after a too-large reply: %v", err)
	}
	if got := zookeeper.RecvBufferForChildren(10000); got != 16<<10+560000 {
		t.Errorf("RecvBufferForChildren(10000) = %d", got)
	}
	big := newSession(t, open(t, zookeeper.Config{MaxChildren: 300}))
	if kids, err := big.Children(ctx, ns); err != nil || len(kids) != 300 {
		t.Fatalf("with MaxChildren 300: %d children, %v", len(kids), err)
	}
	if got := zookeeper.RecvBufferForNames(10000, 10); got != 4<<10+140000 {
		t.Errorf("RecvBufferForNames(10000, 10) = %d", got)
	}
	// 1,000 of Enqueue's names fit a buffer sized for them (18 KiB), which
	// a listing of CreateSequential's 49-byte names would overflow.
	short := ns + "/short"
	if err := s.EnsurePath(setup, short); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		if _, err := s.Enqueue(setup, short, "t"); err != nil {
			t.Fatal(err)
		}
	}
	sized := newSession(t, open(t, zookeeper.Config{MaxChildren: 1000, MaxChildName: 10}))
	if kids, err := sized.Children(ctxT(t), short); err != nil || len(kids) != 1000 {
		t.Fatalf("with MaxChildren 1000 and MaxChildName 10: %d children, %v", len(kids), err)
	}
}

// TestNewSessionUnreachable: with no server, NewSession fails when ctx
// ends, and leaves no goroutine behind.
func TestNewSessionUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := l.Addr().String()
	l.Close()
	before := runtime.NumGoroutine()
	b := open(t, zookeeper.Config{Endpoints: []string{ep}})
	const deadline = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	if _, err := b.NewSession(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NewSession = %v, want DeadlineExceeded", err)
	}
	// It would retry the dial forever: any return soon after the deadline
	// is the ctx's doing.
	d := time.Since(start)
	if d > deadline+5*time.Second {
		t.Errorf("NewSession returned %v after it started with a %v ctx", d, deadline)
	}
	t.Logf("NewSession returned %v after it started with a %v ctx", d.Round(time.Millisecond), deadline)
	waitFor(t, 10*time.Second, "goroutines back to their number before", func() bool {
		return runtime.NumGoroutine() <= before
	})
}

// TestDigestAuth: Config.Digest is added to the session, which then reads a
// node only that identity may read.
func TestDigestAuth(t *testing.T) {
	b := open(t, zookeeper.Config{Digest: "zkbench:secret"})
	s := newSession(t, b)
	ns := namespace(t, b, s)
	p := ns + "/private"
	if _, err := s.Conn().Create(p, []byte("x"), 0, zk.DigestACL(zk.PermAll, "zkbench", "secret")); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if data, _, err := s.Get(ctx, p); err != nil || string(data) != "x" {
		t.Fatalf("owner Get = %q, %v", data, err)
	}
	anon := newSession(t, open(t, zookeeper.Config{}))
	if _, _, err := anon.Get(ctx, p); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Get without the digest = %v, want zk.ErrNoAuth", err)
	}
	// Make it deletable by the namespace cleanup.
	if _, err := s.Conn().SetACL(p, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
}
