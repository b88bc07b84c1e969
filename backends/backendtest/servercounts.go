package backendtest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/instrument"
)

// serverCountsWatchers is how many sessions watch one node in ServerCounts.
const serverCountsWatchers = 8

// testServerCounts checks that backends/instrument's client-side counts
// equal what the servers report for the same operations, exactly:
//
//   - K sessions each arm one ExistsW on one node, another session deletes
//     it: the instrument sees K events; the servers' MetricWatchEvents
//     delta must be K too (and on ZooKeeper MetricWatchesTriggeredOnDelete).
//   - A burst of creates, sequential creates and deletes, some failing
//     (ErrNodeExists, ErrNoNode): instrument create+create_seq+delete must
//     equal the servers' MetricWrites delta, failed requests included.
//   - Reads, by each backend's read model (serverReads); a create reads
//     nothing.
//   - A watch abandoned before it fires (its ctx cancelled), then
//     triggered: on a backend whose sessions count late watch events
//     (backends.LateWatchCounter, ZooKeeper) the instrument's
//     LateWatchEvents and the servers' MetricWatchEvents both move by 1.
//
// Nothing else may touch the servers meanwhile: sessions are opened before
// the first scrape and closed after the last (opening and closing are server
// writes), and EnsurePath runs before the first scrape too (its server cost
// is backend-specific). Server counters may lag the client by a moment, so
// the suite scrapes until the deltas match or eventBound passes, then
// scrapes once more after quietWindow to make sure they stay matched.
func testServerCounts(t *testing.T, e *env) {
	sc, ok := e.b.(backends.Scraper)
	if !ok {
		t.Skipf("%s backend does not implement backends.Scraper: no server counters to compare", e.kind)
	}
	reg := instrument.NewRegistry()
	wb := instrument.WrapBackend(e.b, reg)

	owner := session(t, wb)
	watchers := make([]backends.Session, serverCountsWatchers)
	for i := range watchers {
		watchers[i] = session(t, wb)
	}
	abandoner := session(t, wb)
	node := e.p("watched")
	ensure(t, owner, e.ns)
	create(t, owner, node, nil)
	for _, w := range watchers {
		// Get, not ExistsW: a stale "absent" would arm an extra watch.
		visible(t, w, node)
	}

	t.Run("WatchEvents", func(t *testing.T) {
		c0, m0 := reg.Total(), scrape(t, sc)
		chs := make([]<-chan backends.Event, len(watchers))
		for i, w := range watchers {
			chs[i] = existsW(t, opCtx(t), w, node, true)
		}
		del(t, owner, node)
		for i, ch := range chs {
			wantEvent(t, nextEvent(t, ch, fmt.Sprintf("watcher %d", i)), backends.EventDeleted, node)
			closedWithin(t, ch, eventBound, fmt.Sprintf("watcher %d after its event", i))
		}
		client := reg.Total().Sub(c0)
		k := int64(len(watchers))
		if client.WatchEvents != k || client.WatchesArmed != k || client.Requests["exists_w"] != k || client.Requests["delete"] != 1 {
			t.Fatalf("instrument delta = %+v; want %d watch events, %d watches armed, %d exists_w, 1 delete", client, k, k, k)
		}
		metrics := []string{backends.MetricWatchEvents}
		if e.kind == backends.ZooKeeper {
			metrics = append(metrics, backends.MetricWatchesTriggeredOnDelete)
		}
		for _, name := range metrics {
			serverMatches(t, sc, m0, name, float64(client.WatchEvents))
		}
	})

	t.Run("Writes", func(t *testing.T) {
		c0, m0 := reg.Total(), scrape(t, sc)
		var made []string
		for i := range 5 {
			made = append(made, create(t, owner, e.p(fmt.Sprintf("w%d", i)), nil).Path)
		}
		if _, err := owner.Create(opCtx(t), made[0], nil); !errors.Is(err, backends.ErrNodeExists) {
			t.Fatalf("Create of an existing node: err = %v, want ErrNodeExists", err)
		}
		for range 3 {
			made = append(made, createSeq(t, owner, e.ns, "s-").Path)
		}
		for _, p := range made {
			del(t, owner, p)
		}
		if err := owner.Delete(opCtx(t), made[0]); !errors.Is(err, backends.ErrNoNode) {
			t.Fatalf("Delete of a missing node: err = %v, want ErrNoNode", err)
		}
		client := reg.Total().Sub(c0)
		writes := client.Requests["create"] + client.Requests["create_seq"] + client.Requests["delete"]
		failed := client.Failures["create"] + client.Failures["delete"]
		if writes != 5+1+3+8+1 || failed != 2 || client.TotalRequests() != writes {
			t.Fatalf("instrument delta = %+v; want 18 writes, 2 failed, nothing else", client)
		}
		serverMatches(t, sc, m0, backends.MetricWrites, float64(writes))
	})

	t.Run("Reads", func(t *testing.T) {
		dir := e.p("dir")
		ensure(t, owner, dir)
		create(t, owner, dir+"/kid", nil)
		present, missing := e.p("present"), e.p("missing")
		create(t, owner, present, nil)
		var found, notFound, creates int64 // reads that found their node, that did not; creates

		c0, m0 := reg.Total(), scrape(t, sc)
		for range 3 {
			if _, _, err := owner.Get(opCtx(t), present); err != nil {
				t.Fatalf("Get: %v", err)
			}
			found++
		}
		for range 2 {
			if _, _, err := owner.Get(opCtx(t), missing); !errors.Is(err, backends.ErrNoNode) {
				t.Fatalf("Get of a missing node: err = %v, want ErrNoNode", err)
			}
			notFound++
		}
		for range 2 {
			children(t, owner, dir)
			found++
		}
		for range 2 {
			ctx, cancel := contextWithCancel(t)
			existsW(t, ctx, owner, present, true)
			cancel()
			found++
		}
		ctx, cancel := contextWithCancel(t)
		existsW(t, ctx, owner, missing, false)
		cancel()
		notFound++
		ctx, cancel = contextWithCancel(t)
		childrenW(t, ctx, owner, dir)
		cancel()
		found++
		// Creates read nothing on any backend (ZooKeeper leaves CreateRev 0).
		create(t, owner, e.p("made"), nil)
		createSeq(t, owner, e.ns, "made-")
		creates += 2

		client := reg.Total().Sub(c0)
		reads := client.Requests["get"] + client.Requests["children"] + client.Requests["exists_w"] + client.Requests["children_w"]
		if reads != found+notFound || client.Requests["create"]+client.Requests["create_seq"] != creates {
			t.Fatalf("instrument delta = %+v; want %d reads and %d creates", client, found+notFound, creates)
		}
		serverMatches(t, sc, m0, backends.MetricReads, float64(serverReads(e.kind, found, notFound)))
	})

	t.Run("Bytes", func(t *testing.T) {
		// A listing of long names and reads of a large value: the
		// instrument's payload is exactly what the test made, and the
		// servers' message bytes hold at least that payload, plus their
		// headers, keys and stats (see instrument's package doc: payload
		// and message bytes are not the same count).
		const kids, nameLen, listings, gets, valueLen = 20, 200, 10, 5, 1000
		dir, value := e.p("bytes"), e.p("value")
		ensure(t, owner, dir)
		var names int64
		for i := range kids {
			name := fmt.Sprintf("%0*d", nameLen, i)
			create(t, owner, dir+"/"+name, nil)
			names += int64(len(name))
		}
		create(t, owner, value, make([]byte, valueLen))
		c0, m0 := reg.Total(), scrape(t, sc)
		for range listings {
			if n := len(children(t, owner, dir)); n != kids {
				t.Fatalf("listed %d children, made %d", n, kids)
			}
		}
		for range gets {
			if d, _, err := owner.Get(opCtx(t), value); err != nil || len(d) != valueLen {
				t.Fatalf("Get: %d bytes, %v", len(d), err)
			}
		}
		client := reg.Total().Sub(c0)
		wantRecv := listings*names + gets*valueLen
		wantSent := int64(listings*len(dir) + gets*len(value))
		if client.BytesReceived != wantRecv || client.BytesSent != wantSent {
			t.Fatalf("instrument bytes sent %d, received %d; want %d and %d", client.BytesSent, client.BytesReceived, wantSent, wantRecv)
		}
		for _, m := range []struct {
			name    string
			payload int64
		}{{backends.MetricBytesSent, wantRecv}, {backends.MetricBytesReceived, wantSent}} {
			if _, ok := m0[m.name]; !ok {
				t.Fatalf("Scrape has no %s", m.name)
			}
			var got float64
			eventually(t, eventBound, m.name+" holds the payload", func() (bool, string) {
				got = scrape(t, sc).Delta(m0)[m.name]
				return got >= float64(m.payload), fmt.Sprintf("server %s delta %v, payload %d", m.name, got, m.payload)
			})
			// Message overhead: full keys and stats per name (etcd keys
			// carry the whole path), headers per call, and the other
			// sessions' keep-alives meanwhile.
			if bound := 3*float64(m.payload) + 8000; got > bound {
				t.Errorf("server %s delta %v for a payload of %d: more than %v", m.name, got, m.payload, bound)
			}
			t.Logf("%s: server %v bytes for %d payload bytes (%.2fx)", m.name, got, m.payload, got/float64(m.payload))
		}
	})

	t.Run("LateWatchEvents", func(t *testing.T) {
		if _, ok := instrument.Unwrap(abandoner).(backends.LateWatchCounter); !ok {
			t.Skipf("%s sessions count no late watch events (backends.LateWatchCounter): the backend cancels an abandoned watch on the server", e.kind)
		}
		node := e.p("late")
		c0, m0 := reg.Total(), scrape(t, sc)
		ctx, cancel := contextWithCancel(t)
		ch := existsW(t, ctx, abandoner, node, false)
		cancel()
		closedWithin(t, ch, promptBound, "ExistsW after its ctx was cancelled")
		create(t, owner, node, nil)
		eventually(t, eventBound, "instrument counts the late watch event", func() (bool, string) {
			d := reg.Total().Sub(c0)
			return d.LateWatchEvents >= 1, fmt.Sprintf("delta %+v", d)
		})
		serverMatches(t, sc, m0, backends.MetricWatchEvents, 1)
		client := reg.Total().Sub(c0)
		if client.LateWatchEvents != 1 || client.WatchEvents != 0 || client.WatchesArmed != 1 {
			t.Fatalf("instrument delta = %+v; want 1 late watch event, no watch event, 1 watch armed", client)
		}
		// The count is final at Close and kept by the instrument.
		if err := abandoner.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if got := reg.Total().Sub(c0).LateWatchEvents; got != 1 {
			t.Fatalf("after Close, instrument LateWatchEvents delta = %d, want 1", got)
		}
	})
}

// serverReads is how many reads the servers count (MetricReads) for reads
// that found their node and reads that did not. The backends differ, by
// construction, and these are the exact offsets:
//
//   - etcd: one Range call per Get, Children, ExistsW and ChildrenW,
//     whatever it finds.
//   - ZooKeeper: MetricReads is the per-namespace read count of /zkbench,
//     which the server bumps only when the read finds its node (a getData or
//     exists of a missing node is not counted: DataTree updates the read
//     statistic after the lookup succeeded).
//
// Neither counts a read for a create: Create and CreateSequential are one
// write each (on ZooKeeper they leave CreateRev 0 rather than read it).
func serverReads(kind backends.Kind, found, notFound int64) int64 {
	if kind == backends.ZooKeeper {
		return found
	}
	return found + notFound
}

func scrape(t *testing.T, sc backends.Scraper) backends.Metrics {
	t.Helper()
	m, err := sc.Scrape(opCtx(t))
	if err != nil {
		t.Fatalf("Scrape: %v", err)
	}
	return m
}

// serverMatches waits until the servers' delta of name since before equals
// want, then checks it stays there.
func serverMatches(t *testing.T, sc backends.Scraper, before backends.Metrics, name string, want float64) {
	t.Helper()
	if _, ok := before[name]; !ok {
		t.Fatalf("Scrape has no %s (canonical names must always be filled)", name)
	}
	var got float64
	deadline := time.Now().Add(eventBound)
	for {
		got = scrape(t, sc).Delta(before)[name]
		if got >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got != want {
		t.Fatalf("server %s delta = %v, instrument counted %v", name, got, want)
	}
	time.Sleep(quietWindow)
	if got = scrape(t, sc).Delta(before)[name]; got != want {
		t.Fatalf("server %s delta grew to %v after matching the instrument's %v", name, got, want)
	}
}
