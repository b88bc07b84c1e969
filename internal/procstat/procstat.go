// Package procstat reads a process's CPU time and resident memory from
// /proc, for the client and server cost figures (CPU seconds and memory per
// client). Linux only; elsewhere Read fails with ErrUnsupported.
package procstat

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrUnsupported: /proc is not available (not Linux).
var ErrUnsupported = errors.New("procstat: /proc not available")

// ErrNoProcess: no process has that pid.
var ErrNoProcess = errors.New("procstat: no such process")

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// It is 100 on every Linux architecture Go supports.
const clockTicks = 100

// Stat is a process's cost so far.
type Stat struct {
	// CPUSeconds is user plus system CPU time since the process started.
	CPUSeconds float64 `json:"cpu_seconds"`
	// RSSBytes is the resident set size now (VmRSS).
	RSSBytes uint64 `json:"rss_bytes"`
}

// Read returns the CPU time and resident memory of process pid.
func Read(pid int) (Stat, error) {
	return read(strconv.Itoa(pid))
}

// Self returns the calling process's Stat.
func Self() (Stat, error) { return read("self") }

func read(pid string) (Stat, error) {
	var st Stat
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat("/proc/self/stat"); serr != nil {
				return st, ErrUnsupported
			}
			return st, fmt.Errorf("%w: %s", ErrNoProcess, pid)
		}
		return st, fmt.Errorf("procstat: %w", err)
	}
	cpu, err := parseCPU(string(raw))
	if err != nil {
		return st, err
	}
	st.CPUSeconds = cpu
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return st, fmt.Errorf("procstat: %w", err)
	}
	rss, err := parseRSS(string(status))
	if err != nil {
		return st, err
	}
	st.RSSBytes = rss
	return st, nil
}

// parseCPU reads utime and stime (fields 14 and 15) from /proc/<pid>/stat.
// The command name (field 2) may hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("procstat: malformed stat %.40q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("procstat: short stat %.40q", stat)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("procstat: stat times: %w", err)
	}
	return float64(utime+stime) / clockTicks, nil
}

// parseRSS reads VmRSS (in kB) from /proc/<pid>/status. A zombie has no
// VmRSS line and reports 0.
func parseRSS(status string) (uint64, error) {
	for _, line := range strings.Split(status, "\n") {
		v, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("procstat: VmRSS %q: %w", v, err)
		}
		return kb * 1024, nil
	}
	return 0, nil
}
