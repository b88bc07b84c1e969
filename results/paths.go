package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FileName is what a run writes in its run folder.
const FileName = "results.json"

// ReadPaths reads the results files named by paths (a command line's
// arguments). A folder stands for the results.json inside it (a run's own
// folder).
func ReadPaths(paths []string) ([]*Run, error) {
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
