package recipetest

import (
	"testing"

	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// TestMain stops the shared servers the tests started and removes their
// folders: without it they died with the test binary but their folders
// stayed in the temporary folder.
func TestMain(m *testing.M) { testcluster.Main(m) }
