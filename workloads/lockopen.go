package workloads

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/workloads/measure"
)

// clientRemap opens sessions for in-process clients whose indices skip the
// worker clients: OpenClients' i-th session is client ids[i].
type clientRemap struct {
	backends.Backend
	ids []int
}

func (b clientRemap) NewSession(ctx context.Context) (backends.Session, error) {
	if i, ok := backends.ClientOf(ctx); ok && i >= 0 && i < len(b.ids) {
		ctx = backends.WithClient(ctx, b.ids[i])
	}
	return b.Backend.NewSession(ctx)
}

// lockClients opens c's in-process clients and starts its worker
// processes. ids[i] is the client index of clients.Sessions[i]; procs are
// the workers, in c.Processes.Clients order.
func lockClients(ctx context.Context, d *driver, lockPath, variant string, work *WorkSpec) (clients *measure.Clients, ids []int, procs []*lockProc, err error) {
	c, log := d.c, d.c.log()
	var remote []int
	if c.Processes != nil {
		remote = c.Processes.Clients
	}
	for i := range c.Clients {
		if !slices.Contains(remote, i) {
			ids = append(ids, i)
		}
	}
	if len(remote) > 0 {
		switch {
		case c.Config.Rate > 0:
			return nil, nil, nil, fmt.Errorf("%w: clients in worker processes need the closed loop (rate 0): the open loop's schedule is shared in this process", ErrBadCase)
		case len(ids) == 0:
			return nil, nil, nil, fmt.Errorf("%w: every one of the %d clients would run in a worker process: at least one must run here", ErrBadCase, c.Clients)
		case slices.ContainsFunc(remote, func(r int) bool { return r < 0 || r >= c.Clients }):
			return nil, nil, nil, fmt.Errorf("%w: worker clients %v: the case has clients 0..%d", ErrBadCase, remote, c.Clients-1)
		case c.Processes.Command == nil:
			return nil, nil, nil, fmt.Errorf("%w: worker clients without a command to run them", ErrBadCase)
		}
		spec := LockWorkerSpec{Variant: variant, Path: lockPath, Hold: c.Config.Hold, Think: c.Config.Think, Config: c.Processes.Config, Work: work}
		if procs, err = startLockProcs(ctx, c.Processes, spec); err != nil {
			return nil, nil, nil, err
		}
	}
	var b backends.Backend // the case's
	var opts []measure.OpenOption
	if len(remote) > 0 {
		b = clientRemap{Backend: c.Backend, ids: ids}
		opts = append(opts, measure.WithSessionEvents(func(kind, what string, i int) { log.Event(kind, what, ids[i]) }))
	}
	clients, err = d.open(ctx, len(ids), b, opts...)
	if err != nil {
		for _, p := range procs {
			p.kill()
		}
		return nil, nil, nil, err
	}
	// The workers' counts join the case's client counts as they report
	// them (their loops start later, in lockProc.run).
	for _, p := range procs {
		p.remote = clients.Remote()
	}
	return clients, ids, procs, nil
}

// procNote says how a case with worker clients counts them.
func procNote(procs []*lockProc, ledger bool) string {
	var ids, lost, unbounded []string
	for _, p := range procs {
		ids = append(ids, strconv.Itoa(p.client))
		switch {
		case p.unreported && len(p.gap) == 0:
			unbounded = append(unbounded, strconv.Itoa(p.client))
		case p.unreported:
			lost = append(lost, strconv.Itoa(p.client))
		}
	}
	writes := "their register writes arrived when this process read them"
	if ledger {
		writes = "their store requests are counted by their work too and reported with its commits"
	}
	where := "worker processes"
	if len(ids) == 1 {
		where = "a worker process"
	}
	note := fmt.Sprintf("%s ran in %s: their requests and watch events are in the client-side counts as each last reported them (with every event), and %s",
		clientList(ids), where, writes)
	if len(lost) > 0 {
		was := "was"
		if len(lost) > 1 {
			was = "were"
		}
		note += fmt.Sprintf("; %s %s killed between two reports: the calls made after the last are bounded by the most made between two, counted as in flight", clientList(lost), was)
	}
	if len(unbounded) > 0 {
		note += fmt.Sprintf("; %s reported fewer than twice before it was killed: the calls made after its last report are not in the counts, nor bounded", clientList(unbounded))
	}
	return note
}

// clientList names clients ids: "client 3", "clients 0, 1, 2".
func clientList(ids []string) string {
	if len(ids) == 1 {
		return "client " + ids[0]
	}
	return "clients " + strings.Join(ids, ", ")
}
