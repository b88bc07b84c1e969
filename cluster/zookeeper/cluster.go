// Package zookeeper starts local ZooKeeper servers for zkbench: a standalone
// server or a 3-node ensemble on free loopback ports, from an installed
// distribution (ZOOKEEPER_HOME or Debian's zookeeper package), and stops and
// removes them afterwards. It also injects faults into them (Kill, Restart,
// Pause, Resume).
//
// Servers run as child processes with SIGKILL as their parent-death signal
// (internal/spawn): if zkbench dies, so do they, unless Options.Detach lets
// them outlive it (for `zkbench cluster up`). Each member's stdout and
// stderr go to server.log in its folder; start errors quote its tail.
package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/zkbench/zkbench/cluster/internal/members"
)

// Options configure Start. The zero value starts one server in a temporary
// folder with ZooKeeper's default timing.
type Options struct {
	// Nodes is 1 (standalone, the default) or an odd ensemble size (3, 5).
	Nodes int
	// Dir holds configs, data and logs. "" makes a temporary folder that
	// Stop removes; a given folder is kept.
	Dir string
	// SessionTimeout is the session timeout the clients will ask for: the
	// ensemble's timing follows it (TimingFor), so that a lost leader is
	// replaced before the sessions expire. Zero: DefaultTiming.
	SessionTimeout time.Duration
	// TickTime, if set, overrides the timing's tick (tests).
	TickTime time.Duration
	// HeapMB is each JVM's -Xmx in MiB. Default 512.
	HeapMB int
	// Extra adds or overrides zoo.cfg lines (e.g. "globalOutstandingLimit").
	Extra map[string]string
	// Dist is the distribution to run; the zero value means Find().
	Dist Distribution
	// Detach lets the servers outlive this process (no parent-death
	// signal, their own session), for a `cluster up` that saves State and
	// exits. Default false: the servers die with zkbench.
	Detach bool
}

// Member is one server as started: ports, files and process id. It is part
// of State and so JSON-encodable.
type Member struct {
	// ID is the server id (myid), from 1.
	ID           int `json:"id"`
	ClientPort   int `json:"client_port"`
	QuorumPort   int `json:"quorum_port,omitempty"`
	ElectionPort int `json:"election_port,omitempty"`
	// PID is the JVM's process id; 0 when the member is not running.
	PID        int    `json:"pid"`
	Dir        string `json:"dir"`
	DataDir    string `json:"data_dir"`
	ConfigPath string `json:"config_path"`
	LogPath    string `json:"log_path"`
}

// Endpoint is the member's client address, "127.0.0.1:port".
func (m Member) Endpoint() string { return "127.0.0.1:" + strconv.Itoa(m.ClientPort) }

// State is everything needed to find a running cluster again: where its
// files are, its ports and its process ids. It is JSON-encodable so that a
// `cluster up` command can save it and a later run can re-open it.
type State struct {
	Dir     string `json:"dir"`
	OwnsDir bool   `json:"owns_dir"`
	TickMs  int    `json:"tick_ms"`
	// The rest of the timing; zero in a state saved before they were
	// (ZooKeeper's defaults then).
	InitLimit    int               `json:"init_limit,omitempty"`
	SyncLimit    int               `json:"sync_limit,omitempty"`
	MaxSessionMs int               `json:"max_session_ms,omitempty"`
	HeapMB       int               `json:"heap_mb"`
	Extra        map[string]string `json:"extra,omitempty"`
	Dist         Distribution      `json:"dist"`
	Detach       bool              `json:"detach,omitempty"`
	Members      []Member          `json:"members"`
}

// Cluster is a set of running local ZooKeeper servers. Its methods may be
// called concurrently.
type Cluster struct {
	mu    sync.Mutex
	st    State
	procs *members.Procs
}

// Start lays out the folder, starts every server and waits, under ctx, until
// each answers srvr and (for an ensemble) a leader is elected. On failure
// everything it started is stopped and the error quotes the servers' logs.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	n := opts.Nodes
	if n == 0 {
		n = 1
	}
	if n < 1 || n%2 == 0 {
		return nil, fmt.Errorf("cluster/zookeeper: %d nodes: want 1 or an odd ensemble size such as 3", n)
	}
	tm := TimingFor(opts.SessionTimeout)
	if opts.TickTime > 0 {
		tm.Tick = opts.TickTime
	}
	st := State{
		TickMs: int(tm.Tick / time.Millisecond), InitLimit: tm.InitLimit, SyncLimit: tm.SyncLimit,
		MaxSessionMs: int(tm.MaxSession / time.Millisecond),
		HeapMB:       512, Extra: opts.Extra, Dist: opts.Dist, Detach: opts.Detach,
	}
	if opts.HeapMB > 0 {
		st.HeapMB = opts.HeapMB
	}
	if len(st.Dist.Classpath) == 0 {
		d, err := Find()
		if err != nil {
			return nil, err
		}
		st.Dist = d
	}
	dir, owned, err := members.Folder(opts.Dir, "zkbench-zookeeper-", 0o755)
	if err != nil {
		return nil, fmt.Errorf("cluster/zookeeper: %w", err)
	}
	st.Dir, st.OwnsDir = dir, owned
	for i := 1; i <= n; i++ {
		dir := filepath.Join(st.Dir, "node"+strconv.Itoa(i))
		st.Members = append(st.Members, Member{
			ID: i, Dir: dir, DataDir: filepath.Join(dir, "data"),
			ConfigPath: filepath.Join(dir, "zoo.cfg"), LogPath: filepath.Join(dir, "server.log"),
		})
	}
	c := &Cluster{st: st}
	c.procs = c.memberProcs(n)
	if err := writeLogConfigs(st.Dir); err != nil {
		c.cleanup()
		return nil, err
	}
	// A port picked free may be taken before the JVM binds it: retry then.
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.startAll(ctx); err == nil || !errors.Is(err, errPortTaken) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(stopCtx)
		return nil, err
	}
	return c, nil
}

// startAll picks ports, writes configs and starts every member.
func (c *Cluster) startAll(ctx context.Context) error {
	c.procs.KillAll()
	if err := assignPorts(c.st.Members); err != nil {
		return err
	}
	for _, m := range c.st.Members {
		if err := writeMemberFiles(m, c.st.Members, c.st.Timing(), c.st.Extra); err != nil {
			return err
		}
	}
	for i := range c.st.Members {
		if err := c.procs.Start(i); err != nil {
			return err
		}
	}
	return c.waitReady(ctx, members.All(len(c.st.Members)))
}

// Endpoints returns every member's client address, running or not.
func (c *Cluster) Endpoints() []string { return members.Endpoints(c.Members()) }

// Members returns the members with their current PIDs (0 if not running).
func (c *Cluster) Members() []Member {
	return c.State().Members
}

// PIDs maps each running member's endpoint to its process id, the shape
// backends/zookeeper's WithServerPIDs takes.
func (c *Cluster) PIDs() map[string]int {
	return members.PIDs(c.Members(), func(m Member) int { return m.PID })
}

// State returns a copy of the cluster's state, for saving.
func (c *Cluster) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.st
	st.Members = append([]Member(nil), c.st.Members...)
	return st
}

// Stop ends every server (SIGTERM, then SIGKILL when ctx ends or after
// 10 s) and removes the folder if Start made it. Safe to call twice.
func (c *Cluster) Stop(ctx context.Context) error {
	c.procs.StopAll(ctx, 10*time.Second, -1)
	c.cleanup()
	return nil
}

// cleanup removes the folder if Start made it.
func (c *Cluster) cleanup() {
	if c.st.OwnsDir {
		_ = os.RemoveAll(c.st.Dir)
	}
}
