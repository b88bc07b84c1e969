package recipetest

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testcluster"
	"github.com/zkbench/zkbench/recipes/electionvariants"
)

// TestElections runs the election suite for every variant on every backend.
func TestElections(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, name := range electionvariants.Names() {
			v, err := electionvariants.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(name, func(t *testing.T) { RunElectionSuite(t, b, v) })
		}
	})
}
