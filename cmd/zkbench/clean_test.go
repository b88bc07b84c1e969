package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// TestClean leaves nodes under two run namespaces and beside /zkbench, then
// checks that clean --dry-run changes nothing, clean --run removes one
// namespace, clean removes the rest, and nothing outside /zkbench goes.
func TestClean(t *testing.T) {
	testcluster.EachBackend(t, func(t *testing.T, b backends.Backend) {
		eps := testcluster.EtcdEndpoints(t)
		if b.Kind() == backends.ZooKeeper {
			eps = testcluster.ZooKeeperEndpoints(t)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sess, err := b.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		var raw [4]byte
		_, _ = rand.Read(raw[:])
		tag := hex.EncodeToString(raw[:])
		runX, runY := "clean-x-"+tag, "clean-y-"+tag
		inside := []string{
			backends.Namespace(runX) + "/lock/a/b",
			backends.Namespace(runX) + "/top",
			backends.Namespace(runY) + "/leaf",
		}
		// "/zkbench-<tag>" shares /zkbench's string prefix.
		outside := []string{"/zkbench-" + tag + "/keep", "/outside-" + tag + "/keep"}
		for _, p := range append(slices.Clone(inside), outside...) {
			if err := sess.EnsurePath(ctx, path.Dir(p)); err != nil {
				t.Fatal(err)
			}
			if _, err := sess.Create(ctx, p, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, p := range outside {
				_ = sess.Delete(ctx, p)
				_ = sess.Delete(ctx, path.Dir(p)) // ZooKeeper's parent
			}
		})
		exists := func(p string) bool {
			t.Helper()
			_, _, err := sess.Get(ctx, p)
			if err != nil && !errors.Is(err, backends.ErrNoNode) {
				t.Fatal(err)
			}
			return err == nil
		}
		clean := func(args ...string) string {
			t.Helper()
			all := append([]string{"clean", "--backend", string(b.Kind()), "--endpoints", strings.Join(eps, ",")}, args...)
			out, errOut, err := zkbench(t, all...)
			if err != nil {
				t.Fatalf("%v: %v\n%s%s", all, err, out, errOut)
			}
			return out
		}

		for _, args := range [][]string{{"--dry-run"}, {"--dry-run", "--run", runX}} {
			out := clean(args...)
			if !strings.Contains(out, backends.Namespace(runX)) || !strings.Contains(out, "Nothing was removed") {
				t.Errorf("%v does not list %s:\n%s", args, backends.Namespace(runX), out)
			}
			if wantY := len(args) == 1; strings.Contains(out, runY) != wantY {
				t.Errorf("%v: lists %s: %v, want %v:\n%s", args, runY, !wantY, wantY, out)
			}
			for _, p := range append(slices.Clone(inside), outside...) {
				if !exists(p) {
					t.Fatalf("%v removed %s", args, p)
				}
			}
		}

		out := clean("--run", runX)
		if !strings.Contains(out, backends.Namespace(runX)+" removed") || strings.Contains(out, runY) {
			t.Errorf("clean --run %s:\n%s", runX, out)
		}
		if exists(inside[0]) || exists(inside[1]) || exists(backends.Namespace(runX)) || !exists(inside[2]) {
			t.Fatalf("clean --run %s removed the wrong nodes", runX)
		}
		if out := clean("--run", runX); !strings.Contains(out, "Nothing to clean") {
			t.Errorf("second clean --run:\n%s", out)
		}

		out = clean()
		if !strings.Contains(out, backends.Namespace(runY)+" removed") {
			t.Errorf("clean does not list %s:\n%s", backends.Namespace(runY), out)
		}
		if exists(inside[2]) || exists(backends.Namespace(runY)) {
			t.Errorf("clean left %s", backends.Namespace(runY))
		}
		names, err := b.(backends.Admin).List(ctx, backends.Root)
		if err != nil || len(names) != 0 {
			t.Errorf("after clean %s holds %v (%v)", backends.Root, names, err)
		}
		for _, p := range outside {
			if !exists(p) {
				t.Errorf("clean removed %s, outside %s", p, backends.Root)
			}
		}
		if out := clean(); !strings.Contains(out, "Nothing to clean") {
			t.Errorf("clean of a clean cluster:\n%s", out)
		}
	})
}

// An unreachable cluster, or one that accepts connections and says
// nothing, fails preflight within --preflight-timeout, naming the endpoint.
func TestCleanUnreachable(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		var held []net.Conn // accepted and never answered
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	for _, kind := range []string{"zookeeper", "etcd"} {
		for _, ep := range []string{freePort(t), silent.Addr().String()} {
			start := time.Now()
			_, _, err := zkbench(t, "clean", "--backend", kind, "--endpoints", ep, "--preflight-timeout", "1s")
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), "preflight") || !strings.Contains(err.Error(), ep) {
				t.Errorf("%s %s: error %v, want a preflight error naming the endpoint", kind, ep, err)
			}
			// Within its 1 s --preflight-timeout, not the 5 s default:
			// halfway between the two leaves 2 s for a loaded machine and
			// still fails a run that ignored the flag.
			if took > 3*time.Second {
				t.Errorf("%s %s: took %v to give up: want the 1 s --preflight-timeout, not the 5 s default", kind, ep, took)
			}
			t.Logf("%s %s: gave up after %v: %v", kind, ep, took.Round(time.Millisecond), err)
		}
	}
}

func TestCleanWithoutEndpoints(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // no cluster of `cluster up`
	out, _, err := zkbench(t, "clean")
	if err != nil || !strings.Contains(out, "embedded etcd") || !strings.Contains(out, "--endpoints") {
		t.Errorf("clean with no endpoints: %v\n%s", err, out)
	}
	out, _, err = zkbench(t, "clean", "--backend", "zookeeper")
	if err != nil || !strings.Contains(out, "Nothing to clean") {
		t.Errorf("clean --backend zookeeper with no endpoints: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"clean", "--backend", "zk", "--endpoints", "127.0.0.1:1"}, `--backend "zk"`},
		{[]string{"clean", "--endpoints", "127.0.0.1:1", "--run", "../etc"}, "--run"},
		{[]string{"clean", "--endpoints", "127.0.0.1:1", "--run", "a/b"}, "--run"},
		// The other backend's flags: clean would connect without them.
		{[]string{"clean", "--endpoints", "127.0.0.1:1", "--digest", "u:p"}, "--digest: only zookeeper reads it"},
		{[]string{"clean", "--backend", "zookeeper", "--endpoints", "127.0.0.1:1", "--cacert", "ca.pem"}, "--cacert: only etcd reads it"},
	} {
		if _, _, err := zkbench(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

// TestCleanDockerUnanswered: where DOCKER_HOST names an engine that does not
// answer, clean says it did not look there and goes on with what it does
// without one.
func TestCleanDockerUnanswered(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // no cluster of `cluster up`
	t.Setenv("DOCKER_HOST", "tcp://"+freePort(t))
	out, _, err := zkbench(t, "clean", "--backend", "zookeeper")
	if err != nil || !strings.Contains(out, "Docker: not cleaned") || !strings.Contains(out, "Nothing to clean: with no --endpoints") {
		t.Errorf("clean with an engine that does not answer: %v\n%s", err, out)
	}
}
