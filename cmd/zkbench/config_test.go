package main

import (
	"strings"
	"testing"
	"time"
)

// TestConfigBadInput: the config workload's refusals come from run
// (before any server starts) and exec's from its arguments, within
// seconds.
func TestConfigBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"size over jute.maxbuffer", []string{"run", "--backend", "zookeeper", "--cluster", "local", "--workload", "config", "--size", "1MB"}, "jute.maxbuffer"},
		{"size over etcd's limit", []string{"run", "--workload", "config", "--size", "2MB"}, "--max-request-bytes"},
		{"size on a lock", []string{"run", "--size", "1KB"}, "--size: the lock workload does not read it"},
		{"bad size", []string{"run", "--workload", "config", "--size", "big"}, "--size"},
		{"relative node", []string{"exec", "app", "/tmp/f", "true"}, "want an absolute path"},
		// What would fail only when NODE first has data fails at the start.
		{"file in no folder", []string{"exec", "--endpoints", "127.0.0.1:1", "/app", "/nonexistent/app.conf", "true"}, "its folder /nonexistent does not exist"},
		{"file a folder", []string{"exec", "--endpoints", "127.0.0.1:1", "/app", "/tmp", "true"}, "FILE /tmp is a folder"},
		{"no such program", []string{"exec", "--endpoints", "127.0.0.1:1", "/app", "/tmp/f", "/nonexistent/prog"}, `PROGRAM "/nonexistent/prog"`},
		{"no program", []string{"exec", "/app", "/tmp/f"}, "exec: requires at least 3 arg(s), only received 2; usage: zkbench exec NODE FILE PROGRAM"},
		// run's refusals, in exec
		{"exec: session timeout on etcd", []string{"exec", "--session-timeout", "3s", "/app", "/tmp/f", "true"}, "--session-timeout: only zookeeper reads it"},
		{"exec: lease on zookeeper", []string{"exec", "--backend", "zookeeper", "--lease-ttl", "3s", "/app", "/tmp/f", "true"}, "--lease-ttl: only etcd reads it"},
		{"exec: digest on etcd", []string{"exec", "--digest", "a:b", "/app", "/tmp/f", "true"}, "--digest: only zookeeper reads it"},
		{"exec: nodes with endpoints", []string{"exec", "--nodes", "3", "--endpoints", "127.0.0.1:1", "/app", "/tmp/f", "true"}, "--nodes: zkbench starts no servers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := execute(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("refused after %v, want within seconds (before any server starts)", d)
			}
		})
	}
}
