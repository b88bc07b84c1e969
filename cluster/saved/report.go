package saved

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// DownAll stops every cluster saved at Paths(kind, state) with Down;
// found counts those there were, and paths are the state files looked at.
func DownAll(ctx context.Context, kind backends.Kind, state string, say func(string)) (found int, paths []string, err error) {
	if paths, err = Paths(kind, state); err != nil {
		return 0, nil, err
	}
	var errs []error
	for _, path := range paths {
		if path, err = filepath.Abs(path); err != nil {
			return found, paths, err
		}
		ok, err := Down(ctx, path, say)
		if ok {
			found++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return found, paths, errors.Join(errs...)
}

// StatusAll reports every cluster saved at Paths(kind, state) (Status,
// each member within timeout); paths are the state files looked at. A
// state file that cannot be read is an error beside the other reports.
func StatusAll(ctx context.Context, kind backends.Kind, state string, timeout time.Duration) (reports []Report, paths []string, err error) {
	if paths, err = Paths(kind, state); err != nil {
		return nil, nil, err
	}
	reports = []Report{}
	var errs []error
	for _, path := range paths {
		if path, err = filepath.Abs(path); err != nil {
			return reports, paths, err
		}
		s, err := Load(path)
		if errors.Is(err, ErrNotSaved) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reports = append(reports, Status(ctx, s, path, timeout))
	}
	return reports, paths, errors.Join(errs...)
}

// RunningEndpoints are the endpoints of the running cluster of kind saved
// at its default state file (`zkbench cluster up`), or nil.
func RunningEndpoints(kind backends.Kind) []string {
	path, err := DefaultPath(kind)
	if err != nil {
		return nil
	}
	s, err := Load(path)
	if err != nil || s.Backend != kind || s.Running() == 0 {
		return nil
	}
	return s.Endpoints
}

// WriteUse prints the members of s, saved at state, and how to use and
// stop the cluster.
func (s *Cluster) WriteUse(w io.Writer, state string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, m := range s.Members() {
		fmt.Fprintf(tw, "  %s\t%s\tpid %d\n", m.Name, m.Endpoint, m.PID)
	}
	tw.Flush()
	fmt.Fprintf(w, "State: %s\nFiles: %s\n", state, s.Dir)
	fmt.Fprintf(w, "Run against it:\n  zkbench run --backend %s --endpoints %s\n", s.Backend, strings.Join(s.Endpoints, ","))
	fmt.Fprintf(w, "Stop it:\n  %s\n", DownHint(s.Backend, state))
}

// Write prints r as `zkbench cluster status` shows it: a line for the
// cluster, one a member, and what to do next.
func (r Report) Write(w io.Writer) {
	fmt.Fprintf(w, "%s: %s, %s, started %s (state %s)\n",
		r.Backend, r.Health, Plural(len(r.Members), "member"), r.Started.Local().Format(time.DateTime), r.StateFile)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, m := range r.Members {
		alive, check := "running", m.Role+" "+m.Version
		switch {
		case !m.Running:
			alive, check = "not running", ""
		case m.Error != "":
			check = "no answer: " + m.Error
		}
		fmt.Fprintf(tw, "  %s\t%s\tpid %d\t%s\t%s\n", m.Name, m.Endpoint, m.PID, alive, check)
	}
	tw.Flush()
	switch r.Health {
	case "serving":
		fmt.Fprintf(w, "  --endpoints %s\n", strings.Join(r.Endpoints, ","))
	case "stale":
		fmt.Fprintf(w, "  None of its processes runs any more: `%s` removes its files.\n", DownHint(r.Backend, r.StateFile))
	default:
		for _, m := range r.Members {
			if m.Error != "" {
				fmt.Fprintf(w, "  %s's log: %s\n", m.Name, m.Log)
			}
		}
	}
}
