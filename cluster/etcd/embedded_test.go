package etcd

import (
	"context"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// put writes and reads back one key through every endpoint.
func put(t *testing.T, endpoints []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ep := range endpoints {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Put(ctx, "/zkbench/cluster-test", ep); err != nil {
			t.Fatalf("put via %s: %v", ep, err)
		}
		r, err := cli.Get(ctx, "/zkbench/cluster-test")
		cli.Close()
		if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != ep {
			t.Fatalf("get via %s: %v %v", ep, r, err)
		}
	}
}

func TestEmbeddedStartsServesAndCleansUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	e, err := StartEmbedded(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("embedded etcd ready in %v at %v", time.Since(start), e.Endpoints())
	if len(e.Endpoints()) != 1 {
		t.Fatalf("endpoints %v", e.Endpoints())
	}
	put(t, e.Endpoints())
	dir := e.Dir()
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temp dir %s still there: %v", dir, err)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestEmbeddedKeepsGivenDir(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	e, err := StartEmbedded(ctx, Options{Dir: dir, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	put(t, e.Endpoints())
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir + "/zkbench-1/member"); err != nil {
		t.Fatalf("given dir not kept: %v", err)
	}
}

func TestEmbeddedClusterOfThree(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	e, err := StartEmbeddedCluster(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	t.Logf("3 embedded members ready in %v", time.Since(start))
	if len(e.Endpoints()) != 3 {
		t.Fatalf("endpoints %v", e.Endpoints())
	}
	put(t, e.Endpoints())
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints()[:1], Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ml, err := cli.MemberList(ctx)
	if err != nil || len(ml.Members) != 3 {
		t.Fatalf("member list: %v %v", ml, err)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestEmbeddedClusterRejectsZero(t *testing.T) {
	if _, err := StartEmbeddedCluster(context.Background(), 0); err == nil {
		t.Fatal("0 members accepted")
	}
}
