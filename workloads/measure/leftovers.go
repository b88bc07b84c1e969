package measure

import (
	"context"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/zkbench/zkbench/backends"
)

// maxLeftovers bounds how many leftover paths are reported one by one.
const maxLeftovers = 100

// FindLeftovers lists what is still below ns once every session of a case
// has closed: the leaves of ns's subtree, except the persistent directories
// in keep (on ZooKeeper, the parents that recipes make with EnsurePath) and
// ns itself. Ephemeral nodes of closed sessions may take a moment to go, so
// it looks again for up to grace while something is left. It reports at
// most maxLeftovers paths, then a line saying how many more.
func FindLeftovers(ctx context.Context, admin backends.Admin, ns string, grace time.Duration, keep ...string) ([]string, error) {
	deadline := time.Now().Add(grace)
	for {
		left, err := leaves(ctx, admin, ns, keep)
		if err != nil || len(left) == 0 || time.Now().After(deadline) {
			return left, err
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return left, nil
		case <-t.C:
		}
	}
}

func leaves(ctx context.Context, admin backends.Admin, ns string, keep []string) ([]string, error) {
	var out []string
	more := 0
	var walk func(p string, depth int) error
	walk = func(p string, depth int) error {
		names, err := admin.List(ctx, p)
		if err != nil {
			return fmt.Errorf("workloads: list %s: %w", p, err)
		}
		if len(names) == 0 || depth > 16 {
			if p != ns && !slices.Contains(keep, p) {
				if len(out) < maxLeftovers {
					out = append(out, p)
				} else {
					more++
				}
			}
			return nil
		}
		slices.Sort(names)
		for _, n := range names {
			if err := walk(path.Join(p, n), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(ns, 0); err != nil {
		return out, err
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("... and %d more below %s", more, ns))
	}
	return out, nil
}
