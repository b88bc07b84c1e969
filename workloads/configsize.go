package workloads

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zkbench/zkbench/backends"
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

// ParseSize reads a size such as 512, 64KB or 1MB (KB = 1024 bytes,
// MB = 1024 KB; KiB and MiB are accepted too).
func ParseSize(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"K", 1 << 10}, {"M", 1 << 20}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want bytes, or a number with KB or MB (1KB = 1024 bytes)", s)
	}
	return n * mult, nil
}

// FormatSize writes n bytes as ParseSize reads them, in the largest whole
// unit: 1KB, 64KB, 1MB, 1000 bytes as "1000".
func FormatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKB", n>>10)
	}
	return strconv.Itoa(n)
}
