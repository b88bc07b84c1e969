package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes/native"
	"github.com/zkbench/zkbench/recipes/variants"
	"github.com/zkbench/zkbench/workloads"
)

// faultHelp is --fault's help text.
const faultHelp = `inject a fault, ACTION[:ARG]@AT[+FOR], AT counted in each case from when every client
has its session (before the warm-up); repeatable, or comma-separated. Actions: kill-server:I, restart-server:I, kill-leader,
kill-servers:N, pause-server:I (+FOR required), latency:BASE[±JITTER], cut-client:C, cut-all,
reset-conns[:C], expire-session:C, pause-client:C (+FOR required; lock workload, closed loop:
client C runs in a worker process that is SIGSTOPped, as in a long GC pause). Servers and
clients count from 0. Examples: kill-leader@10s+5s, latency:50ms±20ms@5s+10s, cut-client:3@5s+8s`

// recipeFlags are the flags of the election and barrier workloads; each
// becomes a workload parameter (results.Config.Params) of the workloads
// that read it.
type recipeFlags struct {
	failovers   int
	kill        string
	settle      time.Duration
	candidates  int
	stepTimeout time.Duration
	work        time.Duration
	jitter      time.Duration
	rounds      int
	preset      string
	scale       float64
	fence       string
	// config workload
	size string
	poll time.Duration
	// The shared lock workloads (rwlock, revoke).
	readShare   float64
	grace       time.Duration
	revokeEvery time.Duration
	cleanup     time.Duration
	// simple-barrier (issue 12); poll is config's too
	barrierUp time.Duration
	// twophase (issue 12)
	abortShare float64
	voteSpread time.Duration
	// membership (issue 12)
	churn float64
	// queue workload (issue 11)
	producers  int
	priorities int
	itemSize   int
}

func addRecipeFlags(fl *pflag.FlagSet, f *recipeFlags) {
	fl.IntVar(&f.failovers, "failovers", 10, "failover, observers: leader kills per case when --ops is 0")
	fl.StringVar(&f.kill, "kill", workloads.KillClose, "failover, observers: how the leader's session ends: close (by its client), or expire (on the server: etcd revokes the lease, ZooKeeper closes the session from a second connection)")
	fl.DurationVar(&f.settle, "settle", 100*time.Millisecond, "failover, observers: quiet time before each kill, so every waiter is asleep")
	fl.IntVar(&f.candidates, "candidates", 3, "observers: candidates besides the observers (at least failovers+1)")
	fl.DurationVar(&f.stepTimeout, "step-timeout", time.Minute, "failover, observers: bound on one failover; config: on the clients' first read, their catch-up and a write in flight when the writer stops")
	fl.DurationVar(&f.work, "work", 0, "barrier: computation between Enter and Leave")
	fl.DurationVar(&f.jitter, "jitter", 0, "barrier: spread arrivals and computations by a random [0, jitter)")
	fl.IntVar(&f.rounds, "rounds", 20, "barrier: rounds per case when --ops is 0")
	fl.StringVar(&f.preset, "preset", "", "barrier: "+workloads.PresetPaperBarrier+
		" runs the ZooKeeper paper's double barrier grid (50, 100, 200 clients x 200 to 1,600 barriers, times --scale) and prints its table")
	fl.Float64Var(&f.scale, "scale", 0.1, "--preset: fraction of the paper's sizes, 0 < scale <= 1")
	fl.StringVar(&f.fence, "fence", workloads.FenceOff, "lock: holders write to a shared register with their fencing token after each grant and before each release; "+
		"off: it accepts stale writes (a holder's whose lock passed on) and counts them as violations; on: it rejects them (counted as prevented)")
	// config workload
	fl.StringVar(&f.size, "size", "1KB", "config: bytes of the config node's data (512, 64KB, 1MB; KB = 1024 bytes), at most the servers' request limit")
	fl.DurationVar(&f.poll, "poll", 0, "config, simple-barrier: the polling variant's re-read interval (0: the workload's default, config 100ms, simple-barrier 50ms)")
	// The shared lock workloads.
	fl.Float64Var(&f.readShare, "read-share", -1, "rwlock, revoke: share of acquisitions that are reads, 0 to 1 (-1: the workload's default, rwlock 0.9, revoke 0)")
	fl.DurationVar(&f.grace, "grace", 100*time.Millisecond, "revoke, variant forced: how long after its ask the revoker deletes a holder's node that is still there")
	fl.DurationVar(&f.revokeEvery, "revoke-every", 50*time.Millisecond, "revoke: the revoker's pause between one revocation's end and its next ask, and after a listing that found no holder (positive)")
	fl.DurationVar(&f.cleanup, "cleanup", 0, "revoke: how long a revoked holder works, writing at the end, before it releases (longer than --grace: forced revocations take the lock from a holder still writing)")
	// simple-barrier (issue 12)
	fl.DurationVar(&f.barrierUp, "barrier-up", 100*time.Millisecond, "simple-barrier: how long the barrier stays up once every waiter is waiting")
	// twophase (issue 12)
	fl.Float64Var(&f.abortShare, "abort-share", 0, "twophase: the fraction of votes that are abort, 0 to 1")
	fl.DurationVar(&f.voteSpread, "vote-spread", 0, "twophase: each site votes a random [0, spread) after joining (0: the votes come in one burst)")
	// membership (issue 12)
	fl.Float64Var(&f.churn, "churn", 10, "membership: changes (joins plus leaves) per second")
	// queue workload (issue 11): --clients are the consumers, --rate the producers' items/s in all, --hold each item's processing
	fl.IntVar(&f.producers, "producers", 1, "queue: producers, each on its own session, beside the --clients consumers")
	fl.IntVar(&f.priorities, "priorities", 1, "queue: priority levels (items get one at random, 0 most urgent); 1: none")
	fl.IntVar(&f.itemSize, "item-size", 32, "queue: bytes of each item's data")
}

// params are the workload parameters of the flags workload reads.
func (f *recipeFlags) params(workload string) (map[string]string, error) {
	params := map[string]string{}
	switch f.fence {
	case workloads.FenceOff, workloads.FenceOn:
	default:
		return nil, fmt.Errorf("--fence %q: want %s or %s", f.fence, workloads.FenceOff, workloads.FenceOn)
	}
	if f.readShare != -1 && (f.readShare < 0 || f.readShare > 1) {
		return nil, fmt.Errorf("--read-share %v: want a share from 0 to 1 (0.9: nine reads in ten)", f.readShare)
	}
	switch workload {
	case "lock":
		params[workloads.ParamFence] = f.fence
	// The shared lock workloads.
	case "rwlock", "revoke":
		if f.readShare != -1 {
			params[workloads.ParamReadShare] = strconv.FormatFloat(f.readShare, 'g', -1, 64)
		}
		if workload == "revoke" {
			if f.revokeEvery <= 0 {
				return nil, fmt.Errorf("--revoke-every %v: want a positive pause such as 50ms (the revoker waits it before each listing; with none it would list the lock in a tight loop)", f.revokeEvery)
			}
			params[workloads.ParamFence] = f.fence
			params[workloads.ParamGrace] = f.grace.String()
			params[workloads.ParamRevokeEvery] = f.revokeEvery.String()
			params[workloads.ParamCleanup] = f.cleanup.String()
		}
	case "failover", "observers":
		params[workloads.ParamFailovers] = strconv.Itoa(f.failovers)
		params[workloads.ParamKill] = f.kill
		params[workloads.ParamSettle] = f.settle.String()
		params[workloads.ParamStepTimeout] = f.stepTimeout.String()
		if workload == "observers" {
			params[workloads.ParamCandidates] = strconv.Itoa(f.candidates)
		}
	case "barrier":
		params[workloads.ParamWork] = f.work.String()
		params[workloads.ParamJitter] = f.jitter.String()
		params[workloads.ParamRounds] = strconv.Itoa(f.rounds)
	case "config":
		n, err := workloads.ParseSize(f.size)
		if err != nil {
			return nil, fmt.Errorf("--size: %w", err)
		}
		poll, err := pollOr(f.poll, 100*time.Millisecond)
		if err != nil {
			return nil, err
		}
		params[workloads.ParamSize] = strconv.Itoa(n)
		params[workloads.ParamPoll] = poll.String()
		params[workloads.ParamStepTimeout] = f.stepTimeout.String()
	// simple-barrier (issue 12)
	case "simple-barrier":
		poll, err := pollOr(f.poll, 50*time.Millisecond)
		if err != nil {
			return nil, err
		}
		params[workloads.ParamPoll] = poll.String()
		params[workloads.ParamBarrierUp] = f.barrierUp.String()
	// twophase (issue 12)
	case "twophase":
		if f.abortShare < 0 || f.abortShare > 1 {
			return nil, fmt.Errorf("--abort-share %v: want a fraction from 0 to 1", f.abortShare)
		}
		params[workloads.ParamAbortShare] = strconv.FormatFloat(f.abortShare, 'g', -1, 64)
		params[workloads.ParamVoteSpread] = f.voteSpread.String()
	// membership (issue 12)
	case "membership":
		if f.churn <= 0 {
			return nil, fmt.Errorf("--churn %v: want changes per second above 0", f.churn)
		}
		params[workloads.ParamChurn] = strconv.FormatFloat(f.churn, 'g', -1, 64)
	case "queue":
		params[workloads.ParamProducers] = strconv.Itoa(f.producers)
		params[workloads.ParamPriorities] = strconv.Itoa(f.priorities)
		params[workloads.ParamItemSize] = strconv.Itoa(f.itemSize)
	}
	return params, nil
}

// workloadFlags are the flags only some workloads read, and which.
var workloadFlags = map[string][]string{
	"hold":         {"lock", "handoff", "rwlock", "revoke", "queue"},
	"think":        {"lock", "rwlock", "revoke"},
	"rate":         {"lock", "config", "queue"},
	"fence":        {"lock", "revoke"},
	"failovers":    {"failover", "observers"},
	"kill":         {"failover", "observers"},
	"settle":       {"failover", "observers"},
	"step-timeout": {"failover", "observers", "config"},
	"candidates":   {"observers"},
	"work":         {"barrier"},
	"jitter":       {"barrier"},
	"rounds":       {"barrier"},
	"preset":       {"barrier"},
	// config workload
	"size": {"config"},
	"poll": {"config", "simple-barrier"},
	// The shared lock workloads.
	"read-share":   {"rwlock", "revoke"},
	"grace":        {"revoke"},
	"revoke-every": {"revoke"},
	"cleanup":      {"revoke"},
	// simple-barrier (issue 12)
	"barrier-up": {"simple-barrier"},
	// twophase (issue 12)
	"abort-share": {"twophase"},
	"vote-spread": {"twophase"},
	// membership (issue 12)
	"churn": {"membership"},
	// queue workload (issue 11)
	"producers":  {"queue"},
	"priorities": {"queue"},
	"item-size":  {"queue"},
}

// backendFlags are the flags only one backend reads.
var backendFlags = map[string]backends.Kind{
	"session-timeout": backends.ZooKeeper, "digest": backends.ZooKeeper,
	"lease-ttl": backends.Etcd, "cacert": backends.Etcd, "cert": backends.Etcd, "key": backends.Etcd,
	"tls-server-name": backends.Etcd, "insecure-skip-tls-verify": backends.Etcd,
	"user": backends.Etcd, "password": backends.Etcd,
}

// checkFlagsRead refuses a flag the user set that this run would not read:
// a silently ignored flag makes a benchmark measure something other than
// what its user asked for.
func checkFlagsRead(fl *pflag.FlagSet, f *runFlags) error {
	var errs []error
	fl.Visit(func(flag *pflag.Flag) {
		name := flag.Name
		if ws, ok := workloadFlags[name]; ok && !slices.Contains(ws, f.workload) && slices.Contains(workloads.Names(), f.workload) {
			who := "the " + ws[0] + " workload does"
			if len(ws) > 1 {
				who = "the " + strings.Join(ws, ", ") + " workloads do"
			}
			errs = append(errs, fmt.Errorf("--%s: the %s workload does not read it (only %s)", name, f.workload, who))
		}
		if k, ok := backendFlags[name]; ok && string(k) != f.backend {
			errs = append(errs, fmt.Errorf("--%s: only %s reads it, and this run's backend is %s", name, k, f.backend))
		}
	})
	if len(errs) > 0 {
		return errs[0]
	}
	// membership (issue 12): say why delta is not a ZooKeeper variant
	if f.workload == "membership" && f.backend == string(backends.ZooKeeper) && slices.Contains(strings.Split(f.variants, ","), variants.Delta) {
		return fmt.Errorf("--variants delta: %w", native.ErrNoPersistentWatch)
	}
	switch {
	case fl.Changed("scale") && f.recipe.preset == "":
		return fmt.Errorf("--scale: it scales a --preset's grid; give --preset %s", workloads.PresetPaperBarrier)
	case fl.Changed("nodes") && len(f.endpoints) > 0:
		return errors.New("--nodes: zkbench starts no servers with --endpoints; your cluster has the members it has")
	case fl.Changed("grace") && f.workload == "revoke" && !slices.Contains(splitList(f.variants), "forced"):
		return errors.New("--grace: only the forced variant waits a grace period (add --variants forced)")
	case f.workload == "queue" && fl.Changed("warmup"): // queue workload (issue 11)
		return errors.New("--warmup: the queue workload measures from its first put (items put in a warm-up would still be taken in the interval); leave it out")
	case f.workload == "queue" && f.rate <= 0: // queue workload (issue 11)
		return errors.New("--rate: the queue workload's producers run an open loop: give --rate, the items per second they put in all")
	case fl.Changed("clients") && f.recipe.preset != "":
		return fmt.Errorf("--clients: --preset %s sets the client counts of its grid (use --scale)", f.recipe.preset)
	}
	return nil
}

// pollOr is --poll, or def when it was left at 0; a negative interval is
// refused.
func pollOr(poll, def time.Duration) (time.Duration, error) {
	switch {
	case poll == 0:
		return def, nil
	case poll < 0:
		return 0, fmt.Errorf("--poll %v: want a positive interval such as %v", poll, def)
	}
	return poll, nil
}
