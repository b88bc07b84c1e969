// Package procstat reads a process's CPU time and resident memory from
// /proc, for the client and server cost figures (CPU seconds and memory per
// client), and what names a process across pid reuse and reboots (its start
// time, the boot, the pid namespace), for telling whether the owner of
// something left behind still runs. Linux only; elsewhere the functions
// fail with ErrUnsupported.
package procstat

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
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
func parseCPU(stat string) (float64, error) {
	f, err := statFields(stat)
	if err != nil {
		return 0, err
	}
	utime, err1 := strconv.ParseUint(f[14-3], 10, 64)
	stime, err2 := strconv.ParseUint(f[15-3], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("procstat: stat times: %w", err)
	}
	return float64(utime+stime) / clockTicks, nil
}

// statFields returns the fields of /proc/<pid>/stat from field 3 (the
// state) to field 22 (the start time) at least: field n is at n-3. The
// command name (field 2) may hold spaces and parentheses, so fields are
// counted from the last ')'.
func statFields(stat string) ([]string, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, fmt.Errorf("procstat: malformed stat %.40q", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 22-2 {
		return nil, fmt.Errorf("procstat: short stat %.40q", stat)
	}
	return f, nil
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

// StartTicks returns when process pid started, in clock ticks after boot
// (field 22 of /proc/<pid>/stat). A pid is reused; a pid and its start
// time name one process of one boot. A process that has exited and waits
// for its parent to reap it (a zombie) no longer runs: ErrNoProcess, as for
// a pid no process has. A process that /proc hides from this user
// (hidepid) is an error, not ErrNoProcess: it may well run.
func StartTicks(pid int) (uint64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat("/proc/self/stat"); serr != nil {
			return 0, ErrUnsupported
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			return 0, fmt.Errorf("%w: %d", ErrNoProcess, pid)
		}
		return 0, fmt.Errorf("procstat: process %d runs but /proc does not show it", pid)
	}
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	return parseStart(string(raw), pid)
}

// parseStart reads the start time (field 22) of /proc/<pid>/stat, and
// fails with ErrNoProcess for a process that has exited (state Z or X).
func parseStart(stat string, pid int) (uint64, error) {
	f, err := statFields(stat)
	if err != nil {
		return 0, err
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("%w: %d has exited", ErrNoProcess, pid)
	}
	start, err := strconv.ParseUint(f[22-3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("procstat: stat start time: %w", err)
	}
	return start, nil
}

// BootID is the kernel's random id of the current boot
// (/proc/sys/kernel/random/boot_id): the same for every process and
// container of one boot of one machine, and new at every boot.
func BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if errors.Is(err, os.ErrNotExist) {
		return "", ErrUnsupported
	}
	if err != nil {
		return "", fmt.Errorf("procstat: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// PIDNamespace is the inode of the calling process's pid namespace, as
// "4026531836": pids name the same processes only within one namespace (a
// container has its own).
func PIDNamespace() (string, error) {
	l, err := os.Readlink("/proc/self/ns/pid")
	if errors.Is(err, os.ErrNotExist) {
		return "", ErrUnsupported
	}
	if err != nil {
		return "", fmt.Errorf("procstat: %w", err)
	}
	ns, ok := strings.CutPrefix(l, "pid:[")
	if !ok || !strings.HasSuffix(ns, "]") {
		return "", fmt.Errorf("procstat: pid namespace %q", l)
	}
	return strings.TrimSuffix(ns, "]"), nil
}
