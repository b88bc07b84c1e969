package testcluster

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	dockercluster "github.com/zkbench/zkbench/cluster/docker"
)

// RequireDocker checks that a Docker engine answers and holds the image
// that clusters of kind run (`make images` builds it). Where either is
// missing the test fails with the reason when CI=true (CI has an engine and
// builds the images first) and is skipped with the reason otherwise: never
// silently.
func RequireDocker(t testing.TB, kind backends.Kind) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := dockercluster.Available(ctx, kind)
	if err == nil {
		return
	}
	what := "no Docker engine"
	if errors.Is(err, dockercluster.ErrNoImage) {
		what = "no image (run `make images`)"
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("docker tests need an engine and the images, and CI=true: %s: %v", what, err)
	}
	t.Skipf("docker tests skipped: %s: %v (with CI=true this fails)", what, err)
}
