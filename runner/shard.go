package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/recipes/fair"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// ErrShardMissing: a shard did not reach a case's barrier within the shard
// timeout (it failed, was never started, or is too slow): the case is
// incomplete.
var ErrShardMissing = errors.New("shard missing")

// DefaultShardTimeout bounds each wait at a case's shard barrier.
const DefaultShardTimeout = 2 * time.Minute

// MaxShards is the most shards a run may have.
const MaxShards = 10000

// ShardCommand returns the command that runs one shard of a local sharded
// run from its Spec: the parent's, made shard Index of the run on the
// parent's servers (Remote, their endpoints and, where they run on this
// machine, their processes), writing <Output>/<RunID>/results.json.
type ShardCommand func(Spec) *exec.Cmd

// WithServerProcesses says that the servers at Servers.Endpoints run on
// this machine as the processes pids (by endpoint), so that the run measures
// their CPU and memory as it does for servers it starts itself. A local
// shard is told them by its parent.
func WithServerProcesses(pids map[string]int) Option {
	return func(o *options) { o.serverPIDs = pids }
}

// WithShard makes the run shard index (0 <= index < count) of a run that
// count processes share, each running its share of every case's clients on
// the servers at Servers.Endpoints; timeout bounds each wait at a case's
// barrier (0: DefaultShardTimeout). Every shard must be given the same Config
// and run id. Its results file is a shard's (results.Run.Shard), which
// results.Merge joins with the others'.
func WithShard(index, count int, timeout time.Duration) Option {
	return func(o *options) { o.shard = &shardOpts{index: index, count: count, timeout: timeout} }
}

// WithLocalShards makes the run the parent of count shard processes on this
// machine: it starts (or reaches) the servers, runs each shard with
// command, and merges their files into the run's. timeout is each shard's
// barrier bound (0: DefaultShardTimeout).
func WithLocalShards(count int, timeout time.Duration, command ShardCommand) Option {
	return func(o *options) {
		o.shard = &shardOpts{index: -1, count: count, timeout: timeout, command: command}
	}
}

type shardOpts struct {
	index, count int // index -1: the parent of local shards
	timeout      time.Duration
	command      ShardCommand
}

func (s *shardOpts) parent() bool { return s != nil && s.index < 0 }

// checkShards refuses what a sharded run cannot do, naming the flag.
func checkShards(p *plan, runIDGiven bool) error {
	s := p.shard
	if s == nil {
		return nil
	}
	if s.timeout == 0 {
		s.timeout = DefaultShardTimeout
	}
	switch {
	case s.count < 1 || s.count > MaxShards:
		return fmt.Errorf("--shards %d: want 1 to %d", s.count, MaxShards)
	case s.index >= s.count:
		return fmt.Errorf("--shard-index %d: a run of %d shards has shards 0 to %d", s.index, s.count, s.count-1)
	case s.timeout < 0:
		return fmt.Errorf("--shard-timeout %v: must be positive", s.timeout)
	case !p.wspec.Abilities.Shards:
		return fmt.Errorf("--shards: only %s sharded (this run's workload is %s)",
			ableWorkloads(func(a workloads.Abilities) bool { return a.Shards }, "runs", "run"), p.wspec.Name)
	case p.cfg.Ops > 0:
		return errors.New("--shards: --ops cannot end every shard's interval at one moment; bound the cases by --duration")
	case len(p.faults) > 0:
		return errors.New("--shards: faults (--fault) are not sharded yet: run them in one process")
	case p.calibrate:
		return errors.New("--shards: --calibrate measures the servers alone: run it without --shards")
	case p.cfg.Params[workloads.ParamFence] == workloads.FenceOn:
		return errors.New("--shards: --fence on needs one register for every holder, and each shard's is its own; use --fence off (overlaps across shards are judged by the merge)")
	case slices.Min(p.cfg.Clients) < s.count:
		return fmt.Errorf("--clients %d: fewer clients than --shards %d: every shard needs at least one", slices.Min(p.cfg.Clients), s.count)
	case s.index >= 0 && !runIDGiven:
		return errors.New("--shards: every shard must name the same run (its namespace /zkbench/<run-id> and the merge): give --run-id, e.g. the Kubernetes Job's name")
	case s.index >= 0 && p.mode != Remote:
		return errors.New("--shard-index: a shard reaches the servers every shard shares: give --endpoints (zkbench run --shards S without --shard-index starts the servers and S shards on this machine)")
	case s.parent() && s.command == nil:
		return errors.New("--shards: no command to start the shard processes with")
	}
	p.cfg.Params["shards"] = strconv.Itoa(s.count)
	return nil
}

// shardBarrier lines up the shards of one case at two double barriers on
// the service, in zkbench's own namespace (/zkbench/<run-id>/shards/<case>/
// start and .../end): the herd-free double barrier, each shard one
// participant on a session of its own that is closed once it is through, so
// that nothing of the barrier is open during the measured interval.
type shardBarrier struct {
	b       backends.Backend
	path    string
	count   int
	timeout time.Duration
}

var _ workloads.ShardSync = (*shardBarrier)(nil)

func (r *Runner) shardBarrier(b backends.Backend, caseID string) *shardBarrier {
	s := r.plan.shard
	return &shardBarrier{b: b, path: backends.Namespace(r.plan.runID) + "/shards/" + caseID, count: s.count, timeout: s.timeout}
}

// Ready waits, up to the shard timeout, until every shard's sessions are open.
func (sb *shardBarrier) Ready(ctx context.Context) error { return sb.enter(ctx, "start") }

// Done waits, up to the shard timeout, until every shard's sessions are closed.
func (sb *shardBarrier) Done(ctx context.Context) error { return sb.enter(ctx, "end") }

func (sb *shardBarrier) enter(ctx context.Context, name string) error {
	bctx, cancel := context.WithTimeout(ctx, sb.timeout)
	defer cancel()
	s, err := sb.b.NewSession(bctx)
	if err != nil {
		return fmt.Errorf("shard barrier %s: open a session: %w", name, err)
	}
	defer s.Close()
	path := sb.path + "/" + name
	_, err = fair.NewDoubleBarrier(s, path, sb.count).Enter(bctx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case bctx.Err() != nil:
		return fmt.Errorf("%w: %s of the %d shards reached the %s barrier within %v (--shard-timeout): the case is incomplete",
			ErrShardMissing, sb.arrived(path), sb.count, name, sb.timeout)
	}
	return fmt.Errorf("shard barrier %s: %w", name, err)
}

// arrived says how many shards are at the barrier at path besides this one
// (which has left it), or "not all" if that cannot be read.
func (sb *shardBarrier) arrived(path string) string {
	admin, ok := sb.b.(backends.Admin)
	if !ok {
		return "not all"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	names, err := admin.List(ctx, path+"/members")
	if err != nil && !errors.Is(err, backends.ErrNoNode) {
		return "not all"
	}
	return fmt.Sprintf("only %d", len(names)+1)
}

// caseShard is this shard's part in a case of n clients.
func (r *Runner) caseShard(b backends.Backend, caseID string, n int) *workloads.CaseShard {
	s := r.plan.shard
	first, _ := results.ShareOf(n, s.index, s.count)
	host, _ := os.Hostname()
	return &workloads.CaseShard{
		Index: s.index, Count: s.count, FirstClient: first, Total: n, Host: host,
		Scrape: s.index == 0, Sync: r.shardBarrier(b, caseID),
	}
}

// globalClients passes a shard's events on with its clients' global indices.
type globalClients struct {
	workloads.Recorder
	first int
}

func (g globalClients) Event(kind, what string, client int) {
	if client >= 0 {
		client += g.first
	}
	g.Recorder.Event(kind, what, client)
}
