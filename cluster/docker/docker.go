// Package docker starts zkbench's servers as Docker containers, through
// testcontainers-go: a ZooKeeper standalone server or ensemble from the
// zkbench/zookeeper image (Debian's packages, see docker/), or etcd members
// from the zkbench/zkbench image (the static zkbench binary running
// `__etcd-member`). Both images are built locally by `make images`; nothing
// is pulled.
//
// Every cluster has a bridge network of its own on which each member has a
// fixed address; clients reach the members there (on Linux the host routes
// to a bridge network), as they would reach a remote cluster. Faults use the
// engine's own means (Kill, Restart, Pause through the cgroup freezer,
// Partition by disconnecting a member from the network) and satisfy
// faults.Cluster and faults.Partitioner.
//
// testcontainers-go's reaper is turned off when its image is absent (it
// cannot be pulled here): Stop removes every container and the network, and
// so does a failed Start. A process killed outright (SIGKILL, a crash, a
// reboot) leaves them behind; they are labelled with their cluster
// (LabelCluster) and the process that made them (LabelOwner), and
// RemoveLeftovers, which `zkbench run` and `zkbench clean` call, removes
// those whose owner no longer runs.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/zkbench/zkbench/backends"
	etcdcluster "github.com/zkbench/zkbench/cluster/etcd"
	"github.com/zkbench/zkbench/cluster/internal/members"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
)

// Images used when Options.Image is empty: the last `make images`, unless
// the environment names others.
const (
	DefaultZooKeeperImage = "zkbench/zookeeper:latest"
	DefaultZkbenchImage   = "zkbench/zkbench:latest"
	// Environment variables that override the defaults.
	ZooKeeperImageEnv = "ZKBENCH_ZOOKEEPER_IMAGE"
	ZkbenchImageEnv   = "ZKBENCH_ZKBENCH_IMAGE"
)

// LabelCluster labels every container and network of a cluster with its
// name; LabelOwner (owner.go) with the process that started it.
const LabelCluster = "zkbench.cluster"

// Ports inside the containers.
const (
	zkClientPort   = 2181
	etcdClientPort = 2379
	etcdPeerPort   = 2380
)

// Options configure Start.
type Options struct {
	// Kind is backends.ZooKeeper or backends.Etcd.
	Kind backends.Kind
	// Nodes is 1 (the default) or an odd count up to 7.
	Nodes int
	// Image is the members' image; default DefaultZooKeeperImage or
	// DefaultZkbenchImage (or the environment's, see ZooKeeperImageEnv).
	Image string
	// SessionTimeout is the ZooKeeper session timeout the clients will
	// ask for: the ensemble's timing follows it (zookeeper.TimingFor).
	// Zero: ZooKeeper's default timing.
	SessionTimeout time.Duration
	// TickTime, if set, overrides the timing's tick (tests); HeapMB is
	// each JVM's -Xmx (default 256).
	TickTime time.Duration
	HeapMB   int
	// UnsafeNoFsync: etcd members skip fsync (tests). Default off.
	UnsafeNoFsync bool
}

// Member is one server: its container and its address on the network.
type Member struct {
	Name     string
	Addr     netip.Addr
	Endpoint string
	ctr      *testcontainers.DockerContainer
}

// Cluster is a set of running server containers on their own network. Its
// methods may be called concurrently.
type Cluster struct {
	kind    backends.Kind
	name    string
	cli     *client.Client
	net     *testcontainers.DockerNetwork
	members []*Member

	// creating is held while Start creates containers: Stop waits for a
	// creation in flight, so that it finds that container too.
	creating sync.Mutex
	// interrupted: a creation was cut short by its ctx; the engine may
	// still finish it after the client gave up (under creating).
	interrupted bool
	stopOnce    sync.Once
	stopErr     error

	mu          sync.Mutex
	partitioned map[int]bool
}

// Start creates the network, starts opts.Nodes containers and waits, under
// ctx, until every member serves and (for an ensemble) one leads. On
// failure it removes whatever it created, and the error quotes the log of
// the member that failed.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	n := opts.Nodes
	if n == 0 {
		n = 1
	}
	if n < 1 || n%2 == 0 || n > 7 {
		return nil, fmt.Errorf("cluster/docker: %d nodes: want 1 or an odd count up to 7", n)
	}
	if opts.Kind != backends.ZooKeeper && opts.Kind != backends.Etcd {
		return nil, fmt.Errorf("cluster/docker: backend %q: want zookeeper or etcd", opts.Kind)
	}
	image := opts.Image
	if image == "" {
		image = defaultImage(opts.Kind)
	}
	cli, err := engine(ctx)
	if err != nil {
		return nil, err
	}
	if err := CheckImage(ctx, cli, image); err != nil {
		_ = cli.Close()
		return nil, err
	}
	configure(ctx, cli)

	name := "zkbench-" + string(opts.Kind) + "-" + uuid.NewString()[:8]
	c = &Cluster{kind: opts.Kind, name: name, cli: cli, partitioned: map[int]bool{}}
	remember(c)
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = c.Stop(sctx)
		}
	}()
	labels := map[string]string{LabelCluster: name, LabelOwner: thisProcess().String()}
	c.creating.Lock()
	nw, subnet, err := newNetwork(ctx, labels)
	c.interrupted = err != nil && ctx.Err() != nil
	c.creating.Unlock()
	if err != nil {
		return c, err
	}
	c.net = nw
	for i := range n {
		m := &Member{Name: fmt.Sprintf("%s%d", shortKind(opts.Kind), i+1), Addr: memberAddr(subnet, i)}
		if opts.Kind == backends.ZooKeeper {
			m.Endpoint = netip.AddrPortFrom(m.Addr, zkClientPort).String()
		} else {
			m.Endpoint = "http://" + netip.AddrPortFrom(m.Addr, etcdClientPort).String()
		}
		c.members = append(c.members, m)
	}
	if err := c.create(ctx, opts, image, labels); err != nil {
		return c, err
	}
	if err := c.waitReady(ctx, members.All(n), true); err != nil {
		return c, err
	}
	return c, nil
}

// create creates and starts every member's container, in index order.
func (c *Cluster) create(ctx context.Context, opts Options, image string, labels map[string]string) error {
	c.creating.Lock()
	defer c.creating.Unlock()
	defer func() { c.interrupted = c.interrupted || ctx.Err() != nil }()
	nw := c.net
	for i, m := range c.members {
		var custom []testcontainers.ContainerCustomizer
		if opts.Kind == backends.ZooKeeper {
			custom = zkMember(opts, c.members, i)
		} else {
			custom = etcdMember(opts, c.members, i, c.name)
		}
		custom = append(custom,
			testcontainers.WithName(c.name+"-"+m.Name),
			testcontainers.WithLabels(labels),
			testcontainers.WithLogger(tclog.NewNoopLogger()),
			tcnetwork.WithNetwork([]string{m.Name}, nw),
			testcontainers.WithEndpointSettingsModifier(func(s map[string]*network.EndpointSettings) {
				if es := s[nw.Name]; es != nil {
					es.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: m.Addr}
				}
			}),
		)
		ctr, err := testcontainers.Run(ctx, image, custom...)
		if ctr != nil {
			m.ctr = ctr
		}
		if err != nil {
			return fmt.Errorf("cluster/docker: start %s: %w", m.Name, err)
		}
	}
	return nil
}

func defaultImage(kind backends.Kind) string {
	if kind == backends.ZooKeeper {
		if s := os.Getenv(ZooKeeperImageEnv); s != "" {
			return s
		}
		return DefaultZooKeeperImage
	}
	if s := os.Getenv(ZkbenchImageEnv); s != "" {
		return s
	}
	return DefaultZkbenchImage
}

func shortKind(k backends.Kind) string {
	if k == backends.ZooKeeper {
		return "zk"
	}
	return "etcd"
}

// zkMember configures ZooKeeper member i through the image's environment
// (docker/zookeeper/zk-run).
func zkMember(opts Options, all []*Member, i int) []testcontainers.ContainerCustomizer {
	tm := zkcluster.TimingFor(opts.SessionTimeout)
	if opts.TickTime > 0 {
		tm.Tick = opts.TickTime
	}
	heap := 256
	if opts.HeapMB > 0 {
		heap = opts.HeapMB
	}
	env := tm.Env()
	env["ZOO_HEAP_MB"] = strconv.Itoa(heap)
	if len(all) > 1 {
		servers := make([]string, len(all))
		for j, o := range all {
			servers[j] = fmt.Sprintf("server.%d=%s:2888:3888", j+1, o.Addr)
		}
		env["ZOO_MY_ID"] = strconv.Itoa(i + 1)
		env["ZOO_SERVERS"] = strings.Join(servers, " ")
	}
	return []testcontainers.ContainerCustomizer{testcontainers.WithEnv(env)}
}

// etcdMember runs member i as `zkbench __etcd-member` on its own address.
// A restarted container runs the same command: etcd then finds its data
// and ignores the initial cluster.
func etcdMember(opts Options, all []*Member, i int, token string) []testcontainers.ContainerCustomizer {
	peers := make([]etcdcluster.MemberConfig, len(all))
	for j, o := range all {
		peers[j] = etcdcluster.MemberConfig{Name: o.Name, PeerURL: "http://" + netip.AddrPortFrom(o.Addr, etcdPeerPort).String()}
	}
	ic := make([]string, len(peers))
	for j, p := range peers {
		ic[j] = p.Name + "=" + p.PeerURL
	}
	m := etcdcluster.MemberConfig{
		Name: all[i].Name, DataDir: "/data", ClientURL: all[i].Endpoint, PeerURL: peers[i].PeerURL,
		InitialCluster: strings.Join(ic, ","), ClusterState: "new", Token: token, UnsafeNoFsync: opts.UnsafeNoFsync,
	}
	return []testcontainers.ContainerCustomizer{testcontainers.WithCmd(append([]string{etcdcluster.MemberCommand}, m.Args()...)...)}
}

// Name is the cluster's name: its network's label and its containers'
// prefix.
func (c *Cluster) Name() string { return c.name }

// Network is the name of the cluster's Docker network.
func (c *Cluster) Network() string { return c.net.Name }

// Members returns the members in index order.
func (c *Cluster) Members() []Member {
	out := make([]Member, len(c.members))
	for i, m := range c.members {
		out[i] = *m
	}
	return out
}

// Endpoints returns every member's client address on the network:
// "IP:2181" for ZooKeeper, "http://IP:2379" for etcd.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.Endpoint
	}
	return eps
}

// Stop removes every container of the cluster (forced: a paused or
// partitioned one too; found by its label, so also one whose creation a
// cancel interrupted) and its network. It runs on a fresh context bounded
// by 30 s, so that it also cleans up after a cancelled run. Safe to call
// twice, and concurrently: a second call waits for the first.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() { c.stopErr = c.stop(ctx) })
	return c.stopErr
}

func (c *Cluster) stop(ctx context.Context) error {
	c.creating.Lock() // a creation in flight ends soon: its ctx is cancelled or bounded
	interrupted := c.interrupted
	c.creating.Unlock()
	defer forget(c)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := removeCluster(ctx, c.cli, c.name)
	if interrupted {
		// A request whose client gave up may still complete on the
		// engine: look again a moment later.
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		err = errors.Join(err, removeCluster(ctx, c.cli, c.name))
	}
	return errors.Join(err, c.cli.Close())
}

// removeCluster removes the containers (forced), then the networks,
// labelled with cluster name.
func removeCluster(ctx context.Context, cli *client.Client, name string) error {
	f := client.Filters{}.Add("label", LabelCluster+"="+name)
	var errs []error
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("cluster/docker: list containers: %w", err))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, ctr := range cs.Items {
		wg.Go(func() {
			_, err := cli.ContainerRemove(ctx, ctr.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			if err != nil && !isNotFound(err) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("cluster/docker: remove %s: %w", strings.Join(ctr.Names, ","), err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("cluster/docker: list networks: %w", err))
	}
	for _, n := range ns.Items {
		if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("cluster/docker: remove network %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// live are the clusters started and not yet stopped, for StopAll.
var (
	liveMu sync.Mutex
	live   = map[*Cluster]bool{}
)

func remember(c *Cluster) { liveMu.Lock(); live[c] = true; liveMu.Unlock() }
func forget(c *Cluster)   { liveMu.Lock(); delete(live, c); liveMu.Unlock() }

// StopAll stops every cluster of this process not yet stopped: for a
// process about to exit at once (a second Ctrl-C), whose containers would
// otherwise outlive it.
func StopAll(ctx context.Context) error {
	liveMu.Lock()
	cs := make([]*Cluster, 0, len(live))
	for c := range live {
		cs = append(cs, c)
	}
	liveMu.Unlock()
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Stop(ctx))
	}
	return errors.Join(errs...)
}

func isNotFound(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "No such") || strings.Contains(err.Error(), "not found"))
}

// logTail is the end of member i's output, for errors.
func (c *Cluster) logTail(ctx context.Context, i int) string {
	m := c.members[i]
	if m.ctr == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	rc, err := m.ctr.Logs(ctx)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}
