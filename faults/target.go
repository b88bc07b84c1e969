package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkbench/zkbench/faults/proxy"
	"github.com/zkbench/zkbench/faults/schedule"
)

// Cluster is a set of local servers zkbench runs itself, by index from 0:
// cluster/zookeeper's Cluster and cluster/etcd's Local.
type Cluster interface {
	// Kill SIGKILLs server i and waits for it to exit.
	Kill(i int) error
	// Restart starts server i again and waits under ctx until it serves.
	Restart(ctx context.Context, i int) error
	// Pause SIGSTOPs server i; Resume SIGCONTs it.
	Pause(i int) error
	Resume(i int) error
}

// Partitioner is a Cluster whose servers sit on a network it controls
// (cluster/docker's containers): Partition cuts server i off its peers and
// its clients, Heal connects it again at its address. Both wait under ctx.
type Partitioner interface {
	Partition(ctx context.Context, i int) error
	Heal(ctx context.Context, i int) error
}

// LeaderFunc returns the index of the server that leads now.
type LeaderFunc func(ctx context.Context) (int, error)

// Expirer makes a session expire on the server now (ZKExpirer, EtcdExpirer).
type Expirer interface {
	Expire(ctx context.Context, session int64) error
}

// Workers pauses and continues the worker processes that run clients.
type Workers interface {
	Pause(client int) error
	Resume(client int) error
}

// Killers kill the worker processes that run clients (SIGKILL): one
// client's now, or the next holder's mid-work.
type Killers interface {
	KillClient(client int) error
	KillHolder() error
}

// Target is the schedule.Target of a run: it acts on the servers, proxies,
// sessions and workers it was given and says, through Limits, which faults
// it can take. What it was not given it refuses with schedule.ErrUnsupported.
//
// Safe for concurrent use.
type Target struct {
	cluster Cluster
	servers int
	leader  LeaderFunc
	shared  proxy.Group
	tagged  bool // shared proxies tell clients apart (proxy.Tags)
	own     map[int]proxy.Group
	expirer Expirer
	workers Workers
	killers Killers
	holders bool
	clients int

	mu         sync.Mutex
	sessions   []int64 // the open case's session ids, by client
	cutAll     bool
	cutClients map[int]bool
}

var (
	_ schedule.Target      = (*Target)(nil)
	_ schedule.Partitioner = (*Target)(nil)
	_ schedule.Killer      = (*Target)(nil)
)

// TargetOption gives a Target something to act on.
type TargetOption func(*Target)

// WithCluster lets the target kill, restart and pause servers 0..n-1 of c,
// and find the leader with leader (nil: kill-leader and kill-servers fall
// back to index order).
func WithCluster(c Cluster, n int, leader LeaderFunc) TargetOption {
	return func(t *Target) { t.cluster, t.servers, t.leader = c, n, leader }
}

// WithProxies gives the proxies every client's connections go through:
// latency, cut-all and reset-conns act on them.
func WithProxies(g proxy.Group) TargetOption { return func(t *Target) { t.shared = g } }

// WithTaggedClients says the shared proxies tell clients' connections apart
// (they were made WithTags, and the tags are kept by faults.ZKSessions or
// proxy.Tags dialers): cut-client and reset-conns:C then act on them.
func WithTaggedClients() TargetOption { return func(t *Target) { t.tagged = true } }

// WithClientProxies gives the proxies dedicated to single clients, by
// client index: cut-client and reset-conns:C act on them; latency, cut-all
// and reset-conns act on them too.
func WithClientProxies(own map[int]proxy.Group) TargetOption {
	return func(t *Target) { t.own = own }
}

// WithExpirer lets the target expire sessions on demand.
func WithExpirer(e Expirer) TargetOption { return func(t *Target) { t.expirer = e } }

// WithWorkers lets the target pause the clients' worker processes.
func WithWorkers(w Workers) TargetOption { return func(t *Target) { t.workers = w } }

// WithKillers lets the target kill the clients' worker processes;
// holders says the workload's holders work in steps (kill-holder).
func WithKillers(k Killers, holders bool) TargetOption {
	return func(t *Target) { t.killers, t.holders = k, holders }
}

// WithClients sets how many clients every case has (the smallest count of
// the sweep), for validation.
func WithClients(n int) TargetOption { return func(t *Target) { t.clients = n } }

// NewTarget returns a target over what opts give it.
func NewTarget(opts ...TargetOption) *Target {
	t := &Target{}
	for _, o := range opts {
		o(t)
	}
	return t
}

// SetSessions tells the target the session ids of the case now running, by
// client index (nil when no case runs), for expire-session.
func (t *Target) SetSessions(ids []int64) {
	t.mu.Lock()
	t.sessions = append([]int64(nil), ids...)
	t.mu.Unlock()
}

// SetSession records that client's session is id (for expire-session), as
// sessions open one by one (faults.Backend's onSession).
func (t *Target) SetSession(client int, id int64) {
	if client < 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.sessions) <= client {
		t.sessions = append(t.sessions, 0)
	}
	t.sessions[client] = id
}

// Limits implements schedule.Target. Client-targeted network faults need a
// dedicated proxy for that client; Validate checks the client index only,
// so the caller makes one proxy per client a fault names.
func (t *Target) Limits() schedule.Limits {
	return schedule.Limits{
		Servers:   t.servers,
		Clients:   t.clients,
		Network:   len(t.shared) > 0 || len(t.own) > 0,
		Workers:   t.workers != nil,
		Expire:    t.expirer != nil,
		Partition: t.partitioner() != nil,
		Kill:      t.killers != nil,
		Holders:   t.killers != nil && t.holders,
	}
}

func (t *Target) partitioner() Partitioner {
	p, _ := t.cluster.(Partitioner)
	return p
}

// PartitionServer implements schedule.Partitioner.
func (t *Target) PartitionServer(ctx context.Context, i int) error {
	p, err := t.partitionerOf(i)
	if err != nil {
		return err
	}
	return p.Partition(ctx, i)
}

// HealServer implements schedule.Partitioner.
func (t *Target) HealServer(ctx context.Context, i int) error {
	p, err := t.partitionerOf(i)
	if err != nil {
		return err
	}
	return p.Heal(ctx, i)
}

// partitionerOf returns the Partitioner that cuts server i off, or why
// there is none.
func (t *Target) partitionerOf(i int) (Partitioner, error) {
	if err := t.server(i); err != nil {
		return nil, err
	}
	p := t.partitioner()
	if p == nil {
		return nil, unsupported("servers cannot be partitioned (not in containers)")
	}
	return p, nil
}

func unsupported(what string) error { return fmt.Errorf("%w: %s", schedule.ErrUnsupported, what) }

func (t *Target) server(i int) error {
	if t.cluster == nil {
		return unsupported("no local servers")
	}
	if i < 0 || i >= t.servers {
		return fmt.Errorf("faults: no server %d (servers 0..%d)", i, t.servers-1)
	}
	return nil
}

// KillServer implements schedule.Target.
func (t *Target) KillServer(_ context.Context, i int) error {
	if err := t.server(i); err != nil {
		return err
	}
	return t.cluster.Kill(i)
}

// RestartServer implements schedule.Target.
func (t *Target) RestartServer(ctx context.Context, i int) error {
	if err := t.server(i); err != nil {
		return err
	}
	return t.cluster.Restart(ctx, i)
}

// PauseServer implements schedule.Target.
func (t *Target) PauseServer(i int) error {
	if err := t.server(i); err != nil {
		return err
	}
	return t.cluster.Pause(i)
}

// ResumeServer implements schedule.Target.
func (t *Target) ResumeServer(i int) error {
	if err := t.server(i); err != nil {
		return err
	}
	return t.cluster.Resume(i)
}

// Leader implements schedule.Target.
func (t *Target) Leader(ctx context.Context) (int, error) {
	if t.leader == nil {
		return -1, unsupported("no way to find the leader")
	}
	return t.leader(ctx)
}

func (t *Target) groups() []proxy.Group {
	gs := make([]proxy.Group, 0, 1+len(t.own))
	if len(t.shared) > 0 {
		gs = append(gs, t.shared)
	}
	for _, g := range t.own {
		gs = append(gs, g)
	}
	return gs
}

// SetLatency implements schedule.Target.
func (t *Target) SetLatency(base, jitter time.Duration) error {
	gs := t.groups()
	if len(gs) == 0 {
		return unsupported("no fault proxies")
	}
	for _, g := range gs {
		g.SetLatency(base, jitter)
	}
	return nil
}

// clientGroup returns client c's own proxies, or nil if c is reached by tag
// on the shared proxies.
func (t *Target) clientGroup(c int) (proxy.Group, error) {
	if g, ok := t.own[c]; ok {
		return g, nil
	}
	if t.tagged && len(t.shared) > 0 {
		return nil, nil
	}
	return nil, unsupported(fmt.Sprintf("client %d's connections cannot be told apart (no proxy of its own, no tags)", c))
}

// Cut implements schedule.Target. A client's own proxies stay cut while
// either cut-all or its cut-client is in force.
func (t *Target) Cut(c int) error {
	return t.setCut(c, true)
}

// Restore implements schedule.Target.
func (t *Target) Restore(c int) error {
	return t.setCut(c, false)
}

func (t *Target) setCut(c int, cut bool) error {
	if c >= 0 {
		if _, err := t.clientGroup(c); err != nil {
			return err
		}
	} else if len(t.groups()) == 0 {
		return unsupported("no fault proxies")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c < 0 {
		t.cutAll = cut
	} else if cut {
		if t.cutClients == nil {
			t.cutClients = map[int]bool{}
		}
		t.cutClients[c] = true
	} else {
		delete(t.cutClients, c)
	}
	apply := func(g proxy.Group, cut bool) {
		if cut {
			g.Cut()
		} else {
			g.Restore()
		}
	}
	if len(t.shared) > 0 {
		apply(t.shared, t.cutAll)
		if c >= 0 && t.own[c] == nil {
			if cut {
				t.shared.CutClient(c)
			} else {
				t.shared.RestoreClient(c)
			}
		}
	}
	for i, g := range t.own {
		apply(g, t.cutAll || t.cutClients[i])
	}
	return nil
}

// Reset implements schedule.Target.
func (t *Target) Reset(c int) (int, error) {
	if c < 0 {
		gs := t.groups()
		if len(gs) == 0 {
			return 0, unsupported("no fault proxies")
		}
		n := 0
		for _, g := range gs {
			n += g.ResetAll()
		}
		return n, nil
	}
	g, err := t.clientGroup(c)
	if err != nil {
		return 0, err
	}
	if g == nil {
		return t.shared.ResetClient(c), nil
	}
	return g.ResetAll(), nil
}

// PauseClient implements schedule.Target.
func (t *Target) PauseClient(c int) error {
	if t.workers == nil {
		return unsupported("clients do not run in worker processes")
	}
	return t.workers.Pause(c)
}

// ResumeClient implements schedule.Target.
func (t *Target) ResumeClient(c int) error {
	if t.workers == nil {
		return unsupported("clients do not run in worker processes")
	}
	return t.workers.Resume(c)
}

// KillClient implements schedule.Killer.
func (t *Target) KillClient(c int) error {
	if t.killers == nil {
		return unsupported("clients do not run in worker processes")
	}
	return t.killers.KillClient(c)
}

// KillHolder implements schedule.Killer.
func (t *Target) KillHolder() error {
	if t.killers == nil {
		return unsupported("clients do not run in worker processes")
	}
	return t.killers.KillHolder()
}

// ErrNoSession: expire-session named a client with no open session.
var ErrNoSession = errors.New("faults: client has no open session")

// ExpireSession implements schedule.Target.
func (t *Target) ExpireSession(ctx context.Context, c int) error {
	if t.expirer == nil {
		return unsupported("sessions cannot be expired on demand")
	}
	t.mu.Lock()
	var id int64
	if c >= 0 && c < len(t.sessions) {
		id = t.sessions[c]
	}
	t.mu.Unlock()
	if id == 0 {
		return fmt.Errorf("%w: client %d", ErrNoSession, c)
	}
	return t.expirer.Expire(ctx, id)
}
