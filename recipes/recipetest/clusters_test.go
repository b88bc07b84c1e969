package recipetest

import (
	"testing"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/recipes/variants"
)

// On the 3-node clusters the suites run the subtests where replication can
// change the outcome: exclusion, order, the herd as the servers count it
// (summed over three members, with sessions spread over them), and session
// loss. The failure-injection subtests (a decorator that fails deletes or
// loses replies) and the cleanup ones behave the same on any server and run
// on single servers only (TestLocks, TestElections, TestDoubleBarriers), to
// keep the suite's time down.
var (
	lockSubtestsOnClusters     = []string{"Exclusion", "FIFO", "ReleaseWakes", "WaiterSessionLost", "HolderSessionLost"}
	electionSubtestsOnClusters = []string{"Failover", "SelectorSessionLost"}
	barrierSubtestsOnClusters  = []string{"Rounds", "StaggeredWakeups", "SessionLostInside"}
)

// TestLocksOnClusters runs part of the lock suite for every variant on both
// 3-node clusters.
func TestLocksOnClusters(t *testing.T) {
	testcluster.EachCluster(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.Locks().All() {
			t.Run(v.Name, func(t *testing.T) { RunLockSuite(t, b, v, lockSubtestsOnClusters...) })
		}
	})
}

// TestElectionsOnClusters runs part of the election suite for every variant
// on both 3-node clusters.
func TestElectionsOnClusters(t *testing.T) {
	testcluster.EachCluster(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.Elections().All() {
			t.Run(v.Name, func(t *testing.T) { RunElectionSuite(t, b, v, electionSubtestsOnClusters...) })
		}
	})
}

// TestBarriersOnClusters runs part of the double barrier suite for every
// variant, and the whole simple barrier suite, on both 3-node clusters.
func TestBarriersOnClusters(t *testing.T) {
	testcluster.EachCluster(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.DoubleBarriers().All() {
			t.Run(v.Name, func(t *testing.T) { RunDoubleBarrierSuite(t, b, v, barrierSubtestsOnClusters...) })
		}
		for _, v := range variants.SimpleBarriers(SuitePoll).All() {
			t.Run("simple-"+v.Name, func(t *testing.T) { RunBarrierSuite(t, b, v) })
		}
	})
}

// TestTwoPhaseOnClusters runs the two-phase commit suite's decisions and
// session loss for every variant on both 3-node clusters.
func TestTwoPhaseOnClusters(t *testing.T) {
	testcluster.EachCluster(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.TwoPhases().All() {
			t.Run(v.Name, func(t *testing.T) { RunTwoPhaseSuite(t, b, v, "AllCommit", "OneAbort", "SiteSessionLost") })
		}
	})
}

// TestGroupsOnClusters runs the group membership suite for every variant on
// both 3-node clusters.
func TestGroupsOnClusters(t *testing.T) {
	testcluster.EachCluster(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.Groups().All() {
			t.Run(v.Name, func(t *testing.T) { RunGroupSuite(t, b, v) })
		}
	})
}
