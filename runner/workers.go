package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	zkbackend "github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/faults"
	"github.com/zkbench/zkbench/faults/schedule"
	"github.com/zkbench/zkbench/workloads"
)

// LockWorkerConfig is the backend a lock worker opens its session on, as
// the run sends it to the worker process.
type LockWorkerConfig struct {
	Backend   backends.Kind       `json:"backend"`
	ZooKeeper *zkbackend.Config   `json:"zookeeper,omitempty"`
	Etcd      *etcdbackend.Config `json:"etcd,omitempty"`
}

// OpenLockWorkerBackend opens the backend of a lock worker's session from
// its LockWorkerConfig (JSON); the worker process (`zkbench
// __lock-worker`) passes it to workloads.RunLockWorker, which opens its
// session on it and closes it with the returned func.
func OpenLockWorkerBackend(_ context.Context, raw json.RawMessage) (backends.Backend, func() error, error) {
	var cfg LockWorkerConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	var (
		b   backends.Backend
		err error
	)
	switch {
	case cfg.Backend == backends.ZooKeeper && cfg.ZooKeeper != nil:
		b, err = zkbackend.New(*cfg.ZooKeeper)
	case cfg.Backend == backends.Etcd && cfg.Etcd != nil:
		b, err = etcdbackend.New(*cfg.Etcd)
	default:
		return nil, nil, fmt.Errorf("config: backend %q without its settings", cfg.Backend)
	}
	if err != nil {
		return nil, nil, err
	}
	return b, b.Close, nil
}

// lockWorkers are the worker processes of the clients that pause-client
// and kill faults act on, as the fault target sees them (faults.Workers,
// faults.Killers).
type lockWorkers struct {
	clients []int
	config  json.RawMessage
	env     []string // added to each worker's environment
	// onSession reports a worker's session as faults.Backend reports the
	// in-process ones (fault clock, expire-session, timeline). Set before
	// the first case.
	onSession func(client int, session int64)

	// crasher kills the workers for kill-client and kill-holder;
	// holders: the workload's holders work in steps (kill-holder).
	crasher *workloads.Crasher
	holders bool

	mu   sync.Mutex
	pids map[int]int
}

var (
	_ faults.Workers = (*lockWorkers)(nil)
	_ faults.Killers = (*lockWorkers)(nil)
)

// workerClients lists the clients the plan runs in worker processes: the
// ones pause-client and kill-client faults name and, when a kill-holder
// fault asks for the holder whoever it is, every client but the last of
// the smallest case (one must run in this process).
func workerClients(p *plan) []int {
	var out []int
	add := func(c int) {
		if c >= 0 && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	for _, f := range p.faults {
		switch f.Action {
		case schedule.PauseClient, schedule.KillClient:
			add(f.Client)
		case schedule.KillHolder:
			for c := range slices.Min(p.cfg.Clients) - 1 {
				add(c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// atoiOr is s as a whole number, or or if it is not one.
func atoiOr(s string, or int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return or
	}
	return n
}

// kills counts the plan's faults of action a.
func kills(fs []schedule.Fault, a schedule.Action) int {
	n := 0
	for _, f := range fs {
		if f.Action == a {
			n++
		}
	}
	return n
}

// checkPauseClients explains why a run cannot run the clients its
// pause-client and kill faults name in worker processes, if it cannot.
func checkPauseClients(p *plan) error {
	workers := workerClients(p)
	holderKills := kills(p.faults, schedule.KillHolder)
	if len(workers) == 0 {
		if holderKills > 0 && slices.Min(p.cfg.Clients) < 2 {
			return fmt.Errorf("--fault kill-holder: a killed holder does not come back and one client must run in this process: --clients at least 2")
		}
		return nil
	}
	var first schedule.Fault
	for _, f := range p.faults {
		if f.Action == schedule.PauseClient || f.Action == schedule.KillClient || f.Action == schedule.KillHolder {
			first = f
			break
		}
	}
	what := "--fault " + first.Name()
	switch {
	case !p.wspec.Abilities.ClientProcesses:
		return fmt.Errorf("%s: only %s clients in worker processes that can be paused or killed (this run's workload is %s)", what,
			ableWorkloads(func(a workloads.Abilities) bool { return a.ClientProcesses }, "runs", "run"), p.wspec.Name)
	case holderKills > 0 && !p.wspec.Abilities.Steps:
		return fmt.Errorf("--fault kill-holder: the %s workload's holders do no work in steps for a kill to fall between: only %s (kill-client:C kills a client whatever it does)",
			p.wspec.Name, ableWorkloads(func(a workloads.Abilities) bool { return a.Steps }, "does", "do"))
	case p.cfg.Rate > 0:
		return fmt.Errorf("%s: a paused or killed client runs in a worker process, which the open loop (--rate) cannot schedule: use the closed loop", what)
	case slices.Min(p.cfg.Clients) <= len(workers):
		return fmt.Errorf("%s: every case needs a client in this process besides the %d in worker processes (--clients at least %d)", what, len(workers), len(workers)+1)
	case holderKills > 0 && workloads.KillStep(atoiOr(p.cfg.Params[workloads.ParamSteps], 0)) == 0:
		return fmt.Errorf("--fault kill-holder: --steps %s: an operation of fewer than 2 steps has no point between two of them for a kill to fall", p.cfg.Params[workloads.ParamSteps])
	case holderKills > len(workers):
		return fmt.Errorf("--fault kill-holder: %d kill-holder faults but only %d clients in worker processes, and a killed client does not come back: --clients at least %d",
			holderKills, len(workers), holderKills+1)
	}
	for _, fl := range p.faults {
		if !slices.Contains(workers, fl.Client) {
			continue
		}
		switch {
		case fl.Action == schedule.CutClient, fl.Action == schedule.ResetConns:
			return fmt.Errorf("--fault %s: client %d runs in a worker process (it is paused or killed), whose connections the fault proxies cannot single out", fl, fl.Client)
		case fl.Action == schedule.ExpireSession && p.kind == backends.ZooKeeper:
			return fmt.Errorf("--fault %s: client %d runs in a worker process (it is paused or killed), whose ZooKeeper session zkbench cannot expire from here", fl, fl.Client)
		}
	}
	return nil
}

// newLockWorkers returns the workers for the plan's paused clients, which
// reach the servers at endpoints (through the fault proxies, if any), with
// the run's settings and a connection of their own each; nil if no fault
// pauses a client.
func newLockWorkers(p *plan, endpoints []string) (*lockWorkers, error) {
	paused := workerClients(p)
	if len(paused) == 0 {
		return nil, nil
	}
	cfg := LockWorkerConfig{Backend: p.kind}
	if p.kind == backends.ZooKeeper {
		zc := p.zkConfig(endpoints)
		zc.Conns = 0
		cfg.ZooKeeper = &zc
	} else {
		ec := etcdConfig(endpoints, p.Servers)
		ec.Conns = 0
		cfg.Etcd = &ec
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return &lockWorkers{clients: paused, config: raw, env: p.workerEnv, pids: map[int]int{},
		crasher: workloads.NewCrasher(), holders: p.wspec.Abilities.Steps}, nil
}

// processes is what a case is given to run the workers.
func (w *lockWorkers) processes() *workloads.ClientProcesses {
	return &workloads.ClientProcesses{
		Clients: w.clients,
		Config:  w.config,
		Command: func(int) *exec.Cmd {
			exe, err := os.Executable()
			if err != nil {
				exe = os.Args[0]
			}
			cmd := exec.Command(exe, workloads.LockWorkerCommand)
			cmd.Env = append(os.Environ(), w.env...)
			return cmd
		},
		Started: func(client, pid int) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if pid == 0 {
				delete(w.pids, client)
			} else {
				w.pids[client] = pid
			}
		},
		Session: func(client int, id int64) {
			if w.onSession != nil {
				w.onSession(client, id)
			}
		},
		Crasher: w.crasher,
	}
}

// KillClient SIGKILLs client c's worker process (faults.Killers).
func (w *lockWorkers) KillClient(c int) error { return w.crasher.KillClient(c) }

// KillHolder arms a kill of the next worker client that holds the lock
// mid-work (faults.Killers).
func (w *lockWorkers) KillHolder() error { return w.crasher.KillHolder() }

// ErrNoWorker: pause-client named a client whose worker process is not
// running (between cases, or it exited after losing its session).
var ErrNoWorker = errors.New("no running worker process")

func (w *lockWorkers) pid(c int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pids[c]
}

// Pause SIGSTOPs client c's worker process.
func (w *lockWorkers) Pause(c int) error {
	pid := w.pid(c)
	if pid == 0 {
		return fmt.Errorf("client %d: %w", c, ErrNoWorker)
	}
	return syscall.Kill(pid, syscall.SIGSTOP)
}

// Resume SIGCONTs client c's worker process; one that has exited meanwhile
// (the case ended and continued it itself) needs nothing.
func (w *lockWorkers) Resume(c int) error {
	pid := w.pid(c)
	if pid == 0 {
		return nil
	}
	return syscall.Kill(pid, syscall.SIGCONT)
}
