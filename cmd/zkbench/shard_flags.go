package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/kube"
	"github.com/zkbench/zkbench/runner"
)

// jobIndexEnv is the variable a Kubernetes Indexed Job sets to each pod's
// completion index: the pod's --shard-index (the one kube's Job uses).
const jobIndexEnv = kube.IndexEnv

// shardOf is the run's shard from --shards and --shard-index (or
// $JOB_COMPLETION_INDEX): nil without --shards, or with --shards alone
// (this process is then the parent of local shards, see runner.SelfShardCommand).
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
	return kube.IndexFromEnv()
}
