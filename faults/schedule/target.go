package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrUnsupported is returned (wrapped) by a Target asked for something it
// cannot do, such as killing a server of a remote cluster.
var ErrUnsupported = errors.New("schedule: fault not supported here")

// Target is what faults act on: the run's local servers, the proxies in
// front of them and the simulated clients. The runner calls its methods from
// several goroutines at once; an implementation must be safe for that.
type Target interface {
	// Limits says what the target can do; Validate checks faults against it.
	Limits() Limits
	ServerFaults
	NetworkFaults
	ClientFaults
}

// Limits describes a Target's abilities.
type Limits struct {
	// Servers is how many local servers may be killed, paused and restarted
	// (0 for a remote cluster).
	Servers int
	// Clients is how many simulated clients every case has (the smallest
	// client count of the sweep).
	Clients int
	// Network: client connections run through zkbench's fault proxies.
	Network bool
	// Workers: clients run in worker processes that can be paused.
	Workers bool
	// Expire: sessions can be made to expire on demand.
	Expire bool
	// Partition: servers can be cut off the network (the Target is a
	// Partitioner).
	Partition bool
	// Kill: clients run in worker processes that can be killed (the
	// Target is a Killer); Holders: the workload's holders work in steps
	// that kill-holder can fall between.
	Kill, Holders bool
}

// Killer is the optional ability of a Target whose clients run in worker
// processes: to SIGKILL one, with no release and no close, so that its
// session ends on the server only when it times out.
type Killer interface {
	// KillClient kills client c's worker now.
	KillClient(c int) error
	// KillHolder arms a kill of the next worker client that holds the
	// lock mid-work: it is killed between two steps of its work.
	KillHolder() error
}

// Partitioner is the optional ability of a Target whose servers sit on a
// network it controls (containers on a Docker network): to cut server i off
// its peers and its clients, and to connect it again. Both wait under ctx.
type Partitioner interface {
	PartitionServer(ctx context.Context, i int) error
	HealServer(ctx context.Context, i int) error
}

// ServerFaults act on local servers, by index from 0.
type ServerFaults interface {
	// KillServer SIGKILLs server i and waits until it has exited.
	KillServer(ctx context.Context, i int) error
	// RestartServer starts server i again (stopping it first if it runs)
	// and waits, under ctx, until it serves.
	RestartServer(ctx context.Context, i int) error
	// PauseServer SIGSTOPs server i; ResumeServer SIGCONTs it.
	PauseServer(i int) error
	ResumeServer(i int) error
	// Leader returns the index of the server leading now.
	Leader(ctx context.Context) (int, error)
}

// NetworkFaults act on the proxies between clients and servers.
type NetworkFaults interface {
	// SetLatency delays every chunk each way by base ± jitter; 0, 0 ends it.
	SetLatency(base, jitter time.Duration) error
	// Cut blackholes client c's connections (-1: every client's) until
	// Restore(c). Restore(-1) lifts Cut(-1) only.
	Cut(c int) error
	Restore(c int) error
	// Reset resets client c's open connections (-1: all) and says how many.
	Reset(c int) (int, error)
}

// ClientFaults act on simulated clients.
type ClientFaults interface {
	// PauseClient SIGSTOPs the worker process running client c;
	// ResumeClient SIGCONTs it.
	PauseClient(c int) error
	ResumeClient(c int) error
	// ExpireSession makes client c's session expire on the server.
	ExpireSession(ctx context.Context, c int) error
}

// ValidateCluster checks what of Validate a run knows before its servers
// start: the server and partition faults against lim.Servers and
// lim.Partition, and the clients named against lim.Clients. What only the
// target knows (proxies, worker processes, expiry) is taken as there here:
// Validate judges it once the target is built.
func ValidateCluster(faults []Fault, lim Limits) error {
	lim.Network, lim.Workers, lim.Expire, lim.Kill, lim.Holders = true, true, true, true, true
	return Validate(faults, lim)
}

// Validate checks faults against a target's limits before a run, so that a
// run does not start with a fault that cannot fire. It returns every problem
// found, joined, each wrapping ErrBadSpec.
func Validate(faults []Fault, lim Limits) error {
	var errs []error
	for _, f := range faults {
		bad := func(part, format string, args ...any) {
			errs = append(errs, &SpecError{Spec: f.String(), Part: part, Msg: fmt.Sprintf(format, args...)})
		}
		switch f.Action {
		case KillServer, RestartServer, PauseServer, KillLeader, KillServers:
			switch {
			case lim.Servers == 0:
				bad("", "needs server processes zkbench runs itself (--cluster local); an embedded or remote server cannot be killed")
			case f.Action == KillServers && f.Count > lim.Servers:
				bad(fmt.Sprint(f.Count), "the cluster has only %d servers", lim.Servers)
			case f.Server >= lim.Servers:
				bad(fmt.Sprint(f.Server), "no such server: the cluster has servers 0..%d", lim.Servers-1)
			case f.Action == KillLeader && lim.Servers == 1:
				// A standalone server leads itself: allowed.
			}
		case PartitionServer, PartitionLeader:
			switch {
			case !lim.Partition:
				bad("", "needs servers on a network zkbench controls (--cluster docker)")
			case f.Server >= lim.Servers:
				bad(fmt.Sprint(f.Server), "no such server: the cluster has servers 0..%d", lim.Servers-1)
			}
		case Latency, CutClient, CutAll, ResetConns:
			if !lim.Network {
				bad("", "needs client connections through zkbench's fault proxy, which this run does not have")
			}
		case PauseClient:
			if !lim.Workers {
				bad("", "needs clients running in worker processes, which this run does not have")
			}
		case ExpireSession:
			if !lim.Expire {
				bad("", "this backend cannot expire a session on demand")
			}
		case KillClient:
			if !lim.Kill {
				bad("", "needs clients running in worker processes, which this run does not have")
			}
		case KillHolder:
			switch {
			case !lim.Kill:
				bad("", "needs clients running in worker processes, which this run does not have")
			case !lim.Holders:
				bad("", "needs a workload whose lock holders work in steps a kill can fall between (the ledger workload)")
			}
		}
		if f.Client >= 0 && f.Client >= lim.Clients {
			bad(fmt.Sprint(f.Client), "no such client: the run has clients 0..%d", lim.Clients-1)
		}
	}
	return errors.Join(errs...)
}
