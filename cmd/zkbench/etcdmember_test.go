package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/zkbench/zkbench/internal/freeport"
)

// The hidden member command parses cluster/etcd's flags, serves a member
// until its context ends, and rejects bad flags.
func TestEtcdMemberCommand(t *testing.T) {
	ports, err := freeport.Ports(2)
	if err != nil {
		t.Fatal(err)
	}
	client := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCmd()
	root.SetArgs([]string{"__etcd-member", "--name", "m", "--data-dir", t.TempDir(),
		"--listen-client", client, "--listen-peer", "http://127.0.0.1:" + strconv.Itoa(ports[1])})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
	defer pcancel()
	if _, err := cli.Put(pctx, "/zkbench/member-cmd", "ok"); err != nil {
		t.Fatalf("put to the member: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("member command: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("member did not stop on cancel")
	}

	bad := newRootCmd()
	bad.SetArgs([]string{"__etcd-member", "--name", "m"})
	if err := bad.Execute(); err == nil {
		t.Fatal("member command ran without its required flags")
	}
}
