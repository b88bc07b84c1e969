package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/results"
	"github.com/zkbench/zkbench/workloads"
)

// TestAutoSettingsFollowTheScale checks the settings a run chooses where
// the user set none, and that a setting the user gave is kept as given.
func TestAutoSettingsFollowTheScale(t *testing.T) {
	tests := []struct {
		name    string
		kind    backends.Kind
		clients []int
		set     func(*Config)
		want    map[string]string // setting -> value
		reason  map[string]string // setting -> part of its why
	}{
		{"etcd small", backends.Etcd, []int{10, 100}, nil,
			map[string]string{"lease-ttl": "5s", "warmup": "500ms"},
			map[string]string{"lease-ttl": "the default", "warmup": "the default"}},
		{"etcd large", backends.Etcd, []int{1000, 3000}, nil,
			map[string]string{"lease-ttl": "9s", "warmup": "3s"},
			map[string]string{"lease-ttl": "3000 clients x 3ms", "warmup": "3000 clients x 1ms"}},
		{"zookeeper mid", backends.ZooKeeper, []int{2500}, nil,
			map[string]string{"session-timeout": "8s", "warmup": "2.5s"},
			map[string]string{"session-timeout": "2500 clients x 3ms", "zookeeper receive buffer": "listing of every client"}},
		{"zookeeper queue backlog", backends.ZooKeeper, []int{10}, func(c *Config) {
			c.Workload, c.Variants, c.Rate, c.Duration = "queue", []string{"naive", "fair"}, 400, 10*time.Second
		}, map[string]string{"zookeeper receive buffer": "240384 bytes"}, // 16 KiB + 4,000 x 56
			map[string]string{"zookeeper receive buffer": "backlog, every item a case puts (--rate x --duration: 4000)"}},
		{"zookeeper queue backlog cut", backends.ZooKeeper, []int{10}, func(c *Config) {
			c.Workload, c.Variants, c.Rate, c.Duration = "queue", []string{"naive"}, 10000, time.Minute
		}, map[string]string{"zookeeper receive buffer": "1048576 bytes"}, // 16 KiB + 18,432 x 56: 1 MiB
			map[string]string{"zookeeper receive buffer": "(--rate x --duration: 600000), cut to 18432"}},
		{"zookeeper config node larger than a listing", backends.ZooKeeper, []int{10}, func(c *Config) {
			c.Workload, c.Variants = "config", []string{workloads.ConfigOneShot}
			c.Params = map[string]string{workloads.ParamSize: "131072"}
		}, map[string]string{"zookeeper receive buffer": "135168 bytes"}, // 128 KiB + 4 KiB, past the default 96 KiB
			map[string]string{"zookeeper receive buffer": "largest node data the config workload reads (131072 bytes)"}},
		{"user's settings kept", backends.ZooKeeper, []int{3000}, func(c *Config) {
			c.Servers.SessionTimeout, c.Warmup = 15*time.Second, 0
		}, map[string]string{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sweep()
			cfg.Backend, cfg.Clients, cfg.Warmup = tc.kind, tc.clients, Auto
			cfg.Servers.SessionTimeout, cfg.Servers.LeaseTTL = Auto, Auto
			if tc.set != nil {
				tc.set(&cfg)
			}
			r, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			p := r.plan
			got := map[string]string{}
			why := map[string]string{}
			for _, s := range p.settings {
				got[s.Name], why[s.Name] = s.Value, s.Why
			}
			for name, v := range tc.want {
				if got[name] != v {
					t.Errorf("%s = %q, want %q (all: %v)", name, got[name], v, p.settings)
				}
			}
			for name, part := range tc.reason {
				if !strings.Contains(why[name], part) {
					t.Errorf("%s: why %q lacks %q", name, why[name], part)
				}
			}
			if tc.set != nil && tc.want["zookeeper receive buffer"] == "" {
				if _, ok := got["session-timeout"]; ok || p.Servers.SessionTimeout != 15*time.Second || p.cfg.Warmup != 0 {
					t.Errorf("user's settings changed: %v, timeout %v, warmup %v", p.settings, p.Servers.SessionTimeout, p.cfg.Warmup)
				}
				return
			}
			if d, _ := time.ParseDuration(got["warmup"]); p.cfg.Warmup != d {
				t.Errorf("results config warm-up %v, setting %v", p.cfg.Warmup, got["warmup"])
			}
			key := map[backends.Kind]string{backends.Etcd: "lease_ttl", backends.ZooKeeper: "session_timeout"}[tc.kind]
			flag := map[backends.Kind]string{backends.Etcd: "lease-ttl", backends.ZooKeeper: "session-timeout"}[tc.kind]
			if p.cfg.Params[key] != got[flag] {
				t.Errorf("params[%s] = %q, setting %q", key, p.cfg.Params[key], got[flag])
			}
		})
	}
}

func TestScaledTimeout(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{10, 4 * time.Second}, {1333, 4 * time.Second}, {1500, 5 * time.Second}, {5000, 15 * time.Second}, {10000, 30 * time.Second}, {50000, 30 * time.Second}} {
		if got := scaledTimeout(defaultSessionTimeout, tc.n); got != tc.want {
			t.Errorf("%d clients: %v, want %v", tc.n, got, tc.want)
		}
	}
}

// TestAutoHold checks what a hold left to the run becomes: the lock
// workload's own in a closed loop, recorded with its reason; nothing in an
// open loop, for a workload without a default hold, or for one that does
// not read it (which must not refuse it as if the user had set it); and a
// hold the user gave is kept.
func TestAutoHold(t *testing.T) {
	tests := []struct {
		name     string
		workload string
		rate     float64
		hold     time.Duration
		want     time.Duration
		setting  bool
	}{
		{"lock closed loop", "lock", 0, Auto, workloads.DefaultLockHold, true},
		{"lock open loop", "lock", 50, Auto, 0, false},
		{"lock, user's hold", "lock", 0, 5 * time.Millisecond, 5 * time.Millisecond, false},
		{"lock, user's zero", "lock", 0, 0, 0, false},
		{"rwlock has none", "rwlock", 0, Auto, 0, false},
		{"config does not read it", "config", 0, Auto, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sweep()
			cfg.Workload, cfg.Rate, cfg.Hold = tc.workload, tc.rate, tc.hold
			if tc.workload != "lock" {
				cfg.Variants = nil
			}
			r, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			p := r.plan
			if p.cfg.Hold != tc.want {
				t.Errorf("results config hold %v, want %v", p.cfg.Hold, tc.want)
			}
			var got *results.Setting
			for i, s := range p.settings {
				if s.Name == "hold" {
					got = &p.settings[i]
				}
			}
			switch {
			case tc.setting && got == nil:
				t.Errorf("no hold setting recorded: %v", p.settings)
			case tc.setting && (got.Value != tc.want.String() || !strings.Contains(got.Why, "--hold 0")):
				t.Errorf("hold setting %+v: want value %v and a why that says how to hold 0", *got, tc.want)
			case !tc.setting && got != nil:
				t.Errorf("hold setting %+v recorded for a hold the run did not choose", *got)
			}
		})
	}
}
