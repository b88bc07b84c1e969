package workloads

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
	"github.com/zkbench/zkbench/results"
)

// sessionsSeen is a Backend decorator that keeps every session it opens, so
// that a test can end one of them behind the workload's back.
type sessionsSeen struct {
	backends.Backend
	mu   sync.Mutex
	byID map[int64]backends.Session
}

func (b *sessionsSeen) NewSession(ctx context.Context) (backends.Session, error) {
	s, err := b.Backend.NewSession(ctx)
	if err == nil {
		b.mu.Lock()
		b.byID[s.ID()] = s
		b.mu.Unlock()
	}
	return s, err
}

func (b *sessionsSeen) session(id int64) backends.Session {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byID[id]
}

// List and DeleteTree pass Admin through, for the leftover check.
func (b *sessionsSeen) List(ctx context.Context, path string) ([]string, error) {
	return b.Backend.(backends.Admin).List(ctx, path)
}

func (b *sessionsSeen) DeleteTree(ctx context.Context, path string) error {
	return b.Backend.(backends.Admin).DeleteTree(ctx, path)
}

func (b *sessionsSeen) Scrape(ctx context.Context) (backends.Metrics, error) {
	return b.Backend.(backends.Scraper).Scrape(ctx)
}

// TestLockFence expires the lock holder's lease on the server in the middle
// of its hold. The next client is granted at once and writes; the old holder
// has not learnt of the loss when its hold ends and makes its last write with
// its old token. Unfenced, that stale write is accepted and is a violation;
// fenced, it is rejected and counted as prevented. Both times the in-process
// checker sees the overlap: the old holder had not left.
//
// The sessions' leases are a minute long, so that no keep-alive is due
// within the case: with the default 5 s the old holder could learn of the
// loss at its next keep-alive (every 1.7 s), end its hold and write before
// the next client's grant, and no write would be stale.
func TestLockFence(t *testing.T) {
	eps := testcluster.EtcdEndpoints(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for _, mode := range []string{FenceOff, FenceOn} {
		t.Run(mode, func(t *testing.T) {
			be, err := etcdbackend.New(etcdbackend.Config{Endpoints: eps, LeaseTTL: time.Minute, Embedded: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { be.Close() })
			b := &sessionsSeen{Backend: be, byID: map[int64]backends.Session{}}
			ns := testcluster.TestNamespace(t, b.Backend)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			expired := make(chan int64, 1)
			go func() {
				// The holder is the lock key with the lowest create revision
				// (the queue's keys: not its tail beside them); expire its
				// lease a second into its 3s hold.
				for ctx.Err() == nil {
					resp, err := cli.Get(ctx, ns+"/lock/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
					if err == nil {
						for _, kv := range resp.Kvs {
							if kv.Lease == 0 {
								continue
							}
							time.Sleep(time.Second)
							s := b.session(kv.Lease)
							if s == nil {
								t.Errorf("no session has lease %x", kv.Lease)
								return
							}
							if err := endSession(ctx, s, b, KillExpire); err != nil {
								t.Errorf("expire the holder: %v", err)
							}
							expired <- kv.Lease
							return
						}
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()

			res, err := NewLock().Run(ctx, Case{
				Backend: b, Variant: "fair", Clients: 2, Repeat: 1, Namespace: ns,
				Config: results.Config{Duration: 6 * time.Second, Hold: 3 * time.Second,
					Params: map[string]string{ParamFence: mode}},
			})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-expired:
			default:
				t.Fatal("the holder's lease was never expired")
			}
			run := &results.Run{Format: results.FormatVersion, ID: "t", Status: results.StatusComplete, Results: []results.Result{res}}
			if err := run.Validate(); err != nil {
				t.Fatal(err)
			}
			s, f := res.Safety, res.Safety.Fence
			t.Logf("%s: safety %+v, fence %+v, notes %q", mode, s, f, res.Notes)
			if f == nil || f.Fenced != (mode == FenceOn) || f.Writes < 4 {
				t.Fatalf("fence = %+v, want %s with a write after and before each of at least 2 grants", f, mode)
			}
			if f.Stale != 1 {
				t.Fatalf("%d stale writes, want the old holder's one", f.Stale)
			}
			notes := strings.Join(res.Notes, "\n")
			if !strings.Contains(notes, "MUTUAL EXCLUSION VIOLATED 1 times") {
				t.Errorf("the overlap was not noted: %q", notes)
			}
			switch mode {
			case FenceOff:
				if f.Rejected != 0 || s.Prevented != 0 || s.Violations != 2 || !strings.Contains(notes, "STALE WRITES ACCEPTED 1 times") {
					t.Errorf("unfenced: want the overlap and the accepted stale write as 2 violations, none prevented")
				}
			case FenceOn:
				if f.Rejected != 1 || s.Prevented != 1 || s.Violations != 1 {
					t.Errorf("fenced: want the stale write rejected (1 prevented) and only the overlap as a violation")
				}
			}
			if !strings.Contains(strings.Join(s.Details, "\n"), "register: client") {
				t.Errorf("the stale write is not described: %q", s.Details)
			}
		})
	}
}
