package etcd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/zkbench/zkbench/backends"
)

var _ backends.HeapReader = (*Backend)(nil)

// heapSource is how LiveHeap reads a member's heap.
const heapSource = "etcd /debug/pprof/heap?gc=1: HeapAlloc after a forced collection"

// errEmbeddedHeap: the embedded server's heap is this process's.
var errEmbeddedHeap = errors.New("etcd: the embedded server shares zkbench's heap: run on servers of their own (--cluster local) to read it")

// LiveHeap reads every member's Go heap after a garbage collection the
// member runs for the request (pprof's heap profile with gc=1, whose text
// form ends with runtime.MemStats) and returns the sum of their HeapAlloc.
// zkbench's member processes serve pprof; other etcd servers do with
// --enable-pprof, and without it the error says so.
func (b *Backend) LiveHeap(ctx context.Context) (float64, string, error) {
	if b.cfg.Embedded {
		return 0, "", errEmbeddedHeap
	}
	urls, err := b.metricsURLs(ctx)
	if err != nil {
		return 0, "", err
	}
	var sum float64
	for _, u := range urls {
		h, err := memberHeap(ctx, b.httpClient(), strings.TrimSuffix(u, "/metrics")+"/debug/pprof/heap?gc=1&debug=1")
		if err != nil {
			return 0, "", err
		}
		sum += h
	}
	return sum, heapSource, nil
}

func memberHeap(ctx context.Context, client *http.Client, url string) (float64, error) {
	body, err := get(ctx, client, "heap", url, " (is the member started with --enable-pprof?)")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	return parseHeapAlloc(body, url)
}

// parseHeapAlloc finds "# HeapAlloc = N" in a text heap profile.
func parseHeapAlloc(r io.Reader, url string) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("etcd: heap %s: HeapAlloc %q: %w", url, v, err)
			}
			return float64(n), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("etcd: heap %s: %w", url, err)
	}
	return 0, fmt.Errorf("etcd: heap %s: no HeapAlloc in the profile", url)
}
