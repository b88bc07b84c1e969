package recipetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/variants"
)

// TestRWLocks runs the lock suite in write mode and the shared lock suite
// for every shared lock variant on every backend it supports; native
// (etcd's RWMutex, no tokens) runs the lock subtests that need none.
func TestRWLocks(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.RWLocks().All() {
			t.Run(v.Name, func(t *testing.T) {
				if !v.Supports(b.Kind()) {
					unsupported(t, b, v)
					return
				}
				var only []string
				if v.Name == variants.Native {
					only = LockSubtestsWithoutTokens
				}
				t.Run("lock", func(t *testing.T) { RunRWLockAsLockSuite(t, b, v, only...) })
				RunRWLockSuite(t, b, v)
			})
		}
	})
}

// TestRevocables runs the lock suite in write mode and the revocable suite
// for both revocable variants on every backend.
func TestRevocables(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.Revocables(revokeGrace).All() {
			t.Run(v.Name, func(t *testing.T) {
				t.Run("lock", func(t *testing.T) { RunLockSuite(t, b, RevocableLock(v), LockSubtestsOfRevocable...) })
				RunRevocableSuite(t, b, v)
			})
		}
	})
}

// revokeGrace is the forcing revoker's grace in the suite.
const revokeGrace = 300 * time.Millisecond

// TestSharedLocksOnClusters runs the subtests where replication can change
// the outcome on both 3-node clusters.
func TestSharedLocksOnClusters(t *testing.T) {
	testcluster.EachCluster(t, func(t *testing.T, b backends.Backend) {
		for _, v := range variants.RWLocks().All() {
			if !v.Supports(b.Kind()) {
				continue
			}
			t.Run(v.Name, func(t *testing.T) {
				RunRWLockSuite(t, b, v, "WriterExcludes", "WriterReleaseAdmitsReaders", "ReaderSessionLost")
			})
		}
		for _, v := range variants.Revocables(revokeGrace).All() {
			t.Run("revocable-"+v.Name, func(t *testing.T) {
				RunLockSuite(t, b, RevocableLock(v), "Exclusion", "HolderSessionLost")
				RunRevocableSuite(t, b, v, "RevokeNotifiesHolder")
			})
		}
	})
}

// unsupported checks that v, which does not run on b's kind, says so at
// construction with recipes.ErrUnsupported (native on ZooKeeper: go-zookeeper
// has no shared lock).
func unsupported(t *testing.T, b backends.Backend, v variants.Variant[variants.RWLockMaker]) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s, err := b.NewSession(ctx)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer s.Close()
	if _, err := v.New(s, testcluster.TestNamespace(t, b)+"/rwlock"); !errors.Is(err, recipes.ErrUnsupported) {
		t.Fatalf("%s on %s: New returned %v, want recipes.ErrUnsupported", v.Name, b.Kind(), err)
	}
}
