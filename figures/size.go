package figures

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a size such as 512, 64KB or 1MB (KB = 1024 bytes,
// MB = 1024 KB; KiB and MiB are accepted too).
func ParseSize(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"K", 1 << 10}, {"M", 1 << 20}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want bytes, or a number with KB or MB (1KB = 1024 bytes)", s)
	}
	return n * mult, nil
}

// FormatSize writes n bytes as ParseSize reads them, in the largest whole
// unit: 1KB, 64KB, 1MB, 1000 bytes as "1000".
func FormatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKB", n>>10)
	}
	return strconv.Itoa(n)
}
