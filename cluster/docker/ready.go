package docker

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/fourlw"
)

// waitReady polls the given members until each serves: ZooKeeper's srvr
// names a mode, etcd's Status knows a leader. With whole (the ensemble
// started together) exactly one ZooKeeper member must lead. It fails early
// when a member's container is no longer running, quoting its log.
func (c *Cluster) waitReady(ctx context.Context, idx []int, whole bool) error {
	var last error
	for {
		ready, leaders := 0, 0
		for _, i := range idx {
			if running, err := c.running(ctx, i); err == nil && !running {
				return fmt.Errorf("cluster/docker: %s exited during start; its log ends:\n%s", c.members[i].Name, c.logTail(ctx, i))
			}
			lead, err := c.serves(ctx, i)
			if err != nil {
				last = err
				continue
			}
			ready++
			if lead {
				leaders++
			}
		}
		if ready == len(idx) && (c.kind == backends.Etcd || !whole || len(c.members) == 1 || leaders == 1) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster/docker: not ready (%d of %d serving; last: %v): %w; %s's log ends:\n%s",
				ready, len(idx), last, ctx.Err(), c.members[idx[0]].Name, c.logTail(ctx, idx[0]))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// serves asks member i whether it serves now, and whether it leads.
func (c *Cluster) serves(ctx context.Context, i int) (leads bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	ep := c.members[i].Endpoint
	if c.kind == backends.ZooKeeper {
		reply, err := fourlw.Query(ctx, ep, "srvr")
		if err != nil {
			return false, err
		}
		s, err := fourlw.ParseSrvr(reply)
		if err != nil {
			return false, err
		}
		switch s.Mode {
		case "leader", "standalone":
			return true, nil
		case "follower", "observer":
			return false, nil
		}
		return false, fmt.Errorf("mode %q", s.Mode)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 500 * time.Millisecond, Logger: zap.NewNop(), Context: ctx})
	if err != nil {
		return false, err
	}
	defer cli.Close()
	st, err := cli.Status(ctx, ep)
	if err != nil {
		return false, err
	}
	if st.Leader == 0 {
		return false, fmt.Errorf("no leader yet")
	}
	return st.Leader == st.Header.MemberId, nil
}

// Leader returns the index of the member that leads now, asking each
// under ctx; an error if none says so.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	var last error
	for i := range c.members {
		lead, err := c.serves(ctx, i)
		if err != nil {
			last = err
			continue
		}
		if lead {
			return i, nil
		}
	}
	return -1, fmt.Errorf("cluster/docker: no member leads (last: %v)", last)
}
