package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zkbench/zkbench/internal/fourlw"
	"github.com/zkbench/zkbench/internal/spawn"
)

// errPortTaken: a server could not bind a port picked free; Start retries.
var errPortTaken = errors.New("cluster/zookeeper: port already in use")

// waitReady polls srvr on the given members until each answers and, for an
// ensemble started whole, exactly one leads. It fails early when a member's
// process exits, quoting its log.
func (c *Cluster) waitReady(ctx context.Context, idx []int) error {
	members := c.Members()
	whole := len(idx) == len(members)
	var last error
	for {
		leaders, ready := 0, 0
		for _, i := range idx {
			p, _ := c.procs.Proc(i)
			if p == nil || !p.Running() {
				return c.startError(i, "exited during start")
			}
			qctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			reply, err := fourlw.Query(qctx, members[i].Endpoint(), "srvr")
			cancel()
			if err != nil {
				last = err
				continue
			}
			s, err := fourlw.ParseSrvr(reply)
			if err != nil {
				last = err
				continue
			}
			switch s.Mode {
			case "leader":
				leaders++
				ready++
			case "standalone", "follower", "observer":
				ready++
			}
		}
		if ready == len(idx) && (!whole || len(members) == 1 || leaders == 1) {
			return nil
		}
		select {
		case <-ctx.Done():
			return c.startError(idx[0], fmt.Sprintf("not ready (%d of %d serving, %d leaders; last: %v): %v", ready, len(idx), leaders, last, ctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startError describes a failed start with the tail of member i's log.
func (c *Cluster) startError(i int, what string) error {
	m := c.Members()[i]
	tail := spawn.LogTail(m.LogPath, 15)
	err := fmt.Errorf("cluster/zookeeper: server %d (%s) %s; log %s ends:\n%s", m.ID, m.Endpoint(), what, m.LogPath, tail)
	if strings.Contains(tail, "Address already in use") {
		return fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return err
}
