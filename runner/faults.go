package runner

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/zkbench/zkbench/backends"
	etcdbackend "github.com/zkbench/zkbench/backends/etcd"
	zkbackend "github.com/zkbench/zkbench/backends/zookeeper"
	"github.com/zkbench/zkbench/faults"
	"github.com/zkbench/zkbench/faults/proxy"
	"github.com/zkbench/zkbench/faults/schedule"
	"github.com/zkbench/zkbench/workloads"
)

// faultRig is a run's fault injection, set up when --fault is given: the
// backend the cases' clients use (through proxies when a network fault is
// asked for, watching ZooKeeper sessions), the target the faults act on and
// the session timeline.
type faultRig struct {
	specs    []schedule.Fault
	backend  backends.Backend
	target   *faults.Target
	sessions *faults.SessionTimeline
	closers  []func() error
	workers  *lockWorkers // nil unless a fault pauses a client

	// The fault clock of a case starts once each of its clients has a
	// session: before, faults would hit the opening of sessions instead.
	mu      sync.Mutex
	expect  int
	opened  map[int]bool
	allOpen chan struct{}
}

// startCase arms the "every client connected" signal for a case of n
// clients.
func (rig *faultRig) startCase(n int) <-chan struct{} {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	rig.expect, rig.opened, rig.allOpen = n, map[int]bool{}, make(chan struct{})
	return rig.allOpen
}

// sessionOpened counts client's new session toward the signal.
func (rig *faultRig) sessionOpened(client int) {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	if rig.opened == nil || client < 0 || rig.opened[client] {
		return
	}
	rig.opened[client] = true
	if len(rig.opened) == rig.expect {
		close(rig.allOpen)
	}
}

// netActions are the faults that need proxies in front of the servers.
var netActions = []schedule.Action{schedule.Latency, schedule.CutClient, schedule.CutAll, schedule.ResetConns}

func needsProxies(fs []schedule.Fault) bool {
	return slices.ContainsFunc(fs, func(f schedule.Fault) bool { return slices.Contains(netActions, f.Action) })
}

// namedClients are the clients that network faults single out.
func namedClients(fs []schedule.Fault) []int {
	var out []int
	for _, f := range fs {
		if (f.Action == schedule.CutClient || f.Action == schedule.ResetConns) && f.Client >= 0 && !slices.Contains(out, f.Client) {
			out = append(out, f.Client)
		}
	}
	return out
}

// hostPort strips a URL scheme: proxies forward TCP to host:port.
func hostPort(ep string) (hp, scheme string) {
	if u, err := url.Parse(ep); err == nil && u.Scheme != "" && u.Host != "" {
		return u.Host, u.Scheme
	}
	return ep, ""
}

// needsSessionExpiry reports whether the plan ends sessions on the server
// without their client's help where only a fault rig can: --kill expire on
// ZooKeeper (the failover and observers workloads), whose sessions are
// expired through the rig's session watcher.
func needsSessionExpiry(p *plan) bool {
	return p.kind == backends.ZooKeeper && p.cfg.Params[workloads.ParamKill] == workloads.KillExpire
}

// setupFaults builds the fault rig when the plan has faults, or needs
// sessions expired on ZooKeeper (then with no fault to fire, but with the
// session watcher, its expirer and the session timeline). Without either,
// cases use the server's backend as before.
func (r *Runner) setupFaults(ctx context.Context, srv *server) (err error) {
	p := r.plan
	if len(p.faults) == 0 && !needsSessionExpiry(p) {
		return nil
	}
	rig := &faultRig{specs: p.faults, sessions: faults.NewSessionTimeline(r.log)}
	defer func() {
		if err != nil {
			rig.close()
		}
	}()
	direct := srv.endpoints
	opts := []faults.TargetOption{faults.WithClients(slices.Min(p.cfg.Clients))}
	if srv.cluster != nil {
		leader := faults.EtcdLeader(direct)
		if p.kind == backends.ZooKeeper {
			leader = faults.ZooKeeperLeader(direct)
		}
		opts = append(opts, faults.WithCluster(srv.cluster, len(direct), leader))
	}

	var (
		zs      *faults.ZKSessions
		expirer faults.Expirer
	)
	if p.kind == backends.ZooKeeper {
		zs = faults.NewZKSessions(rig.sessions.Observe)
		expirer = faults.ZKExpirer{Sessions: zs, Endpoints: direct}
	} else if tls := p.Servers.TLS; tls.CAFile == "" && tls.CertFile == "" && p.Servers.Username == "" && !tls.InsecureSkipVerify {
		e := faults.NewEtcdExpirer(direct)
		rig.closers = append(rig.closers, e.Close)
		expirer = e
	}
	if expirer != nil {
		opts = append(opts, faults.WithExpirer(expirer))
	}

	// openOn opens a client backend on endpoints, with the run's settings.
	// Its counters are not read: see WithScraper below.
	openOn := func(eps []string) (backends.Backend, error) {
		if p.kind == backends.ZooKeeper {
			return zkbackend.New(p.zkConfig(eps), zkbackend.WithDialer(zs.Dialer(nil)))
		}
		cfg := etcdConfig(eps, p.Servers)
		cfg.Embedded = p.mode == Embedded
		return etcdbackend.New(cfg)
	}
	// proxied starts one proxy per server and returns it with the endpoints
	// clients give instead of the servers'.
	proxied := func(popts ...proxy.Option) (proxy.Group, []string, error) {
		targets := make([]string, len(direct))
		schemes := make([]string, len(direct))
		for i, ep := range direct {
			targets[i], schemes[i] = hostPort(ep)
		}
		g, err := proxy.NewGroup(context.WithoutCancel(ctx), targets, popts...)
		if err != nil {
			return nil, nil, err
		}
		rig.closers = append(rig.closers, g.Close)
		eps := g.Addrs()
		for i, a := range eps {
			if schemes[i] != "" {
				eps[i] = schemes[i] + "://" + a
			}
		}
		return g, eps, nil
	}

	eps := direct
	own := map[int]backends.Backend{}
	if needsProxies(p.faults) {
		var popts []proxy.Option
		if zs != nil {
			// ZooKeeper clients are told apart by the session in their
			// handshake: one set of proxies serves every client.
			tags := proxy.NewTags()
			zs.TagClients(tags)
			popts = append(popts, proxy.WithTags(tags))
			opts = append(opts, faults.WithTaggedClients())
		}
		g, peps, err := proxied(popts...)
		if err != nil {
			return err
		}
		eps = peps
		opts = append(opts, faults.WithProxies(g))
		if zs == nil {
			// etcd clients cannot be told apart on the wire: a client that
			// a fault singles out gets proxies and a backend of its own.
			groups := map[int]proxy.Group{}
			for _, c := range namedClients(p.faults) {
				cg, ceps, err := proxied()
				if err != nil {
					return err
				}
				b, err := openOn(ceps)
				if err != nil {
					return err
				}
				groups[c], own[c] = cg, b
			}
			opts = append(opts, faults.WithClientProxies(groups))
		}
	}
	if rig.workers, err = newLockWorkers(p, eps); err != nil {
		return err
	}
	if rig.workers != nil {
		opts = append(opts, faults.WithWorkers(rig.workers), faults.WithKillers(rig.workers, rig.workers.holders))
	}
	shared, err := openOn(eps)
	if err != nil {
		for _, b := range own {
			_ = b.Close()
		}
		return err
	}
	rig.target = faults.NewTarget(opts...)
	// The servers' counters are read straight from them, not through the
	// proxies a fault may cut or slow; the workloads' --kill expire uses
	// the target's expirer.
	var bopts []faults.BackendOption
	if s, ok := srv.backend.(backends.Scraper); ok {
		bopts = append(bopts, faults.WithScraper(s))
	}
	if expirer != nil {
		bopts = append(bopts, faults.WithSessionExpirer(expirer))
	}
	if zs == nil {
		bopts = append(bopts, faults.WithEtcdConnStates(rig.sessions.Observe))
	}
	onSession := func(client int, session int64) {
		rig.sessionOpened(client)
		rig.target.SetSession(client, session)
		rig.sessions.SetSession(session, client)
		if zs != nil {
			zs.SetClient(session, client)
		}
	}
	if rig.workers != nil {
		rig.workers.onSession = onSession
	}
	rig.backend = faults.NewBackend(shared, own, onSession, bopts...)
	rig.closers = append([]func() error{rig.backend.Close}, rig.closers...)
	if len(p.faults) == 0 {
		r.faults = rig
		return nil
	}
	if err := schedule.Validate(p.faults, rig.target.Limits()); err != nil {
		return fmt.Errorf("--fault: %w", err)
	}
	names := make([]string, len(p.faults))
	for i, fl := range p.faults {
		names[i] = fl.String()
		if end := fl.End(); end > p.cfg.Warmup+p.cfg.Duration {
			r.progress("  note: %s ends at %v, after a case's warm-up and duration (%v): it may not fire or end within the case",
				fl, end, p.cfg.Warmup+p.cfg.Duration)
		}
	}
	r.progress("  faults: %s (times from when each case's clients are connected)", strings.Join(names, ", "))
	r.faults = rig
	return nil
}

func (rig *faultRig) close() {
	for _, c := range rig.closers {
		_ = c()
	}
}

// closeFaults releases the rig's backend, proxies and clients.
func (r *Runner) closeFaults() {
	if r.faults != nil {
		r.faults.close()
	}
}

// caseBackend is the backend cases open their sessions on.
func (r *Runner) caseBackend(srv *server) backends.Backend {
	if r.faults != nil {
		return r.faults.backend
	}
	return srv.backend
}
