package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/fourlw"
)

// Preflight errors, checked with errors.Is. Their messages say what to do.
var (
	ErrBadEndpoint  = errors.New("zookeeper: malformed endpoint")
	ErrUnreachable  = errors.New("zookeeper: server unreachable")
	ErrNotZooKeeper = errors.New("zookeeper: not a ZooKeeper server")
	// ErrFourLetterWords: a command zkbench needs (srvr, conf, mntr) is
	// not in the server's 4lw.commands.whitelist.
	ErrFourLetterWords = errors.New("zookeeper: four-letter words not whitelisted")
	ErrNotServing      = errors.New("zookeeper: server not serving")
	// ErrClientLimit: maxClientCnxns is below what zkbench will open.
	ErrClientLimit = errors.New("zookeeper: per-IP connection limit too low")
)

// whitelistLine is the zoo.cfg line that lets zkbench in.
const whitelistLine = "4lw.commands.whitelist=srvr,conf,mntr,ruok"

// defaultPreflightTimeout applies when ctx has no deadline.
const defaultPreflightTimeout = 3 * time.Second

// Preflight checks every endpoint in parallel under ctx's deadline (3 s if
// it has none): a TCP connection, then the four-letter words srvr (version
// and role), conf (maxClientCnxns) and mntr (needed by Scrape). It never
// opens a session. Errors say what is wrong and what to do.
func (b *Backend) Preflight(ctx context.Context) (backends.ClusterInfo, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultPreflightTimeout)
		defer cancel()
	}
	info := backends.ClusterInfo{Kind: backends.ZooKeeper, Members: make([]backends.MemberInfo, len(b.cfg.Endpoints))}
	limits := make([]int, len(b.cfg.Endpoints))
	errs := make([]error, len(b.cfg.Endpoints))
	var wg sync.WaitGroup
	for i, ep := range b.cfg.Endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info.Members[i], limits[i], errs[i] = b.probe(ctx, ep)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return info, err
	}
	// The tightest positive limit wins; 0 means unlimited.
	for _, l := range limits {
		if l > 0 && (info.MaxClientCnxns == 0 || l < info.MaxClientCnxns) {
			info.MaxClientCnxns = l
		}
	}
	return info, nil
}

// probe checks one endpoint; limit is its maxClientCnxns.
func (b *Backend) probe(ctx context.Context, ep string) (m backends.MemberInfo, limit int, err error) {
	m = backends.MemberInfo{Endpoint: ep, PID: b.opts.serverPIDs()[ep]}
	if err := checkEndpoint(ep); err != nil {
		return m, 0, err
	}
	within := "the deadline"
	if d, ok := ctx.Deadline(); ok {
		within = time.Until(d).Round(100 * time.Millisecond).String()
	}
	start := time.Now()
	reply, err := fourlw.Query(ctx, ep, "srvr")
	m.RTT = time.Since(start)
	if err != nil {
		return m, 0, explain(ep, "srvr", within, err)
	}
	srvr, err := fourlw.ParseSrvr(reply)
	if err != nil {
		return m, 0, notZooKeeper(ep, reply)
	}
	m.Version, m.Role = srvr.Version, srvr.Mode
	reply, err = fourlw.Query(ctx, ep, "conf")
	if err != nil {
		return m, 0, explain(ep, "conf", within, err)
	}
	limit = -1
	if v, ok := fourlw.ParseConf(reply)["maxClientCnxns"]; ok {
		limit, _ = strconv.Atoi(v)
	}
	if limit < 0 {
		return m, 0, fmt.Errorf("%w: %s: conf shows no maxClientCnxns", ErrNotZooKeeper, ep)
	}
	if _, err := fourlw.Query(ctx, ep, "mntr"); err != nil {
		return m, 0, explain(ep, "mntr", within, err)
	}
	return m, limit, nil
}

// explain turns a four-letter-word failure into an actionable error.
func explain(ep, cmd, within string, err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("zookeeper: preflight %s: %w", ep, err)
	case errors.Is(err, fourlw.ErrUnreachable):
		return fmt.Errorf("%w: cannot reach ZooKeeper at %s within %s: is it running? (%v)", ErrUnreachable, ep, within, err)
	case errors.Is(err, fourlw.ErrNotWhitelisted):
		return fmt.Errorf("%w: ZooKeeper at %s refuses the four-letter word %q: add the line %q to its zoo.cfg (or set -Dzookeeper.4lw.commands.whitelist) and restart it", ErrFourLetterWords, ep, cmd, whitelistLine)
	case errors.Is(err, fourlw.ErrNotServing):
		return fmt.Errorf("%w: ZooKeeper at %s is up but not serving requests: an ensemble member without a quorum? check that a majority of its servers run", ErrNotServing, ep)
	case errors.Is(err, fourlw.ErrNoAnswer):
		return notZooKeeper(ep, "")
	}
	return fmt.Errorf("zookeeper: %s %s: %w", ep, cmd, err)
}

// notZooKeeper says that ep is something else, guessing etcd.
func notZooKeeper(ep, reply string) error {
	what := "no answer"
	if reply != "" {
		what = fmt.Sprintf("answered %.40q", strings.TrimSpace(reply))
	}
	return fmt.Errorf("%w: %s does not answer ZooKeeper's srvr (%s); is it etcd? use --backend etcd", ErrNotZooKeeper, ep, what)
}

// CheckClientLimit fails when the servers' per-IP connection limit
// (info.MaxClientCnxns, 0 = unlimited) is below clientsPerIP, the number of
// connections zkbench will hold from this host to one server. With
// Config.Conns = 0 that is one per session, plus one for the admin
// connection; pass the worst case (all of them on one server), since each
// session picks its server at random.
func CheckClientLimit(info backends.ClusterInfo, clientsPerIP int) error {
	if info.MaxClientCnxns <= 0 || clientsPerIP <= info.MaxClientCnxns {
		return nil
	}
	return fmt.Errorf("%w: the servers accept %d connections per client IP (maxClientCnxns=%d) but zkbench will open %d from this host: "+
		"set maxClientCnxns=0 (unlimited) or at least %d in every server's zoo.cfg and restart them, "+
		"or run fewer clients, or run zkbench from several hosts",
		ErrClientLimit, info.MaxClientCnxns, info.MaxClientCnxns, clientsPerIP, clientsPerIP)
}
