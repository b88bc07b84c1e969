package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	dockercluster "github.com/zkbench/zkbench/cluster/docker"
	"github.com/zkbench/zkbench/results"
)

// What a run needs of the process it runs in: its signals, its terminal,
// and how it starts copies of itself.

// Interruptible returns a context cancelled by the first SIGINT or
// SIGTERM, saying so on stderr; a second one exits the process at once
// (the results file written after the last finished case stays valid:
// every write is atomic), after removing the Docker clusters this process
// started, which do not die with it as its processes do.
func Interruptible(parent context.Context, stderr io.Writer) (context.Context, func()) {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		fmt.Fprintln(stderr, "\nzkbench: interrupted: stopping the case, releasing locks and writing results (Ctrl-C again to exit at once)")
		cancel()
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "zkbench: interrupted twice: exiting now; the results file holds every case that finished")
			sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
			_ = dockercluster.StopAll(sctx)
			scancel()
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// IsTerminal reports whether w is a terminal (a character device): the
// status line is then rewritten in place (WithProgress's live).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// SelfShardCommand is how the parent of local shards starts one
// (WithLocalShards): this executable itself, `run --spec -` with the
// shard's Spec on its standard input and the secrets in its environment
// (PasswordEnv, DigestEnv), out of the process list.
func SelfShardCommand(spec Spec) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe, "run", "--spec", "-", "--no-plots")
	data, err := json.Marshal(spec)
	if err != nil {
		// A Spec is plain data; a failure here is a bug, and the shard
		// then fails reading its spec, naming it.
		data = []byte(err.Error())
	}
	cmd.Stdin = bytes.NewReader(data)
	if p := spec.Config.Servers.Password; p != "" {
		cmd.Env = append(cmd.Env, PasswordEnv+"="+p)
	}
	if d := spec.Config.Servers.Digest; d != "" {
		cmd.Env = append(cmd.Env, DigestEnv+"="+d)
	}
	return cmd
}

// ReadSpecFile reads the Spec in file (--spec; "-": stdin), its secrets
// taken as given (a Spec never holds them: from the environment).
func ReadSpecFile(file string, stdin io.Reader, password, digest string) (Spec, error) {
	in := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return Spec{}, fmt.Errorf("--spec: %w", err)
		}
		defer f.Close()
		in = f
	}
	s, err := ReadSpec(in)
	if err != nil {
		return Spec{}, fmt.Errorf("--spec %s: %w", file, err)
	}
	s.Config.Servers.Password, s.Config.Servers.Digest = password, digest
	return s, nil
}

// NextHint says what to run for larger numbers than run's: servers of
// their own when the embedded one shared the clients' process, other
// machines for the clients when cases were client-bound, a quiet machine
// when other processes loaded it; "" for a run of none of these kinds.
func NextHint(run *results.Run) string {
	bound, loaded := 0, 0
	for _, r := range run.Results {
		if r.ClientBound != nil {
			bound++
		}
		if r.Loaded != nil {
			loaded++
		}
	}
	switch {
	case bound > 0:
		return fmt.Sprintf("next: %d of %d cases were client-bound (this machine, not the servers, was the limit): "+
			"give the servers machines of their own (--endpoints) and split the clients over several "+
			"(--shards, zkbench kube job; docs/sharding.md)", bound, len(run.Results))
	case loaded > 0:
		return fmt.Sprintf("next: %d of %d cases ran on a loaded machine (other processes took its CPUs; each case's note "+
			"says how much): run again when the machine is quiet, or give zkbench a machine of its own", loaded, len(run.Results))
	case run.ClusterMode == string(Embedded):
		return "next: the embedded etcd shares this process and its cores with the clients; for larger numbers " +
			"(--clients 10,100,1000, --hold 0) give the servers machines of their own (--endpoints), or start them " +
			"here as processes or containers (--cluster local or docker, --nodes 3; --backend zookeeper), where they " +
			"still share this machine's cores"
	}
	return ""
}
