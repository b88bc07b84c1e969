package measure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/internal/procstat"
	"github.com/zkbench/zkbench/results"
)

// Hold is what the servers hold at one instant: the watches they count and
// their live heap. Read by Meter.Hold.
type Hold struct {
	Watchers    float64
	WatchersErr error
	Heap        float64
	HeapSource  string
	HeapErr     error
}

// errNoHeap: neither the backend nor a local server process tells its heap.
var errNoHeap = errors.New("the servers' heap cannot be read from here: no local server process (remote or Docker servers) and the backend reads none")

// Hold reads the servers' watches (backends.MetricWatchers, through the
// backend's GaugeScraper) and their live heap: the backend's own reader
// (backends.HeapReader: etcd's member processes) or, for local Java servers
// (ZooKeeper), jcmd on each process. Both force a full collection, which
// pauses the servers: read it outside a measured interval.
func (m *Meter) Hold(ctx context.Context, b backends.Backend) Hold {
	var h Hold
	if g := ability[backends.GaugeScraper](b); g != nil {
		gs, err := g.ScrapeGauges(ctx)
		h.Watchers, h.WatchersErr = gs[backends.MetricWatchers], err
	} else {
		h.WatchersErr = fmt.Errorf("%s: the backend reads no watch count", b.Kind())
	}
	if hr := ability[backends.HeapReader](b); hr != nil {
		h.Heap, h.HeapSource, h.HeapErr = hr.LiveHeap(ctx)
		return h
	}
	pids := m.pids()
	if len(pids) == 0 {
		h.HeapErr = errNoHeap
		return h
	}
	eps := make([]string, 0, len(pids))
	for ep := range pids {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	for _, ep := range eps {
		n, err := procstat.JavaLiveHeap(ctx, pids[ep])
		if err != nil {
			h.HeapErr = fmt.Errorf("server %s: %w", ep, err)
			return h
		}
		h.Heap += float64(n)
	}
	h.HeapSource = procstat.JavaHeapSource
	return h
}

// Footprint is the servers' footprint of the watches that watching
// clients armed between before and after. before are two readings taken
// one after the other with nothing armed between: the difference of their
// heaps is the heap reading's own noise (a forced collection leaves some
// garbage and some buffers behind), which bounds what the heap per
// watching client can resolve, and is kept with it. The heap is per
// watching client, not per watch the server counts: ZooKeeper counts a
// persistent watch twice (its data and its child watch tables each hold
// it).
func Footprint(before [2]Hold, after Hold, watching int) *results.WatchFootprint {
	last := before[1]
	fp := &results.WatchFootprint{WatchersBefore: last.Watchers, Watchers: after.Watchers, WatchingClients: watching}
	if err := errors.Join(last.WatchersErr, after.WatchersErr); err != nil {
		fp.NotMeasured = fmt.Sprintf("watch count: %v", err)
		return fp
	}
	if err := errors.Join(before[0].HeapErr, last.HeapErr, after.HeapErr); err != nil {
		fp.NotMeasured = fmt.Sprintf("heap: %v", err)
		return fp
	}
	fp.HeapBefore, fp.Heap, fp.HeapSource = last.Heap, after.Heap, after.HeapSource
	fp.HeapNoise = math.Abs(last.Heap - before[0].Heap)
	if watching > 0 {
		fp.HeapPerWatcher = (after.Heap - last.Heap) / float64(watching)
		noise := fp.HeapNoise / float64(watching)
		fp.HeapPerWatcherNoise = &noise
	}
	return fp
}
