package etcd_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/etcd"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// A lease revoked by someone else ends the session: Done closes, an armed
// watch says EventSessionLost, every call returns ErrSessionLost, and the
// session's keys are gone.
func TestLeaseRevokedElsewhereLosesSession(t *testing.T) {
	b, ns := open(t)
	s := session(t, b)
	ctx := ctxFor(t, 60*time.Second)
	if _, err := s.Create(ctx, ns+"/mine", nil); err != nil {
		t.Fatal(err)
	}
	_, _, watch, err := s.ExistsW(ctx, ns+"/other")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
		t.Fatal("Done closed on a healthy session")
	case <-time.After(200 * time.Millisecond):
	}

	revoked := time.Now()
	if _, err := direct(t).Revoke(ctx, clientv3.LeaseID(s.ID())); err != nil {
		t.Fatal(err)
	}
	// The keepalive learns of it at its next round, every TTL/3 (and the
	// session would expire by itself a TTL after its last answer): well
	// within 30 s however slow the machine.
	ttl := b.Config().LeaseTTL
	select {
	case <-s.Done():
		t.Logf("Done closed %v after the revoke (TTL %v)", time.Since(revoked), ttl)
	case <-time.After(30 * time.Second):
		t.Fatalf("Done still open %v after the lease was revoked (TTL %v)", time.Since(revoked), ttl)
	}
	if ev := event(t, watch, 5*time.Second); ev.Type != backends.EventSessionLost {
		t.Fatalf("armed watch got %v, want session-lost", ev.Type)
	}

	calls := map[string]func() error{
		"Create":           func() error { _, err := s.Create(ctx, ns+"/again", nil); return err },
		"CreateSequential": func() error { _, err := s.CreateSequential(ctx, ns, "q-", nil); return err },
		"Get":              func() error { _, _, err := s.Get(ctx, ns+"/mine"); return err },
		"Delete":           func() error { return s.Delete(ctx, ns+"/mine") },
		"Children":         func() error { _, err := s.Children(ctx, ns); return err },
		"ExistsW":          func() error { _, _, _, err := s.ExistsW(ctx, ns+"/mine"); return err },
		"ChildrenW":        func() error { _, _, err := s.ChildrenW(ctx, ns); return err },
		"EnsurePath":       func() error { return s.EnsurePath(ctx, ns) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, backends.ErrSessionLost) {
			t.Errorf("%s after loss: %v, want ErrSessionLost", name, err)
		}
	}
	r, err := direct(t).Get(ctx, ns+"/mine")
	if err != nil || len(r.Kvs) != 0 {
		t.Fatalf("the lost session's key is still there: %v %v", r, err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close after loss: %v", err)
	}
}

// Close revokes the lease at once: keys go now, not a TTL later.
func TestCloseRevokesLease(t *testing.T) {
	b, ns := open(t)
	s := session(t, b)
	ctx := ctxFor(t, 10*time.Second)
	if _, err := s.Create(ctx, ns+"/eph", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done open after Close")
	}
	c := direct(t)
	r, err := c.Get(ctx, ns+"/eph")
	if err != nil || len(r.Kvs) != 0 {
		t.Fatalf("key survived Close: %v %v", r, err)
	}
	ttl, err := c.TimeToLive(ctx, s.Lease())
	if err != nil || ttl.TTL != -1 {
		t.Fatalf("lease after Close: %+v %v, want TTL -1 (gone)", ttl, err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	ep := testcluster.EtcdEndpoints(t)
	for _, tc := range []struct {
		name string
		cfg  etcd.Config
		want string
	}{
		{"short TTL", etcd.Config{Endpoints: ep, LeaseTTL: time.Second}, "minimum lease TTL"},
		{"no endpoints", etcd.Config{}, "no endpoints"},
		{"negative conns", etcd.Config{Endpoints: ep, Conns: -1}, "conns"},
		{"user without password", etcd.Config{Endpoints: ep, Username: "u"}, "password"},
		{"missing CA file", etcd.Config{Endpoints: ep, TLS: etcd.TLSConfig{CAFile: "/nonexistent/ca.pem"}}, "CA file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := etcd.New(tc.cfg)
			if !errors.Is(err, etcd.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrConfig mentioning %q", err, tc.want)
			}
		})
	}
	b, err := etcd.New(etcd.Config{Endpoints: ep, LeaseTTL: 2500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := b.OpenSession(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ttl, err := direct(t).TimeToLive(ctxFor(t, 10*time.Second), s.Lease())
	if err != nil || ttl.GrantedTTL != 3 {
		t.Fatalf("granted TTL %+v %v, want 2.5s rounded up to 3s", ttl, err)
	}
}

// With Conns = K, sessions share K clients but keep their own leases; one
// session's Close leaves the shared client working for the others.
func TestSharedConns(t *testing.T) {
	b, ns := openConfig(t, etcd.Config{Conns: 2})
	ss := make([]*etcd.Session, 5)
	clients := map[*clientv3.Client]bool{}
	leases := map[int64]bool{}
	for i := range ss {
		ss[i] = session(t, b)
		clients[ss[i].Client()] = true
		leases[ss[i].ID()] = true
	}
	if len(clients) != 2 || len(leases) != 5 {
		t.Fatalf("%d clients and %d leases, want 2 and 5", len(clients), len(leases))
	}
	if err := ss[0].Close(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 10*time.Second)
	for _, s := range ss[1:] {
		if _, err := s.CreateSequential(ctx, ns, "n-", nil); err != nil {
			t.Fatalf("session on a shared client after another's Close: %v", err)
		}
	}
	if kids, err := ss[1].Children(ctx, ns); err != nil || len(kids) != 4 {
		t.Fatalf("children %v %v, want 4", kids, err)
	}
}

// TestKeepAlivesTimed: an idle session sends its lease keep-alives TTL/3
// apart, each answered (a round trip timed), never more often than a
// resend of an unanswered one allows; the interval is the lease's TTL/3 as
// the server granted it, and the keep-alives counted late are those whose
// lateness lies beyond backends.KeepAliveLateBound. How late they were is
// logged, not asserted: on a loaded machine a timer fires late, and the
// case's client-bound check is what reports that (docs/testing.md).
func TestKeepAlivesTimed(t *testing.T) {
	b, _ := openConfig(t, etcd.Config{LeaseTTL: 3 * time.Second})
	before := b.KeepAlives()
	start := time.Now()
	session(t, b)
	// One at once, then one a second after each answer: four take 3 s on
	// a quiet machine; 30 s is ten times that.
	var d backends.KeepAliveCounts
	var n, replies int64
	for deadline := start.Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d = b.KeepAlives().Sub(before)
		n, replies = 0, 0
		for i, c := range d.Lateness {
			n += c
			replies += d.Replies[i]
		}
		if replies >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d keep-alives sent and %d answered within %v of an idle 3 s lease: %+v", n, replies, time.Since(start), d)
		}
	}
	elapsed := time.Since(start)
	t.Logf("%v of an idle 3 s lease: %d sent, %d answered; lateness %v, round trips %v, %d late", elapsed.Round(time.Millisecond), n, replies, d.Lateness, d.Replies, d.Late)
	// An unanswered keep-alive is sent again half an interval on, at least
	// 500 ms: never more than one at once and one per 500 ms.
	if most := 1 + int64(elapsed/(500*time.Millisecond)); d.What != backends.KeepAlivePingSent || d.Interval != time.Second || n > most || replies > n {
		t.Fatalf("%v of an idle 3 s lease: %+v (%d sent, %d answered): want interval 1s, at most %d sent, no more answered than sent", elapsed, d, n, replies, most)
	}
	if lo, hi := lateBounds(d); d.Late < lo || d.Late > hi {
		t.Fatalf("%d keep-alives counted late; their lateness %v puts %d to %d beyond %v", d.Late, d.Lateness, lo, hi, backends.KeepAliveLateBound(d.Interval))
	}
}

// lateBounds returns how many of d's keep-alives lie surely, and how many
// possibly, beyond KeepAliveLateBound of d's interval, from the buckets.
func lateBounds(d backends.KeepAliveCounts) (lo, hi int64) {
	bound := backends.KeepAliveLateBound(d.Interval)
	for i, c := range d.Lateness {
		if i > 0 && backends.DurationBounds[i-1] >= bound {
			lo += c
		}
		if i == len(backends.DurationBounds) || backends.DurationBounds[i] > bound {
			hi += c
		}
	}
	return lo, hi
}
