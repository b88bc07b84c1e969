package fair_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/etcd"
	"github.com/zkbench/zkbench/backends/instrument"
	"github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/recipes"
	"github.com/zkbench/zkbench/recipes/fair"
	"github.com/zkbench/zkbench/recipes/native"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// benchClients are the client counts of the lock benchmarks, or those of
// $ZKBENCH_BENCH_CLIENTS ("100,1000").
func benchClients(b *testing.B) []int {
	return clientsFrom(b, "ZKBENCH_BENCH_CLIENTS", []int{100, 1000})
}

// clientsFrom returns the client counts in the environment variable env
// ("50,200"), or def if it is not set.
func clientsFrom(b *testing.B, env string, def []int) []int {
	s := os.Getenv(env)
	if s == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: %q is not a client count", env, s, f)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkLockZooKeeper runs, side by side at each client count against
// the same local server, the same herd-free algorithm three ways: "bare",
// a loop written directly on go-zookeeper (create a bare sequential node,
// watch the sequence number minus one, else list and watch the node just
// before mine; release by a multi that sets the node's data and deletes
// it, so the successor's data-change event is its grant), "fair", the fair recipe through the
// Session seam and the counting decorator, and "native", go-zookeeper's
// zk.Lock. Each client has its own session and acquires and releases in a
// loop, holding for no time, until b.N grants in all; acq/s is the figure
// to compare, as ratios within one run (fair/bare: the seam's overhead;
// fair/native). Run with a fixed count: -benchtime 5000x.
func BenchmarkLockZooKeeper(b *testing.B) {
	endpoints := testcluster.ZooKeeperEndpoints(b)
	for _, n := range benchClients(b) {
		for _, impl := range []string{"bare", "fair", "native"} {
			b.Run(fmt.Sprintf("clients=%d/%s", n, impl), func(b *testing.B) {
				be, err := zookeeper.New(zookeeper.Config{Endpoints: endpoints, MaxChildren: n, MaxChildName: 51})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { be.Close() })
				ns := testcluster.TestNamespace(b, be)
				path := ns + "/lock"
				runLockBench(b, be, n, path, func(s backends.Session) lockLoop {
					switch impl {
					case "bare":
						return newBareLock(instrument.Unwrap(s).(*zookeeper.Session).Conn(), path)
					case "fair":
						return recipeLoop{fair.New(s, path)}
					}
					l, err := native.NewLock(s, path)
					if err != nil {
						b.Fatal(err)
					}
					return recipeLoop{l}
				})
			})
		}
	}
}

// BenchmarkLockEtcd runs the fair recipe and etcd's concurrency.Mutex
// (native) side by side against the embedded etcd, as
// BenchmarkLockZooKeeper does.
func BenchmarkLockEtcd(b *testing.B) {
	endpoints := testcluster.EtcdEndpoints(b)
	for _, n := range benchClients(b) {
		for _, impl := range []string{"fair", "native"} {
			b.Run(fmt.Sprintf("clients=%d/%s", n, impl), func(b *testing.B) {
				be, path := etcdBench(b, endpoints, "lock")
				runLockBench(b, be, n, path, func(s backends.Session) lockLoop {
					if impl == "fair" {
						return recipeLoop{fair.New(s, path)}
					}
					l, err := native.NewLock(s, path)
					if err != nil {
						b.Fatal(err)
					}
					return recipeLoop{l}
				})
			})
		}
	}
}

// BenchmarkRWLockEtcd runs the fair shared lock and etcd's
// experimental recipes.RWMutex (native) side by side against the embedded
// etcd, as BenchmarkLockEtcd does, at 50 and 200 clients (or
// $ZKBENCH_BENCH_RWCLIENTS): each acquisition is a read with probability
// 0.9 (each client's own seeded sequence, the same for both), held for no
// time. acq/s is the figure to compare, fair/native within one run.
func BenchmarkRWLockEtcd(b *testing.B) {
	endpoints := testcluster.EtcdEndpoints(b)
	for _, n := range clientsFrom(b, "ZKBENCH_BENCH_RWCLIENTS", []int{50, 200}) {
		for _, impl := range []string{"fair", "native"} {
			b.Run(fmt.Sprintf("clients=%d/%s", n, impl), func(b *testing.B) {
				be, path := etcdBench(b, endpoints, "rwlock")
				var client atomic.Int64
				runLockBench(b, be, n, path, func(s backends.Session) lockLoop {
					var l recipes.RWLock = fair.NewRWLock(s, path)
					if impl == "native" {
						var err error
						if l, err = native.NewRWLock(s, path); err != nil {
							b.Fatal(err)
						}
					}
					return &rwLoop{l: l, rnd: rand.New(rand.NewPCG(uint64(client.Add(1)), 0))}
				})
			})
		}
	}
}

// rwLoop is one client's shared lock loop: a read with probability 0.9.
type rwLoop struct {
	l   recipes.RWLock
	rnd *rand.Rand
}

func (r *rwLoop) Acquire(ctx context.Context) error {
	mode := recipes.Write
	if r.rnd.Float64() < 0.9 {
		mode = recipes.Read
	}
	_, err := r.l.Acquire(ctx, mode)
	return err
}
func (r *rwLoop) Release(ctx context.Context) error { return r.l.Release(ctx) }

// etcdBench is a benchmark's etcd backend on endpoints, closed when it
// ends, and the path name in a fresh namespace.
func etcdBench(b *testing.B, endpoints []string, name string) (backends.Backend, string) {
	be, err := etcd.New(etcd.Config{Endpoints: endpoints})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	return be, testcluster.TestNamespace(b, be) + "/" + name
}

// lockLoop is one client's acquire and release.
type lockLoop interface {
	Acquire(ctx context.Context) error
	Release(ctx context.Context) error
}

type recipeLoop struct{ l recipes.Lock }

func (r recipeLoop) Acquire(ctx context.Context) error {
	_, err := r.l.Acquire(ctx)
	return err
}
func (r recipeLoop) Release(ctx context.Context) error { return r.l.Release(ctx) }

// runLockBench opens n instrumented sessions on be (not timed), then runs
// every client's loop until b.N grants in all and reports acq/s.
func runLockBench(b *testing.B, be backends.Backend, n int, path string, newLoop func(backends.Session) lockLoop) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	reg := instrument.NewRegistry()
	loops := make([]lockLoop, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	errs := make(chan error, n)
	for i := range loops {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s, err := be.NewSession(ctx)
			if err != nil {
				errs <- err
				return
			}
			b.Cleanup(func() { s.Close() })
			loops[i] = newLoop(instrument.Wrap(s, reg.NewClient()))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("NewSession: %v", err)
	}
	if err := ensure(ctx, be, path); err != nil {
		b.Fatal(err)
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	failed := make(chan error, n)
	b.ResetTimer()
	start := time.Now()
	for _, l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := l.Acquire(ctx); err != nil {
					failed <- err
					return
				}
				if err := l.Release(ctx); err != nil {
					failed <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(failed)
	for err := range failed {
		b.Fatalf("lock loop: %v", err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "acq/s")
}

// ensure makes the lock's path before the clients start.
func ensure(ctx context.Context, be backends.Backend, path string) error {
	s, err := be.NewSession(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.EnsurePath(ctx, path)
}

// bareLock is the fair recipe's algorithm written directly on go-zookeeper,
// with nothing of the seam: no context, no decorator, no leftovers, no
// recovery from an unknown outcome. It is the floor the recipe's overhead
// is measured against.
type bareLock struct {
	conn *zk.Conn
	path string
	me   string
}

func newBareLock(conn *zk.Conn, path string) *bareLock { return &bareLock{conn: conn, path: path} }

func (l *bareLock) Acquire(ctx context.Context) error {
	me, err := l.conn.Create(l.path+"/", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		return err
	}
	l.me = me
	seq, _ := strconv.ParseInt(me[len(me)-10:], 10, 64)
	pred := ""
	if seq > 0 {
		pred = fmt.Sprintf("%s/%010d", l.path, seq-1)
	}
	for {
		if pred == "" {
			kids, _, err := l.conn.Children(l.path)
			if err != nil {
				return err
			}
			best := int64(-1)
			for _, k := range kids {
				if s, err := strconv.ParseInt(k, 10, 64); err == nil && s < seq && s > best {
					best = s
				}
			}
			if best < 0 {
				return nil
			}
			pred = fmt.Sprintf("%s/%010d", l.path, best)
		}
		ok, _, ch, err := l.conn.ExistsW(pred)
		if err != nil {
			return err
		}
		if ok {
			select {
			case ev := <-ch:
				if ev.Type == zk.EventNodeDataChanged {
					return nil // the holder left by a release
				}
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		pred = ""
	}
}

// Release sets the node's data and deletes it in one multi, so that the
// successor's watch tells a release from any other departure.
func (l *bareLock) Release(context.Context) error {
	_, err := l.conn.Multi(&zk.SetDataRequest{Path: l.me, Data: []byte("dequeued"), Version: -1},
		&zk.DeleteRequest{Path: l.me, Version: -1})
	return err
}
