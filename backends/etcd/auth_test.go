package etcd_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/zkbench/zkbench/backends/etcd"
	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
)

// An etcd with authentication on: Preflight names a wrong password and a
// missing user, and lets the right credentials through.
func TestPreflightAuth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := etcdcluster.StartEmbedded(ctx, etcdcluster.Options{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	eps := srv.Endpoints()
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.UserAdd(ctx, "root", "right"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}

	// Authenticating is a bcrypt comparison (etcd's cost 10, slower under
	// -race) and a raft round trip on the server: 130 ms on a quiet
	// machine, 4.9 s for a refusal on a loaded one and more than 15 s for
	// the right password there (the status timeout then reports a
	// deadline, not the verdict). 45 s, inside preflight's 60 s ctx.
	const authTimeout = 45 * time.Second
	slow := etcd.WithStatusTimeout(authTimeout)
	_, err, took := preflight(t, etcd.Config{Endpoints: eps, Username: "root", Password: "wrong"}, slow)
	wantPreflightErrorWithin(t, err, took, authTimeout+5*time.Second, "refused the credentials", "root")
	_, err, took = preflight(t, etcd.Config{Endpoints: eps}, slow)
	wantPreflightErrorWithin(t, err, took, authTimeout+5*time.Second, "authentication enabled")

	cfg := etcd.Config{Endpoints: eps, Username: "root", Password: "right"}
	if _, err, _ := preflight(t, cfg, slow); err != nil {
		t.Fatalf("right credentials: %v", err)
	}
	b, err := etcd.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := b.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/zkbench/auth-test/k", nil); err != nil {
		t.Fatalf("create with auth: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
