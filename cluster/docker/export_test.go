package docker

import (
	"context"
	"io"
	"slices"
)

// RemoveLeftoversOf is RemoveLeftovers over the clusters named only: a
// test removes what it made and nothing else the engine holds (other
// processes on the machine use it too).
func RemoveLeftoversOf(ctx context.Context, w io.Writer, dryRun bool, names ...string) ([]Leftover, error) {
	return removeLeftovers(ctx, w, dryRun, func(cluster string) bool { return slices.Contains(names, cluster) })
}
