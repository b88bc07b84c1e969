package results

import (
	"encoding/base64"
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms record nanoseconds from 1µs to 10 minutes with three
// significant digits: enough resolution for loopback round trips and room for
// a naive lock's longest waits at large N.
const (
	histLowest  = int64(time.Microsecond)
	histHighest = int64(10 * time.Minute)
	histDigits  = 3
)

// NewRecorder returns an empty latency histogram with zkbench's geometry.
// hdrhistogram is not safe for concurrent writers: give each worker its own
// recorder and Merge them.
func NewRecorder() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histDigits)
}

// Record adds one duration to h, clamping it into the trackable range so a
// pathological value is counted at the edge instead of being lost.
func Record(h *hdrhistogram.Histogram, d time.Duration) {
	v := int64(d)
	if v < histLowest {
		v = histLowest
	}
	if v > histHighest {
		v = histHighest
	}
	_ = h.RecordValue(v) // cannot fail: v is inside the geometry
}

// Histogram is a latency distribution as stored in a results file: a summary
// for readers, and the full histogram encoded (HdrHistogram V2 compressed,
// base64) so that plots and reports can compute any percentile later.
type Histogram struct {
	Unit    string  `json:"unit"` // always "ns"
	Count   int64   `json:"count"`
	Min     int64   `json:"min"`
	Mean    float64 `json:"mean"`
	P50     int64   `json:"p50"`
	P90     int64   `json:"p90"`
	P99     int64   `json:"p99"`
	P999    int64   `json:"p999"`
	Max     int64   `json:"max"`
	Encoded string  `json:"hdr"`
}

// NewHistogram summarises and encodes h.
func NewHistogram(h *hdrhistogram.Histogram) (*Histogram, error) {
	raw, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("results: encode histogram: %w", err)
	}
	out := &Histogram{
		Unit:    "ns",
		Count:   h.TotalCount(),
		Encoded: base64.StdEncoding.EncodeToString(raw),
	}
	if out.Count > 0 {
		out.Min = h.Min()
		out.Mean = h.Mean()
		out.P50 = h.ValueAtQuantile(50)
		out.P90 = h.ValueAtQuantile(90)
		out.P99 = h.ValueAtQuantile(99)
		out.P999 = h.ValueAtQuantile(99.9)
		out.Max = h.Max()
	}
	return out, nil
}

// Decode returns the full histogram stored in hs.
func (hs *Histogram) Decode() (*hdrhistogram.Histogram, error) {
	raw, err := base64.StdEncoding.DecodeString(hs.Encoded)
	if err != nil {
		return nil, fmt.Errorf("results: histogram is not base64: %w", err)
	}
	h, err := hdrhistogram.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("results: decode histogram: %w", err)
	}
	return h, nil
}

// Quantile returns the value at percentile q (0 to 100) of the stored
// histogram.
func (hs *Histogram) Quantile(q float64) (time.Duration, error) {
	h, err := hs.Decode()
	if err != nil {
		return 0, err
	}
	return time.Duration(h.ValueAtQuantile(q)), nil
}
