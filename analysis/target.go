package analysis

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseTarget reads a latency target, "p99=50ms": the wait at percentile
// Q (0 < Q < 100) at most BOUND (Workload.Percentile, Workload.Bound).
func ParseTarget(s string) (float64, time.Duration, error) {
	q, bound, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok || !strings.HasPrefix(q, "p") {
		return 0, 0, fmt.Errorf("--target %q: write pQ=BOUND, e.g. p99=50ms", s)
	}
	pq, err := strconv.ParseFloat(strings.TrimPrefix(q, "p"), 64)
	if err != nil || pq <= 0 || pq >= 100 {
		return 0, 0, fmt.Errorf("--target %q: the percentile must be a number between 0 and 100, e.g. p99=50ms", s)
	}
	d, err := time.ParseDuration(bound)
	if err != nil || d <= 0 {
		return 0, 0, fmt.Errorf("--target %q: the bound must be a positive duration, e.g. p99=50ms", s)
	}
	return pq, d, nil
}
