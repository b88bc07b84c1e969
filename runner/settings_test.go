package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
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
			if tc.set != nil {
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
