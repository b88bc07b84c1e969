package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	zkbackend "github.com/zkbench/zkbench/backends/zookeeper"
	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
	"github.com/zkbench/zkbench/faults"
)

// Bounds on starting and stopping servers.
const (
	embeddedStartTimeout = 30 * time.Second
	localStartTimeout    = 90 * time.Second
	serverStopTimeout    = 30 * time.Second
)

// server is the cluster a run uses and how to let it go.
type server struct {
	backend backends.Backend
	mode    string
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

// startServer starts (embedded, local) or reaches (remote) the run's
// cluster and returns a backend on it. It does not preflight.
func startServer(ctx context.Context, p *plan, f *runFlags) (*server, error) {
	switch {
	case p.mode == "embedded":
		sctx, cancel := context.WithTimeout(ctx, embeddedStartTimeout)
		defer cancel()
		e, err := etcdcluster.StartEmbedded(sctx, etcdcluster.Options{})
		if err != nil {
			return nil, fmt.Errorf("start embedded etcd: %w", err)
		}
		b, err := etcdbackend.New(etcdbackend.Config{
			Endpoints: e.Endpoints(), LeaseTTL: f.leaseTTL, Conns: f.conns, Embedded: true,
		})
		if err != nil {
			_ = e.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		return &server{backend: b, mode: p.mode, endpoints: e.Endpoints(), stop: func(ctx context.Context) error {
			return errors.Join(b.Close(), e.Close(ctx))
		}}, nil

	case p.mode == "local" && p.kind == backends.ZooKeeper:
		sctx, cancel := context.WithTimeout(ctx, localStartTimeout)
		defer cancel()
		c, err := zkcluster.Start(sctx, zkcluster.Options{Nodes: f.nodes})
		if err != nil {
			return nil, fmt.Errorf("start local ZooKeeper: %w", err)
		}
		b, err := zkbackend.New(zkConfig(c.Endpoints(), f), zkbackend.WithServerPIDFunc(c.PIDs))
		if err != nil {
			_ = c.Stop(context.WithoutCancel(ctx))
			return nil, err
		}
		return &server{backend: b, mode: p.mode, pids: c.PIDs(), livePIDs: c.PIDs, endpoints: c.Endpoints(), cluster: c, stop: func(ctx context.Context) error {
			return errors.Join(b.Close(), c.Stop(ctx))
		}}, nil

	case p.mode == "local" && p.kind == backends.Etcd:
		sctx, cancel := context.WithTimeout(ctx, localStartTimeout)
		defer cancel()
		l, err := etcdcluster.StartLocal(sctx, etcdcluster.Options{Nodes: f.nodes})
		if err != nil {
			return nil, fmt.Errorf("start local etcd: %w", err)
		}
		b, err := etcdbackend.New(etcdbackend.Config{Endpoints: l.Endpoints(), LeaseTTL: f.leaseTTL, Conns: f.conns})
		if err != nil {
			_ = l.Stop(context.WithoutCancel(ctx))
			return nil, err
		}
		return &server{backend: b, mode: p.mode, pids: l.PIDs(), livePIDs: l.PIDs, endpoints: l.Endpoints(), cluster: l, stop: func(ctx context.Context) error {
			return errors.Join(b.Close(), l.Stop(ctx))
		}}, nil

	case p.kind == backends.ZooKeeper:
		b, err := zkbackend.New(zkConfig(f.endpoints, f))
		if err != nil {
			return nil, fmt.Errorf("--endpoints: %w", err)
		}
		return &server{backend: b, mode: p.mode, endpoints: f.endpoints, stop: func(context.Context) error { return b.Close() }}, nil

	default:
		b, err := etcdbackend.New(etcdConfig(f.endpoints, f))
		if err != nil {
			return nil, fmt.Errorf("--endpoints: %w", err)
		}
		return &server{backend: b, mode: p.mode, endpoints: f.endpoints, stop: func(context.Context) error { return b.Close() }}, nil
	}
}

func zkConfig(endpoints []string, f *runFlags) zkbackend.Config {
	cfg := zkbackend.Config{
		Endpoints: endpoints, SessionTimeout: f.sessionTimeout, Digest: f.digest, Conns: f.conns,
	}
	// Every client of a case may queue under one node, and every waiter lists
	// that node: size each session's receive buffer for a listing of them all
	// (go-zookeeper drops the connection on a reply larger than its buffer).
	if ns, err := parseClients(f.clients); err == nil && len(ns) > 0 {
		cfg.MaxChildren = slices.Max(ns)
	}
	return cfg
}

func etcdConfig(endpoints []string, f *runFlags) etcdbackend.Config {
	return etcdbackend.Config{
		Endpoints: endpoints,
		TLS: etcdbackend.TLSConfig{
			CAFile: f.cacert, CertFile: f.cert, KeyFile: f.key,
			ServerName: f.serverName, InsecureSkipVerify: f.insecureSkipTLSVerify,
		},
		Username: f.user, Password: f.password,
		LeaseTTL: f.leaseTTL, Conns: f.conns,
	}
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
		case srv.mode == "embedded":
			m.PID = os.Getpid()
		case m.PID == 0:
			m.PID = srv.pids[m.Endpoint]
		}
	}
	return info, nil
}
