package results

import (
	"sync"
	"testing"
	"time"
)

// TestStripesMergeEveryValue: values recorded concurrently by many
// writers over a few stripes merge into the histogram one recorder would
// have made, bucket by bucket, none dropped.
func TestStripesMergeEveryValue(t *testing.T) {
	s := NewStripes(4)
	want := NewRecorder()
	var wg sync.WaitGroup
	for w := range 10 {
		for v := range 200 {
			Record(want, time.Duration(w*1000+v)*time.Microsecond)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := range 200 {
				s.Record(w, time.Duration(w*1000+v)*time.Microsecond)
			}
		}()
	}
	wg.Wait()
	got := NewRecorder()
	s.MergeInto(got)
	if got.TotalCount() != want.TotalCount() {
		t.Fatalf("merged %d values, want %d", got.TotalCount(), want.TotalCount())
	}
	gb, wb := got.Distribution(), want.Distribution()
	for i := range wb {
		if gb[i] != wb[i] {
			t.Fatalf("bucket %d: %+v, want %+v", i, gb[i], wb[i])
		}
	}
	if n := NewStripes(0); len(n.s) != 1 {
		t.Fatalf("NewStripes(0) has %d stripes, want 1", len(n.s))
	}
}
