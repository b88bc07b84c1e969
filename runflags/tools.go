package runflags

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/executor"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/runner"
)

// Clean are `zkbench clean`'s flags; the connection ones are run's.
type Clean struct {
	Servers
	RunID   string
	DryRun  bool
	Timeout time.Duration
}

// BindClean declares clean's flags in fl.
func BindClean(fl *pflag.FlagSet) *Clean {
	f := &Clean{}
	f.bindConn(fl, "servers of the cluster to clean, host:port (comma-separated)", 5*time.Second)
	fl.StringVar(&f.RunID, "run", "", "remove only /zkbench/<ID> (default: every run's namespace)")
	fl.BoolVar(&f.DryRun, "dry-run", false, "list what would be removed; remove nothing")
	fl.DurationVar(&f.Timeout, "timeout", 2*time.Minute, "bound on listing and removing")
	f.BindAuth(fl)
	return f
}

// bindConn declares --backend, --endpoints (with its help) and
// --preflight-timeout (with its default), as exec and clean take them.
func (s *Servers) bindConn(fl *pflag.FlagSet, endpoints string, preflight time.Duration) {
	fl.StringVar(&s.Backend, "backend", "etcd", "coordination service: etcd or zookeeper")
	fl.StringSliceVar(&s.Endpoints, "endpoints", nil, endpoints)
	fl.DurationVar(&s.PreflightTimeout, "preflight-timeout", preflight, "bound on the check that the servers answer")
}

// Spec is the flags set in fl, checked, as the runner's Clean.
func (f *Clean) Spec(fl *pflag.FlagSet) (runner.Clean, error) {
	kind, err := f.Kind()
	if err != nil {
		return runner.Clean{}, err
	}
	// run's refusal of the other backend's flags (--digest on etcd, TLS on
	// ZooKeeper): clean would connect without them.
	if err := f.CheckRead(fl, "", nil); err != nil {
		return runner.Clean{}, err
	}
	if f.RunID != "" {
		if err := backends.ValidRunID(f.RunID); err != nil {
			return runner.Clean{}, fmt.Errorf("--run: %w", err)
		}
	}
	if f.PreflightTimeout <= 0 || f.Timeout <= 0 {
		return runner.Clean{}, errors.New("--preflight-timeout and --timeout must be positive")
	}
	f.PasswordFromEnv()
	return runner.Clean{Kind: kind, Servers: f.Config(), RunID: f.RunID, DryRun: f.DryRun, Timeout: f.Timeout}, nil
}

// Exec are `zkbench exec`'s flags; the connection ones are run's.
type Exec struct {
	Servers
	Grace time.Duration
}

// BindExec declares exec's flags in fl.
func BindExec(fl *pflag.FlagSet) *Exec {
	f := &Exec{}
	fl.SetInterspersed(false) // PROGRAM's own flags are its
	f.bindConn(fl, "servers of a running cluster, host:port (comma-separated); none: start them as run does", 10*time.Second)
	fl.StringVar(&f.Cluster, "cluster", "", "servers to start without --endpoints: embedded (etcd), local or docker")
	fl.IntVar(&f.Nodes, "nodes", 1, "--cluster local or docker: servers to start (as run: local 1 or an odd count up to 7, docker 1 or 3)")
	fl.DurationVar(&f.SessionTimeout, "session-timeout", 0, "ZooKeeper: session timeout (default 4s)")
	fl.DurationVar(&f.LeaseTTL, "lease-ttl", 0, "etcd: session lease TTL (default the backend's)")
	fl.DurationVar(&f.Grace, "grace", 5*time.Second, "time PROGRAM has to stop between SIGTERM and SIGKILL")
	f.BindAuth(fl)
	return f
}

// Spec is the flags set in fl and exec's arguments (NODE FILE PROGRAM
// [ARGS...]), checked: the backend, its servers and the executor's
// configuration, without its writers and signals.
func (f *Exec) Spec(fl *pflag.FlagSet, args []string) (backends.Kind, runner.Servers, executor.Config, error) {
	kind, err := f.Kind()
	if err != nil {
		return "", runner.Servers{}, executor.Config{}, err
	}
	// run's refusals of a flag it would not read (the other backend's,
	// --nodes with --endpoints); exec has no workload, so no workload's
	// rule applies.
	if err := f.CheckRead(fl, "", nil); err != nil {
		return "", runner.Servers{}, executor.Config{}, err
	}
	node := args[0]
	if !strings.HasPrefix(node, "/") || strings.HasSuffix(node, "/") || strings.Contains(node, "//") {
		return "", runner.Servers{}, executor.Config{}, fmt.Errorf("NODE %q: want an absolute path such as /app/config", node)
	}
	if f.Grace <= 0 || f.PreflightTimeout <= 0 {
		return "", runner.Servers{}, executor.Config{}, errors.New("--grace and --preflight-timeout must be positive")
	}
	// FILE is written and PROGRAM started only when NODE first has data,
	// which may be long after the start: what would fail then fails now.
	if err := checkExecFile(args[1]); err != nil {
		return "", runner.Servers{}, executor.Config{}, err
	}
	if _, err := osexec.LookPath(args[2]); err != nil {
		return "", runner.Servers{}, executor.Config{}, fmt.Errorf("PROGRAM %q: %w (give a program on PATH or its path)", args[2], err)
	}
	f.PasswordFromEnv()
	return kind, f.Config(), executor.Config{Node: node, File: args[1], Program: args[2:], Grace: f.Grace}, nil
}

// checkExecFile refuses a FILE exec could not write: a folder, or one in a
// folder that does not exist.
func checkExecFile(file string) error {
	if st, err := os.Stat(file); err == nil && st.IsDir() {
		return fmt.Errorf("FILE %s is a folder: give the file PROGRAM reads, such as %s", file, filepath.Join(file, "app.conf"))
	}
	if st, err := os.Stat(filepath.Dir(file)); err != nil || !st.IsDir() {
		return fmt.Errorf("FILE %s: its folder %s does not exist: create it or give a file in a folder that does", file, filepath.Dir(file))
	}
	return nil
}

// Merge are `zkbench merge`'s flags but the summary's.
type Merge struct {
	Output    string
	NoPlots   bool
	ShardsDir string
	Shards    int
}

// BindMerge declares merge's flags in fl.
func BindMerge(fl *pflag.FlagSet) *Merge {
	f := &Merge{}
	fl.StringVarP(&f.Output, "output", "o", runner.DefaultOutput, "folder for the merged results; writes <output>/<run-id>/results.json"+runner.OutputHelp)
	fl.BoolVar(&f.NoPlots, "no-plots", false, "do not draw plots")
	fl.StringVar(&f.ShardsDir, "shards-dir", "", "read shard I from DIR/I (its --output folder), I from 0 to --shards - 1, instead of files given by name")
	fl.IntVar(&f.Shards, "shards", 0, "with --shards-dir: the run's shard count")
	return f
}

// ReadShards reads the shards' results the flags set in fl and merge's
// arguments (files) name.
func (f *Merge) ReadShards(fl *pflag.FlagSet, files []string) ([]*results.Run, error) {
	switch {
	case f.ShardsDir != "" && len(files) > 0:
		return nil, fmt.Errorf("--shards-dir %s and %d files: give the shards' files or --shards-dir, not both", f.ShardsDir, len(files))
	case f.ShardsDir != "":
		if fl.Changed("shards") && f.Shards < 1 {
			return nil, fmt.Errorf("--shards %d: want the run's shard count, 1 or more", f.Shards)
		}
		if !fl.Changed("shards") {
			return nil, fmt.Errorf("--shards-dir %s: give --shards S, the run's shard count (the merge reads %s/0 to %s/S-1)", f.ShardsDir, f.ShardsDir, f.ShardsDir)
		}
		return results.ReadShardsDir(f.ShardsDir, f.Shards)
	case fl.Changed("shards"):
		return nil, errors.New("--shards: only with --shards-dir DIR (the files given by name say their shard count)")
	case len(files) == 0:
		return nil, errors.New("give the shards' results files, or --shards-dir DIR --shards S")
	}
	return results.ReadEach(files) // merge names a shard given twice itself
}
