package main

import (
	"bytes"
	"encoding/json"
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

// shardOf is the run's shard from --shards and --shard-index (or
// $JOB_COMPLETION_INDEX): nil without --shards, or with --shards alone
// (this process is then the parent of local shards, see shardCommand).
func (f *runFlags) shardOf(fl *pflag.FlagSet) (*runner.SpecShard, error) {
	switch {
	case f.shards == 0 && (fl.Changed("shard-index") || fl.Changed("shard-timeout")):
		return nil, errors.New("--shard-index and --shard-timeout need --shards")
	case f.shards == 0:
		return nil, nil
	case f.shards < 0:
		return nil, fmt.Errorf("--shards %d: want the number of shards, at least 1", f.shards)
	}
	index, ok, err := shardIndexOf(fl, f.shardIndex)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, nil
	case index < 0:
		return nil, fmt.Errorf("--shard-index %d: want 0 to %d", index, f.shards-1)
	}
	return &runner.SpecShard{Index: index, Count: f.shards, Timeout: f.shardTimeout}, nil
}

// shardIndexOf is --shard-index when given (or set by the caller: its
// default is -1), else $JOB_COMPLETION_INDEX when set (a Kubernetes
// Indexed Job); ok is false with neither.
func shardIndexOf(fl *pflag.FlagSet, flag int) (index int, ok bool, err error) {
	if fl.Changed("shard-index") || flag >= 0 {
		return flag, true, nil
	}
	v, set := os.LookupEnv(jobIndexEnv)
	if !set {
		return 0, false, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, false, fmt.Errorf("$%s %q: not a shard index", jobIndexEnv, v)
	}
	return n, true, nil
}

// shardCommand is how the parent of local shards starts one: zkbench
// itself, `zkbench run --spec -` with the shard's Spec on its standard
// input and the secrets in its environment, out of the process list.
func shardCommand(spec runner.Spec) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe, "run", "--spec", "-", "--no-plots")
	data, err := json.Marshal(spec)
	if err != nil {
		// A Spec is plain data; a failure here is a bug, and the shard
		// then fails reading its spec, naming it.
		data = []byte(err.Error())
	}
	cmd.Stdin = bytes.NewReader(data)
	if p := spec.Config.Servers.Password; p != "" {
		cmd.Env = append(cmd.Env, runner.PasswordEnv+"="+p)
	}
	if d := spec.Config.Servers.Digest; d != "" {
		cmd.Env = append(cmd.Env, runner.DigestEnv+"="+d)
	}
	return cmd
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
