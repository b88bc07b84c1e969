package etcd_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/etcd"
	"github.com/zkbench/zkbench/faults/proxy"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// proxied returns a Backend whose clients reach the shared member through a
// fault-injecting proxy.
func proxied(t *testing.T) (*etcd.Backend, *proxy.Proxy, string) {
	t.Helper()
	return proxiedConfig(t, etcd.Config{})
}

// proxiedConfig is proxied with cfg's fields (Endpoints are the proxy's).
func proxiedConfig(t *testing.T, cfg etcd.Config) (*etcd.Backend, *proxy.Proxy, string) {
	t.Helper()
	u, err := url.Parse(testcluster.EtcdEndpoints(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(context.Background(), u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg.Endpoints, cfg.Embedded = []string{p.Addr()}, true
	b, err := etcd.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, p, testcluster.TestNamespace(t, b)
}

// waitKey returns the first key created under prefix from rev on.
func waitKey(ctx context.Context, c *clientv3.Client, prefix string, rev int64) (string, int64, error) {
	for resp := range c.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev)) {
		for _, ev := range resp.Events {
			if ev.IsCreate() {
				return string(ev.Kv.Key), ev.Kv.CreateRevision, nil
			}
		}
	}
	return "", 0, ctx.Err()
}

// lostReply is a sequential create under <namespace>/queue whose
// request reached the server while the proxy held its reply.
type lostReply struct {
	s      *etcd.Session
	p      *proxy.Proxy
	c      *clientv3.Client // not proxied
	ctx    context.Context
	parent string
	key    string // made by the create
	rev    int64
	done   chan createResult
}

type createResult struct {
	n   backends.Node
	err error
}

// holdReply starts a proxied session's CreateSequential(mark(ctx), parent,
// prefix) with the replies held back and returns once the server applied
// it.
func holdReply(t *testing.T, prefix string, mark func(context.Context) context.Context) *lostReply {
	// The lease outlasts the test: while replies are held, so are the
	// keep-alive responses, and clientv3 gives a lease up when none came
	// for its TTL (the 5 s default: a loaded machine took longer than that
	// to see the create and reset the connection).
	b, p, ns := proxiedConfig(t, etcd.Config{LeaseTTL: time.Minute})
	l := &lostReply{s: session(t, b), p: p, c: direct(t), ctx: ctxFor(t, 30*time.Second), parent: ns + "/queue", done: make(chan createResult, 1)}
	head, err := l.c.Get(l.ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	// Replies are held longer than the test's ctx: the first try's reply
	// can only reach the client by the connection the reset destroys, so a
	// CreateSequential that returns a node before ctx ends got it by a
	// retry, however slow the machine.
	p.SetDirectionLatency(proxy.ServerToClient, 10*time.Minute, 0)
	go func() {
		n, err := l.s.CreateSequential(mark(l.ctx), l.parent, prefix, []byte("x"))
		l.done <- createResult{n, err}
	}()
	if l.key, l.rev, err = waitKey(l.ctx, l.c, l.parent+"/", head.Header.Revision+1); err != nil {
		t.Fatal(err)
	}
	return l
}

// lose drops the connection with the reply in it and returns the
// create's result.
func (l *lostReply) lose(t *testing.T) createResult {
	t.Helper()
	if n := l.p.ResetAll(); n == 0 {
		t.Fatal("no connection to reset")
	}
	l.p.SetDirectionLatency(proxy.ServerToClient, 0, 0)
	return <-l.done // the create ends with ctx at the latest
}

// The reply to a sequential create is lost after the server applied it: the
// connection is reset while the reply sits in the proxy. The retry must find
// the node the first try made, not make a second one.
func TestProtectedSequentialRetryNeverDuplicates(t *testing.T) {
	l := holdReply(t, "lock-", func(ctx context.Context) context.Context { return ctx })
	s, c, ctx, parent, key, rev := l.s, l.c, l.ctx, l.parent, l.key, l.rev
	r := l.lose(t)
	if r.err != nil {
		t.Fatalf("CreateSequential after a lost reply: %v", r.err)
	}
	if r.n.Path != key || r.n.Seq != rev || r.n.CreateRev != rev {
		t.Fatalf("got %+v, want the node the first try made: %s rev %d", r.n, key, rev)
	}
	kids, err := c.Get(ctx, parent+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(kids.Kvs) != 1 {
		t.Fatalf("%d nodes under %s after the retry, want 1", len(kids.Kvs), parent)
	}
	if kv := kids.Kvs[0]; kv.Lease != s.ID() || !strings.Contains(string(kv.Key), "lock-") {
		t.Fatalf("node %s lease %x, want this session's %x", kv.Key, kv.Lease, s.ID())
	}
	// The session survived the reset, and the next create gets a later Seq.
	n2, err := s.CreateSequential(ctx, parent, "lock-", nil)
	if err != nil || n2.Seq <= rev || n2.Name == r.n.Name {
		t.Fatalf("next create %+v %v", n2, err)
	}
}

// A sequential create on a ctx marked backends.NoResend whose reply is
// lost, and whose key another session deleted before the look (a consumer
// taking a queue's item), returns ErrUnknownOutcome and is not made again.
func TestNoResendSequentialTakenBeforeTheLook(t *testing.T) {
	l := holdReply(t, "item-", backends.NoResend)
	if _, err := l.c.Delete(l.ctx, l.key); err != nil { // taken
		t.Fatal(err)
	}
	if r := l.lose(t); !errors.Is(r.err, backends.ErrUnknownOutcome) {
		t.Fatalf("CreateSequential after a lost reply, its key gone: %v, want ErrUnknownOutcome", r.err)
	}
	kids, err := l.c.Get(l.ctx, l.parent+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(kids.Kvs) != 0 {
		t.Fatalf("%d keys under %s, want none: the create was sent again", len(kids.Kvs), l.parent)
	}
}

// A sequential create abandoned by its ctx while its outcome is unknown
// deletes the node it may have made, so no orphan waits in a queue until
// the session ends.
func TestCancelledSequentialCleansUp(t *testing.T) {
	b, p, ns := proxied(t)
	s := session(t, b)
	c := direct(t)
	parent := ns + "/queue"
	head, err := c.Get(ctxFor(t, 10*time.Second), "/")
	if err != nil {
		t.Fatal(err)
	}
	p.SetDirectionLatency(proxy.ServerToClient, time.Second, 0)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.CreateSequential(ctx, parent, "lock-", nil)
		errc <- err
	}()
	if _, _, err := waitKey(ctxFor(t, 10*time.Second), c, parent+"/", head.Header.Revision+1); err != nil {
		t.Fatal(err)
	}
	cancel() // the reply is still held in the proxy
	err = <-errc
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	p.SetDirectionLatency(proxy.ServerToClient, 0, 0)
	kids, err := c.Get(ctxFor(t, 10*time.Second), parent+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || kids.Count != 0 {
		t.Fatalf("%d nodes left after the cancelled create (%v), want 0", kids.Count, err)
	}
}

// Sequential names carry the session's tag; Seq is the create revision and
// orders siblings across sessions.
func TestSequentialNamesAndOrder(t *testing.T) {
	b, ns := open(t)
	s1, s2 := session(t, b), session(t, b)
	ctx := ctxFor(t, 10*time.Second)
	a, err := s1.CreateSequential(ctx, ns, "n-", nil)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := s2.CreateSequential(ctx, ns, "n-", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.Name, "n-") || a.Name == bb.Name || a.Seq >= bb.Seq {
		t.Fatalf("names/order: %+v then %+v", a, bb)
	}
	kids, err := s1.Children(ctx, ns)
	if err != nil || len(kids) != 2 || kids[0].Path != a.Path || kids[1].Path != bb.Path {
		t.Fatalf("Children = %+v %v", kids, err)
	}
	if _, err := s1.CreateSequential(ctx, ns, "bad/prefix", nil); !errors.Is(err, etcd.ErrInvalidPath) {
		t.Fatalf("prefix with '/': %v", err)
	}
}
