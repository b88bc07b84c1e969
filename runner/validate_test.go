package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/analysis"
	"github.com/zkbench/zkbench/backends"
)

// A config center's point runs its variant alone at its watchers, size and
// rate, with the basis's poll interval, step timeout, nodes and shared
// connections, on the basis's kind of servers unless the flags name
// others.
func TestConfigSpec(t *testing.T) {
	p := &analysis.ConfigPrediction{
		Ask:     analysis.ConfigAsk{Workload: "config", Variant: "one-shot", Watchers: 40, Size: 4096, Rate: 5},
		Backend: backends.ZooKeeper, Mode: string(Local), Poll: "1s",
		Servers: analysis.ConfigServers{Nodes: "3", Conns: "4", StepTimeout: "30s"},
		Basis:   []analysis.ConfigPoint{{Run: "sweep"}},
	}
	spec, err := PlanPoint{Duration: 15 * time.Second, RunID: "point"}.ConfigSpec(p)
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Config
	if c.Workload != "config" || len(c.Variants) != 1 || c.Variants[0] != "one-shot" || len(c.Clients) != 1 || c.Clients[0] != 40 || c.Rate != 5 || c.Duration != 15*time.Second {
		t.Errorf("config %+v, want one-shot alone at 40 watchers, 5 updates/s, 15s", c)
	}
	for k, want := range map[string]string{"size": "4096", "poll": "1s", "step_timeout": "30s"} {
		if c.Params[k] != want {
			t.Errorf("param %s = %q, want %q (params %v)", k, c.Params[k], want, c.Params)
		}
	}
	if c.Servers.Mode != Local || c.Servers.Nodes != 3 || c.Servers.Conns != 4 {
		t.Errorf("servers %+v, want the basis's: local, 3 nodes, 4 connections", c.Servers)
	}
	p.Mode = "remote"
	if _, err := (PlanPoint{}).ConfigSpec(p); err == nil || !strings.Contains(err.Error(), "give --endpoints or --cluster") {
		t.Errorf("a basis on a remote cluster: error %v, want one asking for --endpoints or --cluster", err)
	}
	spec, err = PlanPoint{Endpoints: []string{"127.0.0.1:2181"}}.ConfigSpec(p)
	if err != nil || len(spec.Config.Servers.Endpoints) != 1 || spec.Config.Servers.Nodes != 1 {
		t.Errorf("with --endpoints: %+v, %v; want those endpoints and no nodes of the basis's to start", spec.Config.Servers, err)
	}
}
