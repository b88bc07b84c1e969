package testcluster_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// TestEachBackendAndTestNamespace checks that EachBackend gives one real
// backend of each kind, and that TestNamespace hands out fresh namespaces
// (found through EachBackend's registration, or given a backend) and removes
// them, with what was made inside, when the test that asked ends.
func TestEachBackendAndTestNamespace(t *testing.T) {
	var kinds []backends.Kind
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		kinds = append(kinds, b.Kind())
		if want := backends.Kind(strings.Split(t.Name(), "/")[1]); b.Kind() != want {
			t.Errorf("subtest %s got a %s backend", t.Name(), b.Kind())
		}
		admin := b.(backends.Admin)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()

		var spaces []string
		for _, explicit := range []bool{false, true} {
			t.Run("inner", func(t *testing.T) {
				var ns string
				if explicit {
					ns = testcluster.TestNamespace(t, b)
				} else {
					ns = testcluster.TestNamespace(t) // found through EachBackend
				}
				if !backends.InNamespace(ns) || !strings.HasPrefix(ns, backends.Root+"/test-") {
					t.Fatalf("TestNamespace = %q", ns)
				}
				spaces = append(spaces, ns)
				s, err := b.NewSession(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if err := s.EnsurePath(ctx, ns+"/dir"); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Create(ctx, ns+"/dir/node", nil); err != nil {
					t.Fatal(err)
				}
				if got, err := admin.List(ctx, ns); err != nil || !slices.Equal(got, []string{"dir"}) {
					t.Fatalf("List(%s) = %v, %v", ns, got, err)
				}
			})
		}
		if len(spaces) != 2 || spaces[0] == spaces[1] {
			t.Fatalf("namespaces %v: want two distinct", spaces)
		}
		left, err := admin.List(ctx, backends.Root)
		if err != nil && !errors.Is(err, backends.ErrNoNode) {
			t.Fatal(err)
		}
		for _, ns := range spaces {
			if slices.Contains(left, strings.TrimPrefix(ns, backends.Root+"/")) {
				t.Errorf("%s not removed when its test ended (left: %v)", ns, left)
			}
		}
	})
	if !slices.Equal(kinds, []backends.Kind{backends.ZooKeeper, backends.Etcd}) {
		t.Errorf("EachBackend ran %v, want [zookeeper etcd]", kinds)
	}
}

// TestEachCluster checks that EachCluster gives one 3-node cluster of each
// kind, and that a session on it works.
func TestEachCluster(t *testing.T) {
	var kinds []backends.Kind
	testcluster.EachCluster(t, func(t *testing.T, b backends.Backend) {
		kinds = append(kinds, b.Kind())
		if want := string(b.Kind()) + "-3"; !strings.HasSuffix(t.Name(), "/"+want) {
			t.Errorf("subtest %s got a %s backend", t.Name(), b.Kind())
		}
		endpoints := testcluster.ZooKeeperEnsembleEndpoints(t)
		if b.Kind() == backends.Etcd {
			endpoints = testcluster.EtcdClusterEndpoints(t)
		}
		if len(endpoints) != 3 {
			t.Errorf("%s cluster endpoints %v, want 3", b.Kind(), endpoints)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		ns := testcluster.TestNamespace(t)
		s, err := b.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.EnsurePath(ctx, ns); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, ns+"/node", nil); err != nil {
			t.Fatal(err)
		}
	})
	if !slices.Equal(kinds, []backends.Kind{backends.ZooKeeper, backends.Etcd}) {
		t.Errorf("EachCluster ran %v, want [zookeeper etcd]", kinds)
	}
}
