package analysis

import (
	"strings"
	"testing"
	"time"
)

func TestParseTarget(t *testing.T) {
	q, d, err := ParseTarget(" p99.9=20ms ")
	if err != nil || q != 99.9 || d != 20*time.Millisecond {
		t.Errorf("p99.9=20ms: %v %v %v", q, d, err)
	}
	for _, bad := range []string{"99=20ms", "p100=20ms", "p0=1s", "p99=", "p99=-1s", "p99"} {
		if _, _, err := ParseTarget(bad); err == nil || !strings.HasPrefix(err.Error(), "--target") {
			t.Errorf("%q: %v, want an error naming --target", bad, err)
		}
	}
}
