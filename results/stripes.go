package results

import (
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Stripes is one latency recorder that many goroutines share: a few
// histograms of zkbench's geometry, each behind its own lock, the writer
// choosing one by its index (a client's number). A histogram costs about
// 170 KB of counts whatever it holds, so a recorder a client would cost
// 1.7 GB at ten thousand clients: most of zkbench's memory at that scale
// and none of it the sessions'. A stripe's histogram is made on its first
// value.
type Stripes struct {
	s []stripe
}

type stripe struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

// DefaultStripes is enough that clients rarely wait for one another's
// record (a record is tens of nanoseconds under the lock).
const DefaultStripes = 64

// NewStripes returns a recorder of n stripes (at least one).
func NewStripes(n int) *Stripes { return &Stripes{s: make([]stripe, max(n, 1))} }

// Record adds d, clamped as Record does, to writer i's stripe. Safe for
// concurrent use.
func (s *Stripes) Record(i int, d time.Duration) {
	st := &s.s[uint(i)%uint(len(s.s))]
	st.mu.Lock()
	if st.h == nil {
		st.h = NewRecorder()
	}
	Record(st.h, d)
	st.mu.Unlock()
}

// MergeInto adds every value recorded so far to dst, bucket by bucket.
func (s *Stripes) MergeInto(dst *hdrhistogram.Histogram) {
	for i := range s.s {
		st := &s.s[i]
		st.mu.Lock()
		if st.h != nil {
			dst.Merge(st.h)
		}
		st.mu.Unlock()
	}
}
