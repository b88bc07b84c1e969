package zookeeper_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/faults/proxy"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// proxied returns a proxy to the shared server and a Backend whose sessions
// go through it.
func proxied(t *testing.T, timeout time.Duration) (*proxy.Proxy, *zookeeper.Backend) {
	t.Helper()
	p, err := proxy.New(context.Background(), testcluster.ZooKeeperEndpoints(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, open(t, zookeeper.Config{Endpoints: []string{p.Addr()}, SessionTimeout: timeout})
}

func TestExpiryIsTerminal(t *testing.T) {
	direct := open(t, zookeeper.Config{})
	ds := newSession(t, direct)
	ns := namespace(t, direct, ds)
	// The backend's default 4 s, not the servers' least (1 s): the
	// session must live until the cut, and a loaded machine can hold the
	// client or the in-process proxy back for a second. The server still
	// expires it well within the 15 s the test waits.
	p, b := proxied(t, 4*time.Second)
	s := newSession(t, b)
	// Not ctxT's 10 s: the reads that wait for the expiry run on it too.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := s.ID()
	if _, err := s.Create(ctx, ns+"/eph", nil); err != nil {
		t.Fatal(err)
	}
	_, _, watch, err := s.ExistsW(ctx, ns+"/nothing")
	if err != nil {
		t.Fatal(err)
	}

	// Partition the session until the server expires it, which removes
	// its ephemeral node.
	p.Cut()
	waitFor(t, 15*time.Second, "server expires the session", func() bool {
		_, _, err := ds.Get(ctx, ns+"/eph")
		return errors.Is(err, backends.ErrNoNode)
	})
	select {
	case <-s.Done():
		t.Fatal("Done closed before the client could know of the expiry")
	default:
	}
	// Healed, the client learns of the expiry from the server.
	p.Restore()
	waitClosed(t, s.Done(), 10*time.Second, "Done after expiry")
	select {
	case ev := <-watch:
		if ev.Type != backends.EventSessionLost {
			t.Errorf("watch after expiry: %v, want session-lost", ev.Type)
		}
	case <-time.After(5 * time.Second):
		t.Error("watch got nothing after expiry")
	}
	if _, err := s.Create(ctx, ns+"/after", nil); !errors.Is(err, backends.ErrSessionLost) {
		t.Errorf("Create after expiry: %v, want ErrSessionLost", err)
	}
	if _, err := s.Children(ctx, ns); !errors.Is(err, backends.ErrSessionLost) {
		t.Errorf("Children after expiry: %v, want ErrSessionLost", err)
	}
	if s.ID() != id {
		t.Errorf("ID changed from %x to %x", id, s.ID())
	}
	// go-zookeeper would open a fresh session; the backend must not.
	waitFor(t, 5*time.Second, "connection closed", func() bool { return p.Stats().Active == 0 })
	accepted := p.Stats().Accepted
	time.Sleep(2 * time.Second)
	if got := p.Stats().Accepted; got != accepted {
		t.Errorf("%d new connections after expiry: a new session was attempted", got-accepted)
	}
}

// lostReply is a sequential create under <namespace>/q whose request
// reached the server while the proxy held its reply.
type lostReply struct {
	ds   *zookeeper.Session // a session of its own, not proxied
	s    *zookeeper.Session
	p    *proxy.Proxy
	q    string
	made backends.Node // the node the create made, read by ds
	done chan createResult
}

type createResult struct {
	n   backends.Node
	err error
}

// holdReply starts a proxied session's CreateSequential(mark(ctx), q,
// prefix) with the replies held back and returns once the server applied
// it.
func holdReply(t *testing.T, prefix string, mark func(context.Context) context.Context) *lostReply {
	direct := open(t, zookeeper.Config{})
	ds := newSession(t, direct)
	ns := namespace(t, direct, ds)
	ctx := ctxT(t)
	q := ns + "/q"
	if err := ds.EnsurePath(ctx, q); err != nil {
		t.Fatal(err)
	}
	p, b := proxied(t, 4*time.Second)
	s := newSession(t, b)
	// Requests reach the server; replies are held back.
	p.SetDirectionLatency(proxy.ServerToClient, time.Minute, 0)
	l := &lostReply{ds: ds, s: s, p: p, q: q, done: make(chan createResult, 1)}
	go func() {
		n, err := s.CreateSequential(mark(ctx), q, prefix, []byte("d"))
		l.done <- createResult{n, err}
	}()
	waitFor(t, 5*time.Second, "create applied on the server", func() bool {
		kids, err := ds.Children(ctx, q)
		if err == nil && len(kids) == 1 {
			l.made = kids[0]
		}
		return l.made.Path != ""
	})
	return l
}

// lose drops the connection with the reply in it and returns the
// create's result.
func (l *lostReply) lose(t *testing.T) createResult {
	t.Helper()
	l.p.SetDirectionLatency(proxy.ServerToClient, 0, 0)
	if l.p.ResetAll() == 0 {
		t.Fatal("no connection to reset")
	}
	select {
	case r := <-l.done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("CreateSequential did not return after the reset")
		return createResult{}
	}
}

func TestProtectedCreateSurvivesLostReply(t *testing.T) {
	l := holdReply(t, "lock-", func(ctx context.Context) context.Context { return ctx })
	r := l.lose(t)
	if r.err != nil {
		t.Fatalf("CreateSequential after a lost reply: %v", r.err)
	}
	ctx := ctxT(t)
	kids, err := l.ds.Children(ctx, l.q)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 1 || kids[0].Path != r.n.Path || kids[0].Seq != r.n.Seq {
		t.Fatalf("children %+v, returned %+v: want exactly the one node", kids, r.n)
	}
	if !regexp.MustCompile(`^lock-[0-9a-f]{16}-[0-9]{10}$`).MatchString(r.n.Name) || r.n.CreateRev != 0 {
		t.Errorf("node %+v after recovery: want a protected sequential name and CreateRev 0", r.n)
	}
	_, st, err := l.ds.Conn().Exists(r.n.Path)
	if err != nil || st.EphemeralOwner != l.s.ID() {
		t.Fatalf("owner %x (%v), want session %x", st.EphemeralOwner, err, l.s.ID())
	}
	select {
	case <-l.s.Done():
		t.Fatal("session lost by a connection reset")
	default:
	}
}

// TestNoResendCreateTakenBeforeTheLook: a sequential create on a ctx
// marked backends.NoResend whose reply is lost, and whose node another
// session removed before the look (a consumer taking a queue's item),
// returns ErrUnknownOutcome and makes no second node.
func TestNoResendCreateTakenBeforeTheLook(t *testing.T) {
	l := holdReply(t, "item-", backends.NoResend)
	ctx := ctxT(t)
	if err := l.ds.Delete(ctx, l.made.Path); err != nil { // taken
		t.Fatal(err)
	}
	if r := l.lose(t); !errors.Is(r.err, backends.ErrUnknownOutcome) {
		t.Fatalf("CreateSequential after a lost reply, its node gone: %v, want ErrUnknownOutcome", r.err)
	}
	if kids, err := l.ds.Children(ctx, l.q); err != nil || len(kids) != 0 {
		t.Fatalf("children %+v (%v): want none, the create not sent again", kids, err)
	}
}

func TestWatchAndReadsSurviveReconnect(t *testing.T) {
	direct := open(t, zookeeper.Config{})
	ds := newSession(t, direct)
	ns := namespace(t, direct, ds)
	ctx := ctxT(t)
	if err := ds.EnsurePath(ctx, ns+"/n"); err != nil {
		t.Fatal(err)
	}
	p, b := proxied(t, 4*time.Second)
	s := newSession(t, b)
	_, _, watch, err := s.ExistsW(ctx, ns+"/n")
	if err != nil {
		t.Fatal(err)
	}
	// Reset, and let a read run while the client reconnects.
	p.ResetAll()
	if _, err := s.Children(ctx, ns); err != nil {
		t.Fatalf("read across a reconnect: %v", err)
	}
	if err := ds.Delete(ctx, ns+"/n"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-watch:
		if ev.Type != backends.EventDeleted {
			t.Fatalf("watch after reconnect: %v, want deleted", ev.Type)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch armed before a reconnect did not fire")
	}
}
