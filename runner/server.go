package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	zkbackend "github.com/zkbench/zkbench/backends/zookeeper"
	dockercluster "github.com/zkbench/zkbench/cluster/docker"
	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
	"github.com/zkbench/zkbench/faults"
	"github.com/zkbench/zkbench/workloads"
)

// Bounds on starting and stopping servers, and on removing what killed
// runs left in Docker.
const (
	embeddedStartTimeout = 30 * time.Second
	localStartTimeout    = 90 * time.Second
	dockerStartTimeout   = 2 * time.Minute
	serverStopTimeout    = 30 * time.Second
	leftoversTimeout     = 30 * time.Second
)

// removeDockerLeftovers removes the Docker clusters that killed zkbench
// processes left (WithDockerLeftovers), a progress line each. Without an
// engine it says nothing; nothing it meets fails the run.
func (r *Runner) removeDockerLeftovers(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, leftoversTimeout)
	defer cancel()
	var out strings.Builder
	_, err := dockercluster.RemoveLeftovers(ctx, &out, false)
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l != "" {
			r.progress("  %s", l)
		}
	}
	if err != nil && !errors.Is(err, dockercluster.ErrNoEngine) && out.Len() == 0 {
		// (a failed removal has had its line)
		r.progress("  docker leftovers: %v (the run goes on)", err)
	}
}

// server is the cluster a run uses and how to let it go.
type server struct {
	backend backends.Backend
	mode    ClusterMode
	// endpoints are the servers' client addresses; cluster is their fault
	// handle where zkbench runs them as processes (nil otherwise).
	endpoints []string
	cluster   faults.Cluster
	// pids names the local process of each endpoint, where zkbench
	// started the servers; livePIDs gives them now, as faults restart
	// servers under new processes (nil where zkbench runs no process).
	pids     map[string]int
	livePIDs func() map[string]int
	// stop closes the backend and stops servers zkbench started.
	stop func(ctx context.Context) error
}

// startServer starts (embedded, local, docker) or reaches (remote) the run's
// cluster and returns a backend on it. It does not preflight.
func startServer(ctx context.Context, p *plan) (*server, error) {
	srv := p.Servers
	switch {
	case p.mode == Embedded:
		sctx, cancel := context.WithTimeout(ctx, embeddedStartTimeout)
		defer cancel()
		e, err := etcdcluster.StartEmbedded(sctx, etcdcluster.Options{})
		if err != nil {
			return nil, fmt.Errorf("start embedded etcd: %w", err)
		}
		b, err := etcdbackend.New(etcdbackend.Config{
			Endpoints: e.Endpoints(), LeaseTTL: srv.LeaseTTL, Conns: srv.Conns, FlowWindow: srv.FlowWindow, Embedded: true,
		})
		if err != nil {
			_ = e.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		return &server{backend: b, mode: p.mode, endpoints: e.Endpoints(), stop: func(ctx context.Context) error {
			return errors.Join(b.Close(), e.Close(ctx))
		}}, nil

	case p.mode == Local && p.kind == backends.ZooKeeper:
		sctx, cancel := context.WithTimeout(ctx, localStartTimeout)
		defer cancel()
		c, err := zkcluster.Start(sctx, zkcluster.Options{Nodes: srv.Nodes, SessionTimeout: srv.SessionTimeout})
		if err != nil {
			return nil, fmt.Errorf("start local ZooKeeper: %w", err)
		}
		return started(ctx, p.mode, c, func() (backends.Backend, error) {
			return zkbackend.New(p.zkConfig(c.Endpoints()), zkbackend.WithServerPIDFunc(c.PIDs))
		})

	case p.mode == Local && p.kind == backends.Etcd:
		sctx, cancel := context.WithTimeout(ctx, localStartTimeout)
		defer cancel()
		l, err := etcdcluster.StartLocal(sctx, etcdcluster.Options{Nodes: srv.Nodes})
		if err != nil {
			return nil, fmt.Errorf("start local etcd: %w", err)
		}
		return started(ctx, p.mode, l, func() (backends.Backend, error) {
			return etcdbackend.New(etcdbackend.Config{Endpoints: l.Endpoints(), LeaseTTL: srv.LeaseTTL, Conns: srv.Conns,
				FlowWindow: srv.FlowWindow})
		})

	case p.mode == Docker:
		// Containers on a network of their own; clients reach them at
		// their addresses there, as they would a remote cluster.
		sctx, cancel := context.WithTimeout(ctx, dockerStartTimeout)
		defer cancel()
		d, err := dockercluster.Start(sctx, dockercluster.Options{Kind: p.kind, Nodes: srv.Nodes, SessionTimeout: srv.SessionTimeout})
		if err != nil {
			return nil, fmt.Errorf("start %s in Docker: %w", p.kind, err)
		}
		return started(ctx, p.mode, d, func() (backends.Backend, error) {
			if p.kind == backends.ZooKeeper {
				return zkbackend.New(p.zkConfig(d.Endpoints()), zkbackend.WithServerPIDFunc(d.PIDs))
			}
			return etcdbackend.New(etcdConfig(d.Endpoints(), srv))
		})

	case p.kind == backends.ZooKeeper:
		b, err := zkbackend.New(p.zkConfig(srv.Endpoints))
		if err != nil {
			return nil, fmt.Errorf("--endpoints: %w", err)
		}
		return &server{backend: b, mode: p.mode, endpoints: srv.Endpoints, stop: func(context.Context) error { return b.Close() }}, nil

	default:
		b, err := etcdbackend.New(etcdConfig(srv.Endpoints, srv))
		if err != nil {
			return nil, fmt.Errorf("--endpoints: %w", err)
		}
		return &server{backend: b, mode: p.mode, endpoints: srv.Endpoints, stop: func(context.Context) error { return b.Close() }}, nil
	}
}

// processes is a cluster of server processes zkbench started, locally or
// in Docker.
type processes interface {
	faults.Cluster
	Endpoints() []string
	PIDs() map[string]int
	Stop(ctx context.Context) error
}

// started is the server on c, with the backend open returns; if open
// fails, c is stopped.
func started(ctx context.Context, mode ClusterMode, c processes, open func() (backends.Backend, error)) (*server, error) {
	b, err := open()
	if err != nil {
		_ = c.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	return &server{backend: b, mode: mode, pids: c.PIDs(), livePIDs: c.PIDs, endpoints: c.Endpoints(), cluster: c, stop: func(ctx context.Context) error {
		return errors.Join(b.Close(), c.Stop(ctx))
	}}, nil
}

// NewBackend opens a backend of kind on srv's endpoints with its session
// and authentication settings, as a run with Remote servers does (for
// commands that reach a cluster without running a sweep: clean, cluster
// status). It does not preflight.
func NewBackend(kind backends.Kind, srv Servers) (backends.Backend, error) {
	if kind == backends.ZooKeeper {
		return zkbackend.New(zkConfig(srv.Endpoints, srv, 0))
	}
	return etcdbackend.New(etcdConfig(srv.Endpoints, srv))
}

// zkConfig is a ZooKeeper backend on endpoints with srv's settings, whose
// sessions can list maxChildren children (0: the default).
func zkConfig(endpoints []string, srv Servers, maxChildren int) zkbackend.Config {
	cfg := zkbackend.Config{
		Endpoints: endpoints, SessionTimeout: srv.SessionTimeout, Digest: srv.Digest, Conns: srv.Conns,
	}
	cfg.MaxChildren = maxChildren
	return cfg
}

func etcdConfig(endpoints []string, srv Servers) etcdbackend.Config {
	return etcdbackend.Config{
		Endpoints: endpoints, TLS: srv.TLS, Username: srv.Username, Password: srv.Password,
		LeaseTTL: srv.LeaseTTL, Conns: srv.Conns, FlowWindow: srv.FlowWindow,
	}
}

// zkConfig is the run's ZooKeeper backend on endpoints. Every client of a
// case may queue under one node, and every waiter lists that node: each
// session's receive buffer is sized for a listing of the largest case's
// clients (go-zookeeper drops the connection on a reply larger than its
// buffer), with names as long as the run's variants make them.
func (p *plan) zkConfig(endpoints []string) zkbackend.Config {
	n, _ := p.listedChildren()
	cfg := zkConfig(endpoints, p.Servers, n)
	cfg.MaxChildName = p.listedName()
	p.sizeForReplies(&cfg)
	return cfg
}

// sizeForReplies grows cfg's buffers to hold the largest node data the
// workload reads and writes (workloads.ReplySizer: the config workload's
// --size), with room for the reply's header and stat.
func (p *plan) sizeForReplies(cfg *zkbackend.Config) {
	rs, ok := p.workload.(workloads.ReplySizer)
	if !ok {
		return
	}
	n := rs.LargestReply(p.cfg)
	if n <= 0 {
		return
	}
	cfg.RecvBufferSize = max(cfg.RecvBuffer(), n+replyOverhead)
	cfg.SendBufferSize = max(zkbackend.DefaultSendBufferSize, n+replyOverhead)
}

// replyOverhead is the room sizeForReplies leaves beside a node's data for
// the reply's header and stat.
const replyOverhead = 4 << 10

// maxBacklogBuffer bounds the receive buffer a workload's backlog sizes
// (workloads.ListingSizer): 1 MiB, ZooKeeper's default jute.maxbuffer,
// past which its own Java clients refuse a reply, so a queue whose listing
// is larger is beyond what any client of the recipe reads with defaults.
const maxBacklogBuffer = 1 << 20

// listedChildren is the most children one ZooKeeper listing of the run's
// cases may hold, which sizes each session's receive buffer: the largest
// case's clients (every client may queue under one node), or the
// workload's own bound where larger (workloads.ListingSizer: the queue's
// backlog, --rate x --duration items), that one cut to what fits in
// maxBacklogBuffer. backlog is the workload's bound (0: none or not
// larger), before the cut.
func (p *plan) listedChildren() (n, backlog int) {
	n = slices.Max(p.cfg.Clients)
	ls, ok := p.workload.(workloads.ListingSizer)
	if !ok {
		return n, 0
	}
	b := ls.LargestListing(p.cfg)
	if b <= n {
		return n, 0
	}
	return max(n, min(b, zkbackend.ChildrenIn(maxBacklogBuffer, p.listedName()))), b
}

// listedName is the longest child name the run's variants list on
// ZooKeeper (workloads.ListedNamer), 0 for the default.
func (p *plan) listedName() int {
	if ln, ok := p.workload.(workloads.ListedNamer); ok {
		return ln.ListedName(p.Variants)
	}
	return 0
}

// preflight checks the cluster under a bounded context and describes it.
// For an embedded server it records this process as the server's.
func preflight(ctx context.Context, srv *server, timeout time.Duration) (backends.ClusterInfo, error) {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info, err := srv.backend.Preflight(pctx)
	if err != nil {
		return info, fmt.Errorf("preflight: %w", err)
	}
	for i := range info.Members {
		m := &info.Members[i]
		switch {
		case srv.mode == Embedded:
			m.PID = os.Getpid()
		case m.PID == 0:
			m.PID = srv.pids[m.Endpoint]
		}
	}
	return info, nil
}
