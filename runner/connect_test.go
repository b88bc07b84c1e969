package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/workloads"
)

// TestConfigSizesZooKeeperBuffers: a config run's ZooKeeper sessions can
// receive and send the config's data (go-zookeeper drops a connection on a
// larger packet); other workloads keep the listing-sized defaults.
func TestConfigSizesZooKeeperBuffers(t *testing.T) {
	cfg := Config{Backend: backends.ZooKeeper, Workload: "config", Variants: []string{"one-shot"}, Clients: []int{10},
		Duration: time.Second, Repeat: 1, Params: map[string]string{workloads.ParamSize: "524288"},
		Servers: Servers{Mode: Local, Nodes: 1, PreflightTimeout: time.Second}}
	p, err := validate(cfg, options{})
	if err != nil {
		t.Fatal(err)
	}
	zc := p.zkConfig([]string{"127.0.0.1:2181"})
	if zc.RecvBufferSize < 512<<10+1024 || zc.SendBufferSize < 512<<10+1024 {
		t.Errorf("receive %d and send %d bytes for a 512KB config", zc.RecvBufferSize, zc.SendBufferSize)
	}
	cfg.Workload, cfg.Variants, cfg.Params = "lock", []string{"fair"}, nil
	if p, err = validate(cfg, options{}); err != nil {
		t.Fatal(err)
	}
	if zc := p.zkConfig([]string{"127.0.0.1:2181"}); zc.RecvBufferSize != 0 || zc.SendBufferSize != 0 {
		t.Errorf("lock: buffers %d/%d set, want the backend's defaults (0)", zc.RecvBufferSize, zc.SendBufferSize)
	}
}

// TestConnectEmbedded: Connect starts an embedded etcd as a run would,
// preflights it and stops it.
func TestConnectEmbedded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Connect(ctx, backends.Etcd, Servers{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Info.Members) != 1 {
		t.Errorf("members %+v, want the one embedded", c.Info.Members)
	}
	s, err := c.Backend.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Connect(ctx, "consul", Servers{}); err == nil {
		t.Error("Connect(consul) succeeded")
	}
}

// Connect refuses a server count its cluster mode cannot start, as a run
// does, before it starts anything (exec --nodes 3 on the embedded etcd was
// started with one member). The 5 s context would end a start.
func TestConnectRefusesNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tc := range []struct {
		kind backends.Kind
		srv  Servers
		want string
	}{
		{backends.Etcd, Servers{Nodes: 3}, "--nodes 3: the embedded etcd has one member"},
		{backends.ZooKeeper, Servers{Mode: Local, Nodes: 2}, "--nodes 2: want 1 or an odd ensemble size"},
		{backends.Etcd, Servers{Mode: Docker, Nodes: 5}, "--nodes 5: --cluster docker starts 1 or 3 servers"},
	} {
		_, err := Connect(ctx, tc.kind, tc.srv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: %v, want %q", tc.kind, tc.srv, err, tc.want)
		}
	}
}
