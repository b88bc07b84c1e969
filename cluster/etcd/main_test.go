package etcd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// TestMain lets StartLocal re-execute this test binary as a member process:
// `<test binary> __etcd-member <flags>` runs one member, as zkbench's hidden
// command does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == MemberCommand {
		os.Exit(memberMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func memberMain(args []string) int {
	cfg, err := ParseMemberArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := RunMember(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
