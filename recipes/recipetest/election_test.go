package recipetest

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/recipes/variants"
)

// TestElections runs the election suite for every variant on every backend.
func TestElections(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.Elections().All() {
			t.Run(v.Name, func(t *testing.T) { RunElectionSuite(t, b, v) })
		}
	})
}
