package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkbench/zkbench/internal/spawn"
	"github.com/zkbench/zkbench/results"
)

// shardStopGrace is how long shards have, after the run's ctx ends, to stop
// their case and write their results before they are killed.
const shardStopGrace = 45 * time.Second

// ShardsDir is the folder, inside a local sharded run's folder, that holds
// each shard's own results (<run>/shards/<index>/<run-id>/results.json).
const ShardsDir = "shards"

// runLocalShards runs the plan's shards as processes on this machine, on
// srv's servers, and merges their results files into r.res. Each shard's
// progress lines are passed on prefixed with its index. Ending ctx
// interrupts every shard (SIGINT: each stops its case and writes its
// results); a shard still running shardStopGrace later is killed. A shard
// that exits without a results file makes the run fail, with its last
// lines of output.
func (r *Runner) runLocalShards(ctx context.Context, srv *server) error {
	p := r.plan
	s := p.shard
	dir := p.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "zkbench-shards-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	r.progress("  %d shards on this machine, servers %s", s.count, strings.Join(srv.endpoints, ","))
	type shardProc struct {
		index int
		path  string
		tail  *tailWriter
		err   error
	}
	procs := make([]*shardProc, s.count)
	// A shard that fails stops the others at once, rather than leaving
	// them to wait out the shard timeout at the next barrier.
	sctx, stopShards := context.WithCancel(ctx)
	defer stopShards()
	var wg sync.WaitGroup
	for i := range s.count {
		out := filepath.Join(dir, ShardsDir, strconv.Itoa(i))
		sp := &shardProc{index: i, path: filepath.Join(out, p.runID, "results.json"), tail: newTailWriter(r, i)}
		procs[i] = sp
		var pids map[string]int
		if srv.livePIDs != nil {
			pids = srv.livePIDs()
		}
		child := p.spec()
		child.Config.Servers.Mode, child.Config.Servers.Endpoints, child.Config.Servers.Nodes = Remote, srv.endpoints, len(srv.endpoints)
		child.RunID, child.Output, child.ServerPIDs = p.runID, out, pids
		child.Shard = &SpecShard{Index: i, Count: s.count, Timeout: s.timeout}
		cmd := s.command(child)
		cmd.Env = append(append(os.Environ(), p.workerEnv...), cmd.Env...)
		cmd.Stdout, cmd.Stderr = io.Discard, sp.tail
		if err := spawn.Start(cmd); err != nil {
			sp.err = fmt.Errorf("start shard %d: %w", i, err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case sp.err = <-exited:
				if sp.err != nil {
					stopShards()
				}
				return
			case <-sctx.Done():
			}
			_ = cmd.Process.Signal(syscall.SIGINT)
			t := time.NewTimer(shardStopGrace)
			defer t.Stop()
			select {
			case sp.err = <-exited:
			case <-t.C:
				_ = cmd.Process.Kill()
				sp.err = fmt.Errorf("killed %v after the interrupt: %w", shardStopGrace, <-exited)
			}
		}()
	}
	wg.Wait()

	var files []*results.Run
	var errs []error
	for _, sp := range procs {
		sp.tail.flush()
		run, rerr := results.ReadFile(sp.path)
		if rerr != nil && sp.err == nil && sctx.Err() != nil && ctx.Err() == nil {
			continue // stopped because another shard failed: that one is the error
		}
		if rerr != nil {
			why := "no results file"
			if sp.err != nil {
				why = sp.err.Error()
			}
			errs = append(errs, fmt.Errorf("shard %d wrote no results (%s)%s", sp.index, why, sp.tail.last()))
			continue
		}
		if sp.err != nil && ctx.Err() == nil {
			r.progress("  shard %d: %v", sp.index, sp.err)
		}
		files = append(files, run)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if len(files) < s.count {
		return fmt.Errorf("shards: only %d of %d wrote results", len(files), s.count)
	}
	merged, err := results.Merge(files)
	if err != nil {
		return err
	}
	// The run is the parent's: its servers, its command; the cases are the
	// shards'.
	res := r.res
	res.Results, res.Timeline, res.MergedShards = merged.Results, merged.Timeline, merged.MergedShards
	res.Leftovers = merged.Leftovers
	for i := range res.Results {
		r.progress("  %s", caseLine(&res.Results[i]))
	}
	if merged.Status != results.StatusComplete {
		return fmt.Errorf("shards: %s", merged.StatusDetail)
	}
	return nil
}

// tailWriter passes a shard's output on to the run's progress, a line at a
// time with the shard's index in front, and keeps the last lines to quote
// if the shard fails.
type tailWriter struct {
	r     *Runner
	index int
	mu    sync.Mutex
	buf   []byte
	lines []string
}

func newTailWriter(r *Runner, index int) *tailWriter { return &tailWriter{r: r, index: index} }

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	for {
		i := strings.IndexByte(string(t.buf), '\n')
		if i < 0 {
			break
		}
		t.line(string(t.buf[:i]))
		t.buf = t.buf[i+1:]
	}
	return len(b), nil
}

func (t *tailWriter) line(l string) {
	l = strings.TrimRight(l, "\r")
	if l == "" {
		return
	}
	t.r.progress("  [shard %d] %s", t.index, l)
	t.lines = append(t.lines, l)
	if len(t.lines) > 5 {
		t.lines = t.lines[1:]
	}
}

func (t *tailWriter) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) > 0 {
		t.line(string(t.buf))
		t.buf = nil
	}
}

// last quotes the last lines the shard wrote.
func (t *tailWriter) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return ""
	}
	return ":\n    " + strings.Join(t.lines, "\n    ")
}
