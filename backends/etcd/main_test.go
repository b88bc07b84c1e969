package etcd_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// TestMain closes the shared embedded etcd servers when the tests are done,
// and lets cluster/etcd's StartLocal re-execute this test binary as an etcd
// member process (`<binary> __etcd-member <flags>`), for the tests and
// benchmarks that need the server in a separate process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == etcdcluster.MemberCommand {
		os.Exit(memberMain(os.Args[2:]))
	}
	testcluster.Main(m)
}

func memberMain(args []string) int {
	cfg, err := etcdcluster.ParseMemberArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := etcdcluster.RunMember(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startLocal runs n etcd members as processes of this test binary.
func startLocal(tb testing.TB, n int) *etcdcluster.Local {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := etcdcluster.StartLocal(ctx, etcdcluster.Options{Nodes: n, Exe: exe, UnsafeNoFsync: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l.Stop(ctx)
	})
	return l
}
