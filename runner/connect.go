package runner

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// Cluster is a backend reached or started as a run's would be, for a
// command that is not a sweep (zkbench exec).
type Cluster struct {
	Backend backends.Backend
	Info    backends.ClusterInfo
	stop    func(ctx context.Context) error
}

// Stop closes the backend and stops the servers Connect started.
func (c *Cluster) Stop(ctx context.Context) error { return c.stop(ctx) }

// Connect starts the servers srv describes (embedded etcd, --cluster
// local or docker) or reaches them (--endpoints), as a run does, and
// preflights them. A ZooKeeper session's buffers hold a node as large as
// the server accepts (jute.maxbuffer).
func Connect(ctx context.Context, kind backends.Kind, srv Servers) (*Cluster, error) {
	switch kind {
	case backends.Etcd, backends.ZooKeeper:
	default:
		return nil, fmt.Errorf("--backend %q: want etcd or zookeeper", kind)
	}
	if srv.Nodes == 0 {
		srv.Nodes = 1
	}
	if srv.PreflightTimeout <= 0 {
		srv.PreflightTimeout = 10 * time.Second
	}
	mode, err := clusterMode(kind, srv)
	if err != nil {
		return nil, err
	}
	if err := checkNodes(mode, srv.Nodes); err != nil {
		return nil, err
	}
	largest, _ := workloads.MaxConfigSize(kind)
	p := &plan{Config: Config{Servers: srv}, kind: kind, mode: mode, workload: workloads.NewConfig(),
		cfg: results.Config{Clients: []int{1}, Params: map[string]string{workloads.ParamSize: strconv.Itoa(largest)}}}
	s, err := startServer(ctx, p)
	if err != nil {
		return nil, err
	}
	info, err := preflight(ctx, s, srv.PreflightTimeout)
	if err != nil {
		_ = s.stop(context.WithoutCancel(ctx))
		return nil, err
	}
	return &Cluster{Backend: s.backend, Info: info, stop: s.stop}, nil
}
