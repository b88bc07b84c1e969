package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/backends"
)

// seqDigits is the width of ZooKeeper's sequence suffix.
const seqDigits = 10

// CreateSequential makes an ephemeral sequential node named
// prefix + tag + "-" + 10-digit sequence under parent, where tag is 16 random
// hex digits unique to this call (a protected name, as Curator's: with
// prefix "lock-", "lock-9f86d081884c7d65-0000000042").
//
// If the connection drops after the create was sent, the outcome is
// unknown; CreateSequential then lists parent (after the reconnect) and
// returns the node that carries its tag, or creates again if there is none.
// So a lost reply never leaves a duplicate node behind. ctx bounds the
// whole; if it ends while the outcome is unknown, an orphan node may remain
// until the session ends.
//
// Node.CreateRev is 0, as for Create (no read after the create); Node.Seq
// is the sequence number, monotonic under parent.
func (s *Session) CreateSequential(ctx context.Context, parent, prefix string, data []byte) (backends.Node, error) {
	if strings.Contains(prefix, "/") {
		return backends.Node{}, fmt.Errorf("zookeeper: sequential prefix %q holds a '/'", prefix)
	}
	tagged := prefix + fmt.Sprintf("%016x", rand.Uint64()) + "-"
	p, err := s.createFindable(ctx, "create-sequential", join(parent, tagged), data, func() (string, bool, error) {
		kids, err := s.Children(ctx, parent)
		if err != nil {
			return "", false, err
		}
		for _, k := range kids {
			if strings.HasPrefix(k.Name, tagged) && len(k.Name) == len(tagged)+seqDigits {
				return k.Path, true, nil
			}
		}
		return "", false, nil
	})
	if err != nil {
		return backends.Node{}, err
	}
	return s.made(p), nil
}

// createFindable creates the ephemeral sequential node want (plus the
// sequence number) holding data, for op, and returns its path. If the reply
// is lost (ErrUnknownOutcome), find looks for the node the create may have
// made, once the session reconnected; if there is none, the create is sent
// again, so a lost reply never leaves a duplicate behind (unless ctx is
// marked backends.NoResend: then the error is returned).
func (s *Session) createFindable(ctx context.Context, op, want string, data []byte, find func() (string, bool, error)) (string, error) {
	for {
		raw, err := write(ctx, s, op, want, func() (string, error) {
			return s.l.conn.Create(want, data, zk.FlagEphemeral|zk.FlagSequence, acl)
		})
		if err == nil {
			return raw, nil
		}
		if !errors.Is(err, backends.ErrUnknownOutcome) {
			s.refused(err, 1)
			return "", err
		}
		p, found, ferr := find()
		if ferr != nil {
			return "", fmt.Errorf("%w (finding %s after: %v)", ferr, want, err)
		}
		if found {
			return p, nil
		}
		if !backends.Resends(ctx) {
			return "", err
		}
	}
}

// made completes a sequential create of path p.
func (s *Session) made(p string) backends.Node {
	s.own(p, true)
	return node(p)
}

// parseSeq returns the number in the last 10 characters of name if they
// are all digits (the suffix ZooKeeper gives sequential nodes), else 0.
// A plain node whose name ends in 10 digits is taken as sequential too.
func parseSeq(name string) int64 {
	if len(name) < seqDigits {
		return 0
	}
	suffix := name[len(name)-seqDigits:]
	for i := 0; i < len(suffix); i++ {
		if suffix[i] < '0' || suffix[i] > '9' {
			return 0
		}
	}
	n, err := strconv.ParseInt(suffix, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// childNodes turns a listing into Nodes ordered by Seq, then name.
func childNodes(parent string, names []string) []backends.Node {
	nodes := make([]backends.Node, len(names))
	for i, name := range names {
		nodes[i] = backends.Node{Path: join(parent, name), Name: name, Seq: parseSeq(name)}
	}
	slices.SortFunc(nodes, func(a, b backends.Node) int {
		if a.Seq != b.Seq {
			if a.Seq < b.Seq {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return nodes
}

// join appends name to parent ("/" + name under the root).
func join(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
