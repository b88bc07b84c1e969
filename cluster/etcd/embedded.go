package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/zkbench/zkbench/cluster/internal/members"
)

// Options configure StartEmbedded and StartLocal. The zero value is one
// member in a temporary folder, fsync on.
type Options struct {
	// Dir holds the members' data (and, for StartLocal, their logs and
	// state). "" makes a temporary folder that Close/Stop removes; a given
	// folder is kept.
	Dir string
	// Nodes is the member count: 1 (the default) or 3, 5...
	Nodes int
	// Exe is the binary StartLocal runs for each member (default: this
	// process's own executable), with Args before the member flags (default
	// {MemberCommand}).
	Exe  string
	Args []string
	// UnsafeNoFsync skips fsync on every member: faster, but acknowledged
	// writes may be lost on power loss. Results should say it was on.
	UnsafeNoFsync bool
	// Detach lets StartLocal's members outlive this process (no parent-death
	// signal, own session), for a `cluster up` that saves State and exits.
	Detach bool
}

// Embedded is etcd running inside this process: one member, or several for
// tests. Its members share this process's Prometheus registry, so /metrics
// on any of them reports all of them, and the server's CPU and memory are
// the process's own.
type Embedded struct {
	dir     string
	ownsDir bool
	cfgs    []MemberConfig
	servers []*embed.Etcd

	closeOnce sync.Once
	closeErr  error
}

// StartEmbedded starts opts.Nodes embedded members (default 1) on free
// loopback ports and waits, under ctx, until they serve. Logs are discarded.
// Exe, Args and Detach are StartLocal's and are ignored here.
func StartEmbedded(ctx context.Context, opts Options) (*Embedded, error) {
	n, err := opts.members("at least 1")
	if err != nil {
		return nil, err
	}
	return startEmbedded(ctx, opts, n)
}

// members is the member count, Nodes or its default 1; a negative count is
// an error that says what is wanted.
func (o Options) members(want string) (int, error) {
	if o.Nodes == 0 {
		return 1, nil
	}
	if o.Nodes < 1 {
		return 0, fmt.Errorf("cluster/etcd: %d members: want %s", o.Nodes, want)
	}
	return o.Nodes, nil
}

// StartEmbeddedCluster starts n embedded members in one cluster (for tests)
// in a temporary folder and waits until they have a leader and serve.
func StartEmbeddedCluster(ctx context.Context, n int) (*Embedded, error) {
	if n < 1 {
		return nil, fmt.Errorf("cluster/etcd: %d members: want at least 1", n)
	}
	return StartEmbedded(ctx, Options{Nodes: n})
}

func startEmbedded(ctx context.Context, opts Options, n int) (*Embedded, error) {
	dir, owns, err := makeDir(opts.Dir, "zkbench-etcd-")
	if err != nil {
		return nil, err
	}
	var e *Embedded
	for attempt := 0; attempt < 3; attempt++ {
		e, err = tryEmbedded(ctx, dir, owns, n, opts.UnsafeNoFsync)
		if err == nil || !strings.Contains(err.Error(), "address already in use") || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		if owns {
			os.RemoveAll(dir)
		}
		return nil, err
	}
	return e, nil
}

func tryEmbedded(ctx context.Context, dir string, owns bool, n int, noFsync bool) (*Embedded, error) {
	cfgs, err := layout(dir, n, newToken(), noFsync)
	if err != nil {
		return nil, err
	}
	e := &Embedded{dir: dir, ownsDir: owns, cfgs: cfgs}
	fail := func(err error) (*Embedded, error) {
		e.closeServers(context.Background())
		for _, c := range cfgs {
			os.RemoveAll(c.DataDir)
		}
		return nil, err
	}
	for _, c := range cfgs {
		ec, err := c.embedConfig(zap.NewNop())
		if err != nil {
			return fail(err)
		}
		s, err := embed.StartEtcd(ec)
		if err != nil {
			return fail(fmt.Errorf("cluster/etcd: start embedded member %s: %w", c.Name, err))
		}
		e.servers = append(e.servers, s)
	}
	for i, s := range e.servers {
		select {
		case <-s.Server.ReadyNotify():
		case err := <-s.Err():
			return fail(fmt.Errorf("cluster/etcd: embedded member %s: %w", cfgs[i].Name, err))
		case <-ctx.Done():
			return fail(fmt.Errorf("cluster/etcd: embedded member %s not ready: %w", cfgs[i].Name, ctx.Err()))
		}
	}
	return e, nil
}

// Endpoints returns the members' client URLs ("http://127.0.0.1:port").
func (e *Embedded) Endpoints() []string {
	eps := make([]string, len(e.cfgs))
	for i, c := range e.cfgs {
		eps[i] = c.ClientURL
	}
	return eps
}

// Dir is the folder holding the members' data.
func (e *Embedded) Dir() string { return e.dir }

// Close stops every member (waiting at most until ctx ends) and removes the
// folder if StartEmbedded made it. Safe to call more than once.
func (e *Embedded) Close(ctx context.Context) error {
	e.closeOnce.Do(func() {
		e.closeErr = e.closeServers(ctx)
		if e.closeErr == nil && e.ownsDir {
			e.closeErr = os.RemoveAll(e.dir)
		}
	})
	return e.closeErr
}

// closeServers closes the members concurrently. A leader closing while its
// followers still run hands its leadership to one of them and waits for that
// (seconds, when that follower is stopping too), which a cluster going down
// whole does not need: a leader is hard-stopped first (committed data is on
// disk either way). embed's Close takes no context: when ctx ends first, the
// closes go on in the background and the folder is left in place.
func (e *Embedded) closeServers(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, s := range e.servers {
			wg.Go(func() {
				if s.Server.Leader() == s.Server.MemberID() && len(e.servers) > 1 {
					s.Server.HardStop()
				}
				s.Close()
			})
		}
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cluster/etcd: close embedded etcd: %w", ctx.Err())
	}
}

// makeDir returns dir, creating it, or a new temporary folder owned by the
// caller.
func makeDir(dir, pattern string) (string, bool, error) {
	d, owned, err := members.Folder(dir, pattern, 0o700)
	if err != nil {
		return "", false, fmt.Errorf("cluster/etcd: %w", err)
	}
	return d, owned, nil
}

func newToken() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "zkbench-" + hex.EncodeToString(b)
}

var errNoMember = errors.New("cluster/etcd: no such member")
