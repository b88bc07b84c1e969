package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/kube"
	"github.com/zkbench/zkbench/runner"
)

// jobIndexEnv is the variable a Kubernetes Indexed Job sets to each pod's
// completion index: the pod's --shard-index (the one kube's Job uses).
const jobIndexEnv = kube.IndexEnv

// shardOption turns --shards, --shard-index (or $JOB_COMPLETION_INDEX) and
// --shard-timeout into the runner's option: one shard of a run, or the
// parent of --shards local shard processes; nil without --shards.
func (f *runFlags) shardOption(fl *pflag.FlagSet) (runner.Option, error) {
	index := f.shardIndex
	if !fl.Changed("shard-index") {
		if v, ok := os.LookupEnv(jobIndexEnv); ok && f.shards > 0 {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("$%s %q: not a shard index", jobIndexEnv, v)
			}
			index = n
		}
	}
	switch {
	case f.shards == 0 && (fl.Changed("shard-index") || fl.Changed("shard-timeout")):
		return nil, errors.New("--shard-index and --shard-timeout need --shards")
	case f.shards == 0:
		return nil, nil
	case f.shards < 0:
		return nil, fmt.Errorf("--shards %d: want the number of shards, at least 1", f.shards)
	case fl.Changed("shard-index") && index < 0:
		return nil, fmt.Errorf("--shard-index %d: want 0 to %d", index, f.shards-1)
	case index >= 0:
		return runner.WithShard(index, f.shards, f.shardTimeout), nil
	}
	return runner.WithLocalShards(f.shards, f.shardTimeout, f.shardCommand(fl)), nil
}

// shardSkip are the flags a local shard is not given as its parent was:
// the parent sets them for it (or, for the password, passes it in the
// environment, out of the process list).
var shardSkip = map[string]bool{
	"shards": true, "shard-index": true, "endpoints": true, "cluster": true, "nodes": true,
	"output": true, "run-id": true, "no-plots": true, "password": true, "server-pids": true,
}

// shardCommand returns how the parent of local shards starts shard i:
// zkbench itself, `zkbench run` with the flags the user set, on the
// parent's servers, as shard i, writing under the given folder.
func (f *runFlags) shardCommand(fl *pflag.FlagSet) runner.ShardCommand {
	given := givenFlags(fl, shardSkip)
	password := f.password
	shards := f.shards
	return func(spec runner.ShardSpec) *exec.Cmd {
		exe, err := os.Executable()
		if err != nil {
			exe = os.Args[0]
		}
		args := append([]string{"run"}, given...)
		args = append(args, "--shards="+strconv.Itoa(shards), "--shard-index="+strconv.Itoa(spec.Index),
			"--endpoints="+strings.Join(spec.Endpoints, ","), "--run-id="+spec.RunID, "--output="+spec.Output, "--no-plots")
		if len(spec.ServerPIDs) > 0 {
			args = append(args, "--server-pids="+formatPIDs(spec.ServerPIDs))
		}
		cmd := exec.Command(exe, args...)
		if password != "" {
			cmd.Env = []string{"ZKBENCH_ETCD_PASSWORD=" + password}
		}
		return cmd
	}
}

// givenFlags are the flags the user set, but those in skip, as
// --name=value (a list flag once per value), for a shard's command line.
func givenFlags(fl *pflag.FlagSet, skip map[string]bool) []string {
	var given []string
	fl.Visit(func(flag *pflag.Flag) {
		if skip[flag.Name] {
			return
		}
		if sv, ok := flag.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				given = append(given, "--"+flag.Name+"="+v)
			}
			return
		}
		given = append(given, "--"+flag.Name+"="+flag.Value.String())
	})
	return given
}

// formatPIDs is --server-pids' form of pids: endpoint=pid,... in order.
func formatPIDs(pids map[string]int) string {
	parts := make([]string, 0, len(pids))
	for ep, pid := range pids {
		parts = append(parts, ep+"="+strconv.Itoa(pid))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// parsePIDs reads --server-pids.
func parsePIDs(s string) (map[string]int, error) {
	pids := map[string]int{}
	for _, part := range splitList(s) {
		ep, v, ok := strings.Cut(part, "=")
		pid, err := strconv.Atoi(v)
		if !ok || ep == "" || err != nil || pid <= 0 {
			return nil, fmt.Errorf("--server-pids: %q: want endpoint=pid", part)
		}
		pids[ep] = pid
	}
	return pids, nil
}
