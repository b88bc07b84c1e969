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
	"github.com/zkbench/zkbench/runner"
)

// execFlags are `zkbench exec`'s flags; the connection ones are run's.
type execFlags struct {
	conn  runFlags
	grace time.Duration
}

func newExecCmd() *cobra.Command {
	f := &execFlags{}
	cmd := &cobra.Command{
		Use:   "exec NODE FILE PROGRAM [ARGS...]",
		Short: "Keep PROGRAM running on NODE's data, restarted on each change (the ZooKeeper guide's Executor)",
		Long: `exec is the ZooKeeper guide's Executor and DataMonitor, on either backend. It reads
NODE's data, writes it to FILE and starts PROGRAM with ARGS. When the data changes it
stops PROGRAM (SIGTERM, SIGKILL after --grace), rewrites FILE and starts PROGRAM
again; when NODE is deleted it stops PROGRAM and waits for NODE to come back. A write
that leaves the data as it was restarts nothing. Stopping PROGRAM stops its process
group: its own children (a shell's commands) stop with it. A PROGRAM that exits by
itself is logged with its status and started again on the next change.

A lost connection is not a change: PROGRAM keeps running while the client
reconnects. An expired session (ZooKeeper) or a lost lease (etcd) stops PROGRAM, and
exec exits non-zero saying so. PROGRAM's output passes through; SIGHUP, SIGUSR1
and SIGUSR2 are forwarded to it; Ctrl-C (or SIGTERM) stops PROGRAM, then exec.

The servers are reached or started as by zkbench run: --endpoints for a running
cluster, else an embedded etcd or --cluster local (whose endpoints are printed, so
that something can write NODE). Flags run would refuse (the other backend's, --nodes
with --endpoints) exec refuses too.`,
		Example: `  zkbench exec --backend zookeeper --endpoints 127.0.0.1:2181 /app/config /tmp/app.conf ./app --config /tmp/app.conf
  zkbench exec --backend etcd --endpoints 127.0.0.1:2379 /app/config /tmp/app.conf sh -c 'cat /tmp/app.conf; sleep 1000'`,
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(cmd, f, args)
		},
	}
	fl := cmd.Flags()
	fl.SetInterspersed(false) // PROGRAM's own flags are its
	fl.StringVar(&f.conn.backend, "backend", "etcd", "coordination service: etcd or zookeeper")
	fl.StringSliceVar(&f.conn.endpoints, "endpoints", nil, "servers of a running cluster, host:port (comma-separated); none: start them as run does")
	fl.StringVar(&f.conn.cluster, "cluster", "", "servers to start without --endpoints: embedded (etcd) or local")
	fl.IntVar(&f.conn.nodes, "nodes", 1, "--cluster local: servers to start (1 or 3)")
	fl.DurationVar(&f.conn.sessionTimeout, "session-timeout", 0, "ZooKeeper: session timeout (default 4s)")
	fl.DurationVar(&f.conn.leaseTTL, "lease-ttl", 0, "etcd: session lease TTL (default the backend's)")
	fl.DurationVar(&f.conn.preflightTimeout, "preflight-timeout", 10*time.Second, "bound on the check that the servers answer")
	fl.DurationVar(&f.grace, "grace", 5*time.Second, "time PROGRAM has to stop between SIGTERM and SIGKILL")
	addAuthFlags(fl, &f.conn)
	return cmd
}

func runExec(cmd *cobra.Command, f *execFlags, args []string) error {
	kind, err := runner.ParseBackend(f.conn.backend, false)
	if err != nil {
		return err
	}
	// run's refusals of a flag it would not read (the other backend's,
	// --nodes with --endpoints); exec has no workload, so no workload's
	// rule applies.
	if err := checkFlagsRead(cmd.Flags(), &f.conn, nil); err != nil {
		return err
	}
	node, file, program := args[0], args[1], args[2:]
	if !strings.HasPrefix(node, "/") || strings.HasSuffix(node, "/") || strings.Contains(node, "//") {
		return fmt.Errorf("NODE %q: want an absolute path such as /app/config", node)
	}
	if f.grace <= 0 || f.conn.preflightTimeout <= 0 {
		return errors.New("--grace and --preflight-timeout must be positive")
	}
	f.conn.passwordFromEnv()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	return runner.Exec(ctx, kind, f.conn.servers(), executor.Config{
		Node: node, File: file, Program: program,
		Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), Log: cmd.ErrOrStderr(),
		Grace: f.grace, Signals: sigs,
	})
}
