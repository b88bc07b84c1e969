package runflags

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkbench/zkbench/kube"
	"github.com/zkbench/zkbench/runner"
)

// parse binds the run's flags, and a command's own --wide, and parses args.
func parse(t *testing.T, args ...string) (*Run, *pflag.FlagSet) {
	t.Helper()
	fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f := Bind(fl)
	fl.Bool("wide", false, "a command's own flag")
	if err := fl.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f, fl
}

// The flags become the run's spec: what was given, the workload's default
// variants, the shard from --shards and $JOB_COMPLETION_INDEX.
func TestSpec(t *testing.T) {
	t.Setenv(kube.IndexEnv, "2")
	f, fl := parse(t, "--backend", "zookeeper", "--endpoints", "a:2181,b:2181", "--clients", "10,20", "--duration", "3s",
		"--shards", "4", "--run-id", "r1", "--require-quiet", "--fault", "kill-leader@1s+1s")
	s, err := f.Spec(fl)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config
	if c.Backend != "zookeeper" || len(c.Clients) != 2 || c.Duration != 3*time.Second || len(c.Variants) == 0 ||
		len(c.Servers.Endpoints) != 2 || c.Warmup != runner.Auto || !s.RequireQuiet || s.RunID != "r1" || len(s.Faults) != 1 {
		t.Errorf("spec %+v", s)
	}
	if s.Shard == nil || s.Shard.Index != 2 || s.Shard.Count != 4 {
		t.Errorf("shard %+v, want 2 of 4", s.Shard)
	}
}

// Refusals name the flag: one the backend does not read, a bad shard.
func TestSpecRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "zookeeper", "--lease-ttl", "5s"}, "--lease-ttl"},
		{[]string{"--shard-index", "1"}, "need --shards"},
		{[]string{"--shards", "2", "--shard-index", "-3"}, "--shard-index -3"},
		{[]string{"--workload", "nope"}, "--workload"},
	} {
		f, fl := parse(t, c.args...)
		if _, err := f.Spec(fl); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.args, err, c.want)
		}
	}
}

// --spec takes the whole run from the file: only the process's output,
// shard index and the command's own flags may be set beside it; secrets
// come from the flags or the environment, never from the file.
func TestSpecFromFile(t *testing.T) {
	f, fl := parse(t, "--backend", "etcd", "--clients", "5", "--shards", "3", "--shard-index", "0", "--run-id", "r2")
	s, err := f.Spec(fl)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(runner.PasswordEnv, "secret")
	f, fl = parse(t, "--spec", file, "--output", "out", "--shard-index", "1", "--wide")
	if _, err := f.SpecFromFile(fl, nil); err == nil || !strings.Contains(err.Error(), "--wide: the run is described by --spec") {
		t.Errorf("--wide, not the command's own: %v", err)
	}
	f.PasswordFromEnv()
	got, err := f.SpecFromFile(fl, nil, "wide")
	if err != nil {
		t.Fatal(err)
	}
	if got.Output != "out" || got.Shard == nil || got.Shard.Index != 1 || got.Shard.Count != 3 || got.RunID != "r2" || got.Config.Servers.Password != "secret" {
		t.Errorf("spec from file %+v", got)
	}
	f, fl = parse(t, "--spec", file, "--clients", "9")
	if _, err := f.SpecFromFile(fl, nil); err == nil || !strings.Contains(err.Error(), "--clients") {
		t.Errorf("--clients beside --spec: %v", err)
	}
}

// TestFlagError: a value its flag's type refuses says what the type takes,
// without the parser's words; another flag error points at the help.
func TestFlagError(t *testing.T) {
	fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.Duration("duration", 0, "")
	fl.Int("clients", 0, "")
	fl.Uint64("seed", 0, "")
	fl.Bool("json", false, "")
	fl.String("name", "", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--duration", "5"}, `--duration "5": want a duration with its unit, such as 500ms, 5s or 2m`},
		{[]string{"--clients", "abc"}, `--clients "abc": want a whole number`},
		{[]string{"--seed", "-1"}, `--seed "-1": want a whole number, 0 or more`},
		{[]string{"--json=maybe"}, `--json "maybe": want true or false`},
		{[]string{"--wide"}, "unknown flag: --wide (zkbench t --help lists the flags)"},
	} {
		err := fl.Parse(tc.args)
		if err == nil {
			t.Fatalf("%v parsed", tc.args)
		}
		if got := FlagError("zkbench t", err).Error(); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}
