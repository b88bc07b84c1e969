package results

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// ErrShards is returned (wrapped) by Merge when its files are not the
// shards of one run: not shard files, of different runs or configurations,
// or with an index missing or given twice.
var ErrShards = errors.New("results: not the shards of one run")

// MergeHistograms merges hs into one histogram of the first one's geometry,
// bucket by bucket, and fails if any value would be dropped (a histogram of
// a wider range than the first).
func MergeHistograms(hs ...*hdrhistogram.Histogram) (*hdrhistogram.Histogram, error) {
	if len(hs) == 0 {
		return NewRecorder(), nil
	}
	h0 := hs[0]
	out := hdrhistogram.New(h0.LowestTrackableValue(), h0.HighestTrackableValue(), int(h0.SignificantFigures()))
	for i, h := range hs {
		if dropped := out.Merge(h); dropped != 0 {
			return nil, fmt.Errorf("results: merging histogram %d dropped %d of its %d values", i, dropped, h.TotalCount())
		}
	}
	return out, nil
}

// Merge makes one run of the shard files of one run (`zkbench merge`): a file
// of the same shape as a run of one process, so that report, plot and compare
// read it unchanged. It refuses, wrapping ErrShards, files that are not
// shards, of different runs or configurations, and a shard index missing or
// given twice.
//
// Each case present in every shard is merged: counts and client counts
// summed, histograms merged bucket-exact, throughput the sum of the shards'
// rates (each over its own window; the windows start on one barrier and end
// after one duration), the servers' counters from the shard that scraped them
// for the whole case, per-operation figures over every shard's operations,
// Jain's index over every shard's clients, safety summed and judged across
// shards (CheckAcrossShards). A case missing from some shard, or that a shard
// marked incomplete, makes the run failed, with a StatusDetail that names
// each such case.
func Merge(shards []*Run) (*Run, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("%w: no files", ErrShards)
	}
	for i, r := range shards {
		if r.Shard == nil {
			return nil, fmt.Errorf("%w: file %d (run %s) is not a shard's: it has no shard index (run with --shards S --shard-index I)", ErrShards, i+1, r.ID)
		}
	}
	s0 := shards[0]
	count := s0.Shard.Count
	byIndex := map[int]*Run{}
	for i, r := range shards {
		switch {
		case r.ID != s0.ID:
			return nil, fmt.Errorf("%w: file %d is of run %s, file 1 of run %s", ErrShards, i+1, r.ID, s0.ID)
		case r.Shard.Count != count:
			return nil, fmt.Errorf("%w: file %d is shard %d of %d, file 1 shard %d of %d", ErrShards, i+1, r.Shard.Index, r.Shard.Count, s0.Shard.Index, count)
		case r.Shard.Index < 0 || r.Shard.Index >= count:
			return nil, fmt.Errorf("%w: file %d has shard index %d, outside 0..%d", ErrShards, i+1, r.Shard.Index, count-1)
		case byIndex[r.Shard.Index] != nil:
			return nil, fmt.Errorf("%w: shard %d is given twice", ErrShards, r.Shard.Index)
		}
		if err := sameConfig(s0.Config, r.Config); err != nil {
			return nil, fmt.Errorf("%w: shard %d and shard %d: %v", ErrShards, s0.Shard.Index, r.Shard.Index, err)
		}
		byIndex[r.Shard.Index] = r
	}
	var missing []string
	for i := range count {
		if byIndex[i] == nil {
			missing = append(missing, fmt.Sprint(i))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: run %s has %d shards; shard %s missing", ErrShards, s0.ID, count, strings.Join(missing, ", "))
	}
	ordered := make([]*Run, count)
	for i := range count {
		ordered[i] = byIndex[i]
	}
	return mergeRuns(ordered)
}

// sameConfig says how two shards' configurations differ, if they do.
func sameConfig(a, b Config) error {
	if reflect.DeepEqual(a, b) {
		return nil
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return fmt.Errorf("configurations differ in %s (%v against %v)", va.Type().Field(i).Name, va.Field(i).Interface(), vb.Field(i).Interface())
		}
	}
	return errors.New("configurations differ")
}

type caseKey struct {
	workload, variant string
	clients, repeat   int
}

func keyOf(r *Result) caseKey { return caseKey{r.Workload, r.Variant, r.Clients, r.Repeat} }

func (k caseKey) String() string {
	return fmt.Sprintf("%s %s, %d clients, repeat %d", k.workload, k.variant, k.clients, k.repeat)
}

// mergeRuns merges shards, ordered by index.
func mergeRuns(shards []*Run) (*Run, error) {
	s0 := shards[0]
	out := &Run{
		Format: FormatVersion, ID: s0.ID, Tool: s0.Tool, Command: s0.Command, StartedAt: s0.StartedAt,
		FinishedAt: s0.FinishedAt, Status: StatusComplete, Config: s0.Config, Environment: s0.Environment,
		ClusterMode: s0.ClusterMode, Cluster: s0.Cluster, Settings: s0.Settings, MergedShards: len(shards),
	}
	var details []string
	for _, r := range shards {
		if r.StartedAt.Before(out.StartedAt) {
			out.StartedAt = r.StartedAt
		}
		if r.FinishedAt.After(out.FinishedAt) {
			out.FinishedAt = r.FinishedAt
		}
		if r.Status == StatusFailed || (r.Status == StatusInterrupted && out.Status == StatusComplete) {
			out.Status = r.Status
		}
		if r.Status != StatusComplete {
			d := r.StatusDetail
			if d == "" {
				d = string(r.Status)
			}
			details = append(details, fmt.Sprintf("shard %d: %s", r.Shard.Index, d))
		}
		if out.Calibration == nil {
			out.Calibration = r.Calibration
		}
		for _, l := range r.Leftovers {
			if !slices.Contains(out.Leftovers, l) {
				out.Leftovers = append(out.Leftovers, l)
			}
		}
	}
	for _, r := range shards {
		for _, ev := range r.Timeline {
			ev.At += r.StartedAt.Sub(out.StartedAt)
			if ev.Client == NoClient && r.Shard.Index != 0 {
				continue // case boundaries and the like: shard 0's stand for all
			}
			out.Timeline = append(out.Timeline, ev)
		}
	}
	sort.SliceStable(out.Timeline, func(i, j int) bool { return out.Timeline[i].At < out.Timeline[j].At })

	// Cases in shard 0's order, merged where every shard has them.
	index := make([]map[caseKey]*Result, len(shards))
	for i, r := range shards {
		index[i] = map[caseKey]*Result{}
		for j := range r.Results {
			index[i][keyOf(&r.Results[j])] = &r.Results[j]
		}
	}
	var keys []caseKey
	seen := map[caseKey]bool{}
	for _, r := range shards {
		for j := range r.Results {
			if k := keyOf(&r.Results[j]); !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	var incomplete []string
	for _, k := range keys {
		var parts []*Result
		var absent []string
		for i := range shards {
			if res := index[i][k]; res != nil {
				parts = append(parts, res)
			} else {
				absent = append(absent, fmt.Sprint(shards[i].Shard.Index))
			}
		}
		if len(absent) > 0 {
			incomplete = append(incomplete, fmt.Sprintf("case %s has no results from shard %s", k, strings.Join(absent, ", ")))
			continue
		}
		var partial []string
		for i, p := range parts {
			if p.Shard == nil {
				partial = append(partial, fmt.Sprint(shards[i].Shard.Index))
			}
		}
		if len(partial) > 0 {
			incomplete = append(incomplete, fmt.Sprintf("case %s failed in shard %s (its result there is partial)", k, strings.Join(partial, ", ")))
			continue
		}
		res, err := mergeCase(parts)
		if err != nil {
			return nil, fmt.Errorf("results: case %s: %w", k, err)
		}
		for _, p := range parts {
			if p.Shard != nil && p.Shard.Incomplete != "" {
				incomplete = append(incomplete, fmt.Sprintf("case %s: shard %d: %s", k, p.Shard.Index, p.Shard.Incomplete))
			}
		}
		out.Results = append(out.Results, res)
	}
	if len(incomplete) > 0 {
		out.Status = StatusFailed
		details = append(details, "incomplete: "+strings.Join(incomplete, "; "))
	}
	out.StatusDetail = strings.Join(details, "; ")
	return out, nil
}
