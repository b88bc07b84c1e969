package procstat

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// JavaHeapSource is how JavaLiveHeap reads a heap.
const JavaHeapSource = "jcmd GC.class_histogram: bytes of live objects after a full collection"

// JavaLiveHeap returns the bytes of the objects still live in Java process
// pid's heap: jcmd's GC.class_histogram, which runs a full collection
// first and ends with a "Total <instances> <bytes>" line. jcmd is taken from
// beside the process's own java (/proc/pid/exe), else from PATH; it
// attaches only to a JVM of the same user on the same host (not one in a
// container).
func JavaLiveHeap(ctx context.Context, pid int) (uint64, error) {
	jcmd := "jcmd"
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		if filepath.Base(exe) != "java" {
			return 0, fmt.Errorf("procstat: process %d is %s, not a JVM", pid, exe)
		}
		if p := filepath.Join(filepath.Dir(exe), "jcmd"); fileExists(p) {
			jcmd = p
		}
	}
	cmd := exec.CommandContext(ctx, jcmd, strconv.Itoa(pid), "GC.class_histogram")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("procstat: %s %d GC.class_histogram: %w: %s", jcmd, pid, err, firstLine(stderr.String()+out.String()))
	}
	return parseClassHistogramTotal(out.Bytes())
}

// parseClassHistogramTotal reads the bytes of a class histogram's Total line.
func parseClassHistogramTotal(out []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "Total" {
			n, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("procstat: class histogram total %q: %w", sc.Text(), err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("procstat: no Total line in the class histogram (%s)", firstLine(string(out)))
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
