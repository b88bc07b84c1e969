package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkbench/zkbench/executor"
	"github.com/zkbench/zkbench/runflags"
	"github.com/zkbench/zkbench/runner"
)

// execFlags are `zkbench exec`'s flags; the connection ones are run's.
type execFlags struct {
	conn  runflags.Servers
	grace time.Duration
}

func newExecCmd() *cobra.Command {
	f := &execFlags{}
	cmd := &cobra.Command{
		Use:   "exec NODE FILE PROGRAM [ARGS...]",
		Short: "Keep PROGRAM running on NODE's data, restarted on each change (the ZooKeeper guide's Executor)",
		Args:  cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(cmd, f, args)
		},
	}
	fl := cmd.Flags()
	fl.SetInterspersed(false) // PROGRAM's own flags are its
	fl.StringVar(&f.conn.Backend, "backend", "etcd", "coordination service: etcd or zookeeper")
	fl.StringSliceVar(&f.conn.Endpoints, "endpoints", nil, "servers of a running cluster, host:port (comma-separated); none: start them as run does")
	fl.StringVar(&f.conn.Cluster, "cluster", "", "servers to start without --endpoints: embedded (etcd) or local")
	fl.IntVar(&f.conn.Nodes, "nodes", 1, "--cluster local: servers to start (1 or 3)")
	fl.DurationVar(&f.conn.SessionTimeout, "session-timeout", 0, "ZooKeeper: session timeout (default 4s)")
	fl.DurationVar(&f.conn.LeaseTTL, "lease-ttl", 0, "etcd: session lease TTL (default the backend's)")
	fl.DurationVar(&f.conn.PreflightTimeout, "preflight-timeout", 10*time.Second, "bound on the check that the servers answer")
	fl.DurationVar(&f.grace, "grace", 5*time.Second, "time PROGRAM has to stop between SIGTERM and SIGKILL")
	f.conn.BindAuth(fl)
	return cmd
}

func runExec(cmd *cobra.Command, f *execFlags, args []string) error {
	kind, err := f.conn.Kind()
	if err != nil {
		return err
	}
	// run's refusals of a flag it would not read (the other backend's,
	// --nodes with --endpoints); exec has no workload, so no workload's
	// rule applies.
	if err := f.conn.CheckRead(cmd.Flags(), "", nil); err != nil {
		return err
	}
	node, file, program := args[0], args[1], args[2:]
	if !strings.HasPrefix(node, "/") || strings.HasSuffix(node, "/") || strings.Contains(node, "//") {
		return fmt.Errorf("NODE %q: want an absolute path such as /app/config", node)
	}
	if f.grace <= 0 || f.conn.PreflightTimeout <= 0 {
		return errors.New("--grace and --preflight-timeout must be positive")
	}
	f.conn.PasswordFromEnv()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	return runner.Exec(ctx, kind, f.conn.Config(), executor.Config{
		Node: node, File: file, Program: program,
		Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), Log: cmd.ErrOrStderr(),
		Grace: f.grace, Signals: sigs,
	})
}
