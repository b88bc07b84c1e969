package recipetest

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/recipes/variants"
)

// TestDoubleBarriers runs the double barrier suite for every variant on
// every backend.
func TestDoubleBarriers(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.DoubleBarriers().All() {
			t.Run(v.Name, func(t *testing.T) { RunDoubleBarrierSuite(t, b, v) })
		}
	})
}

// TestSimpleBarrier runs the simple barrier suite on every backend.
func TestSimpleBarrier(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.SimpleBarriers(SuitePoll).All() {
			t.Run(v.Name, func(t *testing.T) { RunBarrierSuite(t, b, v) })
		}
	})
}

// TestTwoPhase runs the two-phase commit suite for every variant on every
// backend.
func TestTwoPhase(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.TwoPhases().All() {
			t.Run(v.Name, func(t *testing.T) { RunTwoPhaseSuite(t, b, v) })
		}
	})
}

// TestGroups runs the group membership suite for every variant on every
// backend: delta must refuse ZooKeeper.
func TestGroups(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.Groups().All() {
			t.Run(v.Name, func(t *testing.T) { RunGroupSuite(t, b, v) })
		}
	})
}
