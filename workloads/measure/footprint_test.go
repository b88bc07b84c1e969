package measure

import (
	"errors"
	"testing"
)

// TestFootprintNoise: the heap per watching client comes with the heap
// reading's own noise, the difference of the two readings before the
// arming, per watching client; a reading that failed leaves both out and
// says why.
func TestFootprintNoise(t *testing.T) {
	before := [2]Hold{{Watchers: 3, Heap: 50_000_000}, {Watchers: 3, Heap: 49_400_000}}
	fp := Footprint(before, Hold{Watchers: 1003, Heap: 50_400_000, HeapSource: "jcmd"}, 1000)
	if fp.NotMeasured != "" || fp.WatchersBefore != 3 || fp.HeapBefore != 49_400_000 {
		t.Fatalf("footprint %+v: want the second reading as the baseline", *fp)
	}
	if fp.HeapPerWatcher != 1000 || fp.HeapNoise != 600_000 || fp.HeapPerWatcherNoise == nil || *fp.HeapPerWatcherNoise != 600 {
		t.Errorf("heap per watcher %v, noise %v per watcher %v: want 1000, 600000, 600", fp.HeapPerWatcher, fp.HeapNoise, fp.HeapPerWatcherNoise)
	}
	if fp := Footprint(before, Hold{Watchers: 3, Heap: 49_000_000}, 0); fp.HeapPerWatcher != 0 || fp.HeapPerWatcherNoise != nil {
		t.Errorf("no watching client: %+v, want no figure per watcher", *fp)
	}
	before[0].HeapErr = errors.New("jcmd failed")
	if fp := Footprint(before, Hold{Watchers: 1003, Heap: 50_400_000}, 1000); fp.NotMeasured == "" || fp.HeapPerWatcherNoise != nil || fp.HeapPerWatcher != 0 {
		t.Errorf("a failed first reading: %+v, want no heap figure and why", *fp)
	}
}
