package main

import "testing"

// TestRequireQuietReachesTheSpec: --require-quiet is part of the run's
// spec, so that local shards and Kubernetes pods run from it refuse a
// loaded machine too.
func TestRequireQuietReachesTheSpec(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--workload", "lock"}, false},
		{[]string{"--workload", "lock", "--require-quiet"}, true},
	} {
		cmd, f := newRunCmdFlags()
		if err := cmd.Flags().Parse(c.args); err != nil {
			t.Fatal(err)
		}
		s, err := f.Spec(cmd.Flags())
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if s.RequireQuiet != c.want {
			t.Errorf("%v: spec's RequireQuiet %v, want %v", c.args, s.RequireQuiet, c.want)
		}
	}
}
