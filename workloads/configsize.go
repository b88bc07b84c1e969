package workloads

import (
	"fmt"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
)

// ParseSize and FormatSize read and write --size (figures.ParseSize).
var (
	ParseSize  = figures.ParseSize
	FormatSize = figures.FormatSize
)

// Largest request the servers accept by default, which bounds a config
// node's data (--size).
const (
	// ZooKeeperMaxBuffer is jute.maxbuffer's default, 0xfffff bytes: a
	// request packet larger than it is refused and its connection closed.
	ZooKeeperMaxBuffer = 0xfffff
	// EtcdMaxRequestBytes is etcd's --max-request-bytes default (1.5 MiB,
	// embed.DefaultMaxRequestBytes), the same on the embedded and local
	// servers zkbench starts, which leave it unset.
	EtcdMaxRequestBytes = 1536 * 1024
	// requestOverhead is room for the path and the request's headers.
	requestOverhead = 512
)

// MaxConfigSize is the largest --size whose write the servers of kind
// accept by default, and the limit's name.
func MaxConfigSize(kind backends.Kind) (int, string) {
	if kind == backends.ZooKeeper {
		return ZooKeeperMaxBuffer - requestOverhead, fmt.Sprintf("ZooKeeper's jute.maxbuffer (%d bytes by default)", ZooKeeperMaxBuffer)
	}
	return EtcdMaxRequestBytes - requestOverhead, fmt.Sprintf("etcd's --max-request-bytes (%d bytes by default)", EtcdMaxRequestBytes)
}

// CheckConfigSize refuses a config size the servers of kind would refuse,
// or one too small to carry the version stamp.
func CheckConfigSize(kind backends.Kind, size int) error {
	limit, what := MaxConfigSize(kind)
	switch {
	case size < minConfigSize:
		return fmt.Errorf("%w: --size %d bytes: a config carries its %d-byte version: give at least %d", ErrBadCase, size, versionBytes, minConfigSize)
	case size > limit:
		return fmt.Errorf("%w: --size %d bytes: over %s less %d bytes for the path and headers: give at most %d (%s)",
			ErrBadCase, size, what, requestOverhead, limit, FormatSize(limit))
	}
	return nil
}
