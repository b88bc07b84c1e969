package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// FileName is what a run writes in its run folder.
const FileName = "results.json"

// ReadPaths reads the results files named by paths (a command line's
// arguments) as ReadEach does, for a command that pools their cases: a run
// given twice (the same file, or a copy of it: the same ID, start and
// shard) is refused, since its cases would count as two repeats.
func ReadPaths(paths []string) ([]*Run, error) {
	runs, err := ReadEach(paths)
	if err != nil {
		return nil, err
	}
	type identity struct {
		id      string
		started time.Time
		shard   int
	}
	given := map[identity]string{}
	for i, r := range runs {
		key := identity{r.ID, r.StartedAt, -1}
		if r.Shard != nil {
			key.shard = r.Shard.Index
		}
		if first, ok := given[key]; ok {
			return nil, fmt.Errorf("%s and %s hold the same run (%s, started %s): give each run once, or its cases count as two repeats",
				first, paths[i], r.ID, r.StartedAt.UTC().Format(time.RFC3339))
		}
		given[key] = paths[i]
	}
	return runs, nil
}

// ReadEach reads the results files named by paths, one run a path (a
// command that sets runs side by side, such as compare, may be given one
// twice). A folder stands for the results.json inside it (a run's own
// folder).
func ReadEach(paths []string) ([]*Run, error) {
	runs := make([]*Run, 0, len(paths))
	for _, a := range paths {
		p := a
		if st, err := os.Stat(a); err == nil && st.IsDir() {
			p = filepath.Join(a, FileName)
		}
		r, err := ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w (give a results file, or a run folder holding %s)", err, FileName)
		}
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// ReadShardsDir reads the S shards of a run from dir/0 .. dir/S-1, each the
// folder a shard's --output named: it holds <run-id>/results.json (or,
// a run folder itself, results.json). A shard without its file, or whose
// file is not shard I of S, is refused, naming it.
func ReadShardsDir(dir string, shards int) ([]*Run, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("--shards-dir %s: not a folder (%v): give the folder holding the shards' --output folders 0 to %d", dir, err, shards-1)
	}
	runs := make([]*Run, 0, shards)
	for i := range shards {
		sub := filepath.Join(dir, strconv.Itoa(i))
		p := filepath.Join(sub, FileName)
		if _, err := os.Stat(p); err != nil {
			found, _ := filepath.Glob(filepath.Join(sub, "*", FileName))
			switch len(found) {
			case 0:
				return nil, fmt.Errorf("shard %d of %d: no %s/<run-id>/%s: the shard wrote no results (did it run? its log says why), or --shards is not the run's", i, shards, sub, FileName)
			case 1:
				p = found[0]
			default:
				return nil, fmt.Errorf("shard %d of %d: %s holds several runs (%s): give the shards' files by name", i, shards, sub, strings.Join(found, ", "))
			}
		}
		r, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		if r.Shard == nil || r.Shard.Index != i || r.Shard.Count != shards {
			what := "not a shard's"
			if r.Shard != nil {
				what = fmt.Sprintf("shard %d of %d", r.Shard.Index, r.Shard.Count)
			}
			return nil, fmt.Errorf("%s: %s, want shard %d of %d (--shards-dir %s --shards %d)", p, what, i, shards, dir, shards)
		}
		runs = append(runs, r)
	}
	return runs, nil
}
