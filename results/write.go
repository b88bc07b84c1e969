package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// ErrInvalidRun is returned (wrapped) by Validate and WriteFile when a run
// breaks one of the model's invariants.
var ErrInvalidRun = errors.New("results: invalid run")

// ErrUnwritable is returned (wrapped) when the results folder cannot be
// created or written.
var ErrUnwritable = errors.New("results: folder not writable")

// Validate checks the invariants every results file must hold: a known format
// and status, and for every result a workload, variant and positive client
// count, Ops.Issued == Succeeded + Failed + Unknown + StillWaiting with no
// negative count, a known StoppedBy, and only finite numbers (JSON cannot
// hold NaN or Inf).
// It reports every problem it finds, joined, wrapping ErrInvalidRun.
func (r *Run) Validate() error {
	if r == nil {
		return fmt.Errorf("%w: nil run", ErrInvalidRun)
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if r.Format < 1 || r.Format > FormatVersion {
		add("format %d is not a format this zkbench writes (1 to %d)", r.Format, FormatVersion)
	}
	if r.ID == "" {
		add("run id is empty")
	}
	if !r.Status.Valid() {
		add("status %q is not one of %q", r.Status, Statuses())
	}
	for i := range r.Results {
		res := &r.Results[i]
		where := fmt.Sprintf("result %d (%s/%s, %d clients, repeat %d)", i, res.Workload, res.Variant, res.Clients, res.Repeat)
		if res.Workload == "" || res.Variant == "" {
			add("%s: workload and variant must be set", where)
		}
		if res.Clients < 1 {
			add("%s: clients must be at least 1", where)
		}
		o := res.Ops
		if o.Issued < 0 || o.Succeeded < 0 || o.Failed < 0 || o.Unknown < 0 || o.StillWaiting < 0 {
			add("%s: negative operation count %+v", where, o)
		}
		if o.Issued != o.Succeeded+o.Failed+o.Unknown+o.StillWaiting {
			add("%s: ops issued %d != succeeded %d + failed %d + unknown %d + still waiting %d",
				where, o.Issued, o.Succeeded, o.Failed, o.Unknown, o.StillWaiting)
		}
		if !res.StoppedBy.Valid() {
			add("%s: stopped_by %q is not one of %q", where, res.StoppedBy, StopReasons())
		}
		if res.Elapsed < 0 {
			add("%s: negative elapsed time", where)
		}
		if !finite(res.Throughput) || res.Throughput < 0 {
			add("%s: throughput %v is not a finite non-negative number", where, res.Throughput)
		}
		if !finite(res.Fairness.Jain) {
			add("%s: Jain index %v is not finite", where, res.Fairness.Jain)
		}
		for name, h := range res.Latency {
			if h == nil {
				add("%s: latency %q is null", where, name)
			}
		}
		for name, v := range res.PerOp {
			if !finite(v) {
				add("%s: per-op figure %q is %v", where, name, v)
			}
		}
		for name, v := range res.Server {
			if !finite(v) {
				add("%s: server counter %q is %v", where, name, v)
			}
		}
		if !finite(res.Cost.ClientCPUSeconds) || !finite(res.Cost.ServerCPUSeconds) || !finite(res.Cost.ClientCostPerClient) {
			add("%s: cost figures must be finite", where)
		}
		if res.Safety.Violations < 0 || res.Safety.Checked < 0 || res.Safety.Prevented < 0 {
			add("%s: negative safety counts", where)
		}
		if f := res.Safety.Fence; f != nil {
			switch {
			case f.Rejected < 0 || f.Rejected > f.Stale || f.Stale > f.Writes:
				add("%s: fence counts %+v: want 0 <= rejected <= stale <= writes", where, *f)
			case f.Rejected != res.Safety.Prevented:
				add("%s: fence rejected %d stale writes but safety says %d prevented", where, f.Rejected, res.Safety.Prevented)
			case !f.Fenced && f.Rejected > 0:
				add("%s: an unfenced register rejected %d writes", where, f.Rejected)
			}
		}
		if w := res.Work; w != nil {
			a := w.Anomalies
			switch {
			case w.Steps < 1 || w.Committed < 0 || w.Recovered < 0 || w.Recovered > w.Committed || w.Aborted < 0 || w.Requests < 0 || w.Bytes < 0:
				add("%s: work counts %+v: want steps >= 1 and 0 <= recovered <= committed, none negative", where, *w)
			case a.LostUpdates < 0 || a.AppliedTwice < 0 || a.PartialVisible < 0 || a.Mismatched < 0 || a.StaleAccepted < 0 ||
				a.StaleRejected < 0 || a.Pending < 0 || a.Unreported < 0:
				add("%s: negative work anomalies %+v", where, a)
			}
			for _, c := range w.Crashes {
				switch c.Ended {
				case CrashCompleted, CrashNothing, CrashPending, CrashPartial, CrashIdle:
				default:
					add("%s: crash of client %d ended %q", where, c.Client, c.Ended)
				}
				if c.Recovery < 0 || c.At < 0 {
					add("%s: crash of client %d at %v, recovery %v: want neither negative", where, c.Client, c.At, c.Recovery)
				}
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidRun, strings.Join(problems, "; "))
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// CheckWritable makes dir (and its parents) if missing and proves that a
// file can be created in it, so that a run fails before it starts instead of
// losing its results at the end. The error wraps ErrUnwritable and names the
// folder.
func CheckWritable(dir string) error {
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: cannot create %q (pick another folder with -o): %w", ErrUnwritable, dir, err)
	}
	f, err := os.CreateTemp(dir, ".zkbench-probe-*")
	if err != nil {
		return fmt.Errorf("%w: cannot create a file in %q (check its permissions or pick another folder with -o): %w", ErrUnwritable, dir, err)
	}
	name := f.Name()
	cerr := f.Close()
	rerr := os.Remove(name)
	if cerr != nil || rerr != nil {
		return fmt.Errorf("%w: probe file in %q: %w", ErrUnwritable, dir, errors.Join(cerr, rerr))
	}
	return nil
}

// WriteFile validates run and writes it as indented JSON to path atomically:
// into a temporary file in the same folder, synced to disk, then renamed over
// path, so that a reader (or a crash) sees either the previous file or the
// new one, never a torn one. An invalid run is not written.
func WriteFile(path string, run *Run) error {
	if err := run.Validate(); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return fmt.Errorf("results: encode run %s: %w", run.ID, err)
	}
	raw = append(raw, '\n')
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%w: cannot create a file in %q: %w", ErrUnwritable, dir, err)
	}
	tmpName := tmp.Name()
	fail := func(err error) error {
		_ = tmp.Close()
		_ = os.Remove(tmpName)
		return fmt.Errorf("results: write %q: %w", path, err)
	}
	if _, err := tmp.Write(raw); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("results: write %q: %w", path, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("results: write %q: %w", path, err)
	}
	// Make the rename itself durable. Some filesystems refuse to sync a
	// directory; the file is already complete, so that is not an error.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// WriteRunDir writes run to <output>/<run-id>/results.json, once the
// folder is known to be writable, and returns the folder and the file.
func WriteRunDir(output string, run *Run) (dir, path string, err error) {
	dir = filepath.Join(output, run.ID)
	if err := CheckWritable(dir); err != nil {
		return "", "", fmt.Errorf("-o %s: %w", output, err)
	}
	path = filepath.Join(dir, FileName)
	return dir, path, WriteFile(path, run)
}
