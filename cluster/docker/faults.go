package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// ErrNoMember: the member index is out of range.
var ErrNoMember = errors.New("cluster/docker: no such member")

// faultTimeout bounds each engine call of Kill, Pause and Resume, whose
// signatures (faults.Cluster's) take no context.
const faultTimeout = 30 * time.Second

func (c *Cluster) member(i int) (*Member, error) {
	if i < 0 || i >= len(c.members) || c.members[i].ctr == nil {
		return nil, fmt.Errorf("%w: %d (members 0..%d)", ErrNoMember, i, len(c.members)-1)
	}
	return c.members[i], nil
}

// running reports whether member i's container runs (a paused one does).
func (c *Cluster) running(ctx context.Context, i int) (bool, error) {
	m, err := c.member(i)
	if err != nil {
		return false, err
	}
	res, err := c.cli.ContainerInspect(ctx, m.ctr.GetContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		return false, err
	}
	st := res.Container.State
	return st != nil && st.Running, nil
}

// Kill SIGKILLs member i's container (the engine unfreezes a paused one
// first) and waits until it has exited.
func (c *Cluster) Kill(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	if _, err := c.cli.ContainerKill(ctx, m.ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		if running, ierr := c.running(ctx, i); ierr == nil && !running {
			return nil // already down
		}
		return fmt.Errorf("cluster/docker: kill %s: %w", m.Name, err)
	}
	for {
		running, err := c.running(ctx, i)
		if err != nil {
			return fmt.Errorf("cluster/docker: kill %s: %w", m.Name, err)
		}
		if !running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster/docker: kill %s: still running: %w", m.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Restart starts member i's container again (killing it first if it runs)
// and waits under ctx until it serves. The container keeps its file system
// (the member's data) and its address; a partitioned member is reconnected.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	if running, err := c.running(ctx, i); err != nil {
		return fmt.Errorf("cluster/docker: restart %s: %w", m.Name, err)
	} else if running {
		if err := c.Kill(i); err != nil {
			return err
		}
	}
	if err := c.Heal(ctx, i); err != nil {
		return err
	}
	if _, err := c.cli.ContainerStart(ctx, m.ctr.GetContainerID(), client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("cluster/docker: start %s: %w", m.Name, err)
	}
	return c.waitReady(ctx, []int{i}, false)
}

// Pause freezes member i's container (the cgroup freezer: docker pause).
func (c *Cluster) Pause(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	if _, err := c.cli.ContainerPause(ctx, m.ctr.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("cluster/docker: pause %s: %w", m.Name, err)
	}
	return nil
}

// Resume thaws member i's container.
func (c *Cluster) Resume(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	if _, err := c.cli.ContainerUnpause(ctx, m.ctr.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("cluster/docker: resume %s: %w", m.Name, err)
	}
	return nil
}

// Partition disconnects member i's container from the cluster's network:
// it no longer reaches its peers nor its clients, and they not it (open
// connections are not reset: their packets go nowhere). The member keeps
// running.
func (c *Cluster) Partition(ctx context.Context, i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.partitioned[i] {
		return nil
	}
	if _, err := c.cli.NetworkDisconnect(ctx, c.net.ID, client.NetworkDisconnectOptions{Container: m.ctr.GetContainerID(), Force: true}); err != nil {
		return fmt.Errorf("cluster/docker: partition %s: %w", m.Name, err)
	}
	c.partitioned[i] = true
	return nil
}

// Heal reconnects a partitioned member i to the network at its address.
// A member not partitioned is left alone.
func (c *Cluster) Heal(ctx context.Context, i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.partitioned[i] {
		return nil
	}
	_, err = c.cli.NetworkConnect(ctx, c.net.ID, client.NetworkConnectOptions{
		Container: m.ctr.GetContainerID(),
		EndpointConfig: &network.EndpointSettings{
			IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: m.Addr},
			Aliases:    []string{m.Name},
		},
	})
	if err != nil {
		return fmt.Errorf("cluster/docker: heal %s: %w", m.Name, err)
	}
	delete(c.partitioned, i)
	return nil
}

// PIDs maps each running member's endpoint to the host's process id of its
// container's first process (the JVM, or zkbench as an etcd member: both
// images exec their server), the shape backends/zookeeper's
// WithServerPIDFunc takes: the host reads their CPU and memory in /proc as
// it does a local server's. A restart gives a new process id. Each lookup
// is bounded by 5 s.
func (c *Cluster) PIDs() map[string]int {
	pids := make(map[string]int)
	for _, m := range c.members {
		if m.ctr == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := c.cli.ContainerInspect(ctx, m.ctr.GetContainerID(), client.ContainerInspectOptions{})
		cancel()
		if err == nil && res.Container.State != nil && res.Container.State.Running && res.Container.State.Pid > 0 {
			pids[m.Endpoint] = res.Container.State.Pid
		}
	}
	return pids
}
