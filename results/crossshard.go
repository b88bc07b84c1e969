package results

import (
	"fmt"
	"sort"
	"time"
)

// maxCrossDetails bounds the cross-shard overlaps described one by one.
const maxCrossDetails = 10

// CrossShard is what the check of mutual exclusion across shards found.
type CrossShard struct {
	// Sections is how many critical sections were judged.
	Sections int
	// Violations: sections that began while a section of another shard
	// was still held, by more than the tolerance, or that carried a token
	// another shard's client was granted too.
	Violations int64
	// Undecided: overlaps no longer than the tolerance (the shards' clock
	// skew): reported, not counted.
	Undecided int64
	// ByToken: sections were judged in fencing-token order (every grant
	// carried one); otherwise in order of entry.
	ByToken bool
	Details []string
}

// crossSection is one critical section on the wall clock.
type crossSection struct {
	shard, client int
	token         int64
	enter, exit   int64 // Unix ns
}

// CheckAcrossShards judges mutual exclusion over every shard's critical
// sections, pairs of sections of the same shard excepted: each shard's own
// checker judged those, on the one clock its clients share.
//
// A lock that excludes grants in the order of its fencing tokens (ZooKeeper's
// czxid or sequence number, etcd's create revision: the service's own order),
// so with every grant carrying a token the sections are taken in token order,
// and each must begin after every section with a smaller token has ended: a
// section that begins before an earlier-token section of another shard ended
// overlapped it, and a token granted to clients of two shards was granted
// twice. Without tokens they are taken in order of entry. Times are the
// shards' wall clocks (ShardCase.Base plus the offsets); an overlap no longer
// than tolerance (0 when the shards share one host's clock, else the skew of
// their barrier releases) is counted as Undecided, not as a violation.
func CheckAcrossShards(shards []*ShardCase, tolerance time.Duration) CrossShard {
	var all []crossSection
	byToken := true
	for _, sc := range shards {
		s := sc.Sections
		for i := range s.Len() {
			cs := crossSection{shard: sc.Index, client: s.Client[i], token: s.Token[i],
				enter: sc.Base.Add(s.Enter[i]).UnixNano(), exit: sc.Base.Add(s.Exit[i]).UnixNano()}
			if cs.token == 0 {
				byToken = false
			}
			all = append(all, cs)
		}
	}
	out := CrossShard{Sections: len(all), ByToken: byToken && len(all) > 0}
	sort.SliceStable(all, func(i, j int) bool {
		if out.ByToken && all[i].token != all[j].token {
			return all[i].token < all[j].token
		}
		return all[i].enter < all[j].enter
	})
	describe := func(format string, args ...any) {
		if len(out.Details) < maxCrossDetails {
			out.Details = append(out.Details, fmt.Sprintf(format, args...))
		}
	}
	// latest[shard] is the section of that shard, among those judged so
	// far, that ended last.
	latest := map[int]crossSection{}
	tol := int64(tolerance)
	for k, s := range all {
		if out.ByToken && k > 0 {
			if p := all[k-1]; p.token == s.token && p.shard != s.shard {
				out.Violations++
				describe("token %d granted in shard %d (client %d) and in shard %d (client %d)", s.token, p.shard, p.client, s.shard, s.client)
				continue
			}
		}
		var worst crossSection
		var overlap int64
		for sh, p := range latest {
			if sh != s.shard && p.exit-s.enter > overlap {
				worst, overlap = p, p.exit-s.enter
			}
		}
		switch {
		case overlap > tol:
			out.Violations++
			describe("shard %d client %d (token %d) entered %v before shard %d client %d (token %d) left",
				s.shard, s.client, s.token, time.Duration(overlap), worst.shard, worst.client, worst.token)
		case overlap > 0:
			out.Undecided++
		}
		if p, ok := latest[s.shard]; !ok || s.exit > p.exit {
			latest[s.shard] = s
		}
	}
	return out
}
