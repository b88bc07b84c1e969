package docker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"strings"
	"sync"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/zkbench/zkbench/backends"
)

// Errors of Start, checked with errors.Is.
var (
	// ErrNoEngine: no Docker engine answers.
	ErrNoEngine = errors.New("cluster/docker: no Docker engine answers")
	// ErrNoImage: an image the cluster needs is not on the engine; nothing
	// is pulled (there is no registry): `make images` builds it.
	ErrNoImage = errors.New("cluster/docker: image not found")
)

// reaperImage is the image of testcontainers-go's reaper (Ryuk) at
// v0.45.0. It cannot be pulled here; without it the reaper is turned off
// and the cluster removes its containers and network itself.
const reaperImage = "testcontainers/ryuk:0.14.0"

// ryukEnv is testcontainers-go's switch for its reaper.
const ryukEnv = "TESTCONTAINERS_RYUK_DISABLED"

var configureOnce sync.Once

// configure sets testcontainers-go up for this process, once: its default
// logger is silenced (it prints a banner to stderr on every new provider),
// and its reaper turned off when the reaper's image is not on the engine
// (unless the user set ryukEnv). It must run before testcontainers-go reads
// its configuration, which it does once per process: so before the first
// container or network of the process.
func configure(ctx context.Context, cli *client.Client) {
	configureOnce.Do(func() {
		tclog.SetDefault(tclog.NewNoopLogger())
		if _, set := os.LookupEnv(ryukEnv); set {
			return
		}
		if _, err := cli.ImageInspect(ctx, reaperImage); err != nil {
			_ = os.Setenv(ryukEnv, "true")
		}
	})
}

// engine connects to the Docker engine of the environment (DOCKER_HOST or
// the local socket) and checks that it answers under ctx. Where that is a
// unix socket that does not exist it fails at once, asking nothing.
func engine(ctx context.Context) (*client.Client, error) {
	if path, absent := absentSocket(); absent {
		return nil, fmt.Errorf("%w: no socket at %s (is dockerd running? is DOCKER_HOST right?)", ErrNoEngine, path)
	}
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoEngine, err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("%w: %w (is dockerd running? is DOCKER_HOST right?)", ErrNoEngine, err)
	}
	return cli, nil
}

// EngineConfigured reports, at the cost of a stat, whether the environment
// names an engine that could answer: DOCKER_HOST names one, or a socket is
// at the default path. It does not ask the engine.
func EngineConfigured() bool {
	_, absent := absentSocket()
	return !absent
}

// absentSocket reports whether the engine's address (DOCKER_HOST, else
// the default) is a unix socket that does not exist: a stat, so that a
// machine without Docker learns it in microseconds. Another address (tcp,
// ssh) may answer and must be asked.
func absentSocket() (path string, absent bool) {
	host := os.Getenv(client.EnvOverrideHost)
	if host == "" {
		host = client.DefaultDockerHost
	}
	path, ok := strings.CutPrefix(host, "unix://")
	if !ok {
		return "", false
	}
	_, err := os.Stat(path)
	return path, errors.Is(err, os.ErrNotExist)
}

// CheckImage reports whether image is on the engine, as ErrNoImage with
// what builds it.
func CheckImage(ctx context.Context, cli *client.Client, image string) error {
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		return fmt.Errorf("%w: %s (%v): build it with `make images`; nothing can be pulled", ErrNoImage, image, err)
	}
	return nil
}

// newNetwork creates the cluster's bridge network on a /24 subnet of its
// own, so that every member keeps a fixed address across restarts and
// partitions (the engine gives a chosen address only on a network with a
// configured subnet). The subnet is picked at random in 172.24.0.0/13;
// one already in use is skipped and another tried.
func newNetwork(ctx context.Context, labels map[string]string) (*testcontainers.DockerNetwork, netip.Prefix, error) {
	var last error
	for range 16 {
		subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{172, byte(24 + rand.IntN(8)), byte(rand.IntN(256)), 0}), 24)
		gw := subnet.Addr().Next()
		nw, err := tcnetwork.New(ctx,
			tcnetwork.WithLabels(labels),
			tcnetwork.WithIPAM(&network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: subnet, Gateway: gw}}}),
		)
		if err == nil {
			return nw, subnet, nil
		}
		last = err
		if ctx.Err() != nil || !strings.Contains(strings.ToLower(err.Error()), "overlap") {
			break
		}
	}
	return nil, netip.Prefix{}, fmt.Errorf("cluster/docker: create network: %w", last)
}

// memberAddr is member i's address on subnet: .10, .11, ...
func memberAddr(subnet netip.Prefix, i int) netip.Addr {
	b := subnet.Addr().As4()
	b[3] = byte(10 + i)
	return netip.AddrFrom4(b)
}

// Available checks under ctx that an engine answers and holds the image a
// cluster of kind runs by default (ErrNoEngine, ErrNoImage).
func Available(ctx context.Context, kind backends.Kind) error {
	cli, err := engine(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	return CheckImage(ctx, cli, defaultImage(kind))
}
