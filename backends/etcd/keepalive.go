package etcd

import (
	"reflect"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keepAliveChunk is how many sessions' keep-alive channels one goroutine
// of a keepAliveMux drains.
const keepAliveChunk = 256

// keepAliveMux drains the sessions' clientv3 keep-alive channels (clientv3
// drops responses and logs when one is full), times the responses
// (keepAliveLateness) and marks a session lost when its channel closes,
// with one goroutine per keepAliveChunk sessions selecting on all of their
// channels at once (reflect.Select) rather than a goroutine a session: at
// ten thousand sessions a goroutine's stack each is a few percent of
// zkbench's memory per client. A response costs its goroutine one select
// over its chunk, once a TTL/3 a session.
type keepAliveMux struct {
	rec func(interval, late time.Duration)

	mu     sync.Mutex
	chunks []*keepAliveGroup // with room, or being filled
}

// keepAliveGroup is one goroutine's sessions; n counts those added or
// being added, under the mux's lock.
type keepAliveGroup struct {
	add chan keepAliveEntry
	n   int
}

type keepAliveEntry struct {
	s  *Session
	ka <-chan *clientv3.LeaseKeepAliveResponse
}

// watch drains ka for s until it closes, then marks s lost.
func (m *keepAliveMux) watch(s *Session, ka <-chan *clientv3.LeaseKeepAliveResponse) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var g *keepAliveGroup
	for _, c := range m.chunks {
		if c.n < keepAliveChunk {
			g = c
			break
		}
	}
	if g == nil {
		g = &keepAliveGroup{add: make(chan keepAliveEntry, keepAliveChunk)}
		m.chunks = append(m.chunks, g)
		go m.run(g)
	}
	g.n++
	g.add <- keepAliveEntry{s, ka} // never blocks: n ≤ its capacity
}

// run is g's goroutine: case 0 takes new sessions, case i > 0 is
// entries[i-1]'s channel. It returns when its last session's channel has
// closed and no session is on its way.
func (m *keepAliveMux) run(g *keepAliveGroup) {
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(g.add)}}
	var entries []keepAliveEntry
	var last []time.Time
	for {
		k, v, ok := reflect.Select(cases)
		if k == 0 {
			e := v.Interface().(keepAliveEntry)
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(e.ka)})
			entries, last = append(entries, e), append(last, time.Time{})
			continue
		}
		i := k - 1
		if ok {
			now := time.Now()
			if resp := v.Interface().(*clientv3.LeaseKeepAliveResponse); !last[i].IsZero() && resp.TTL > 0 {
				interval := time.Duration(resp.TTL) * time.Second / 3
				m.rec(interval, keepAliveLateness(now.Sub(last[i]), interval))
			}
			last[i] = now
			continue
		}
		entries[i].s.lose()
		end := len(entries) - 1
		cases[k], entries[i], last[i] = cases[end+1], entries[end], last[end]
		cases, entries, last = cases[:end+1], entries[:end], last[:end]
		m.mu.Lock()
		g.n--
		if g.n == 0 {
			for j, c := range m.chunks {
				if c == g {
					m.chunks = append(m.chunks[:j], m.chunks[j+1:]...)
					break
				}
			}
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
	}
}
