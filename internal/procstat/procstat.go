// Package procstat reads what the zkbench process, its servers and the
// machine spent from /proc, through github.com/prometheus/procfs: a
// process's CPU time and resident memory (the client and server cost
// figures), the machine's CPU time and that of the processes outside
// zkbench (Machine: other load on the machine), and what names a process
// across pid reuse and reboots (its start time, the boot, the pid
// namespace), for telling whether the owner of something left behind still
// runs. Linux only; elsewhere the functions fail with ErrUnsupported.
package procstat

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
)

// ErrUnsupported: /proc is not available (not Linux).
var ErrUnsupported = errors.New("procstat: /proc not available")

// ErrNoProcess: no process has that pid.
var ErrNoProcess = errors.New("procstat: no such process")

// Stat is a process's cost so far.
type Stat struct {
	// CPUSeconds is user plus system CPU time since the process started.
	CPUSeconds float64 `json:"cpu_seconds"`
	// RSSBytes is the resident set size now.
	RSSBytes uint64 `json:"rss_bytes"`
}

// Read returns the CPU time and resident memory of process pid.
func Read(pid int) (Stat, error) {
	ps, err := procStat(pid)
	if err != nil {
		return Stat{}, err
	}
	return Stat{CPUSeconds: ps.CPUTime(), RSSBytes: uint64(max(ps.ResidentMemory(), 0))}, nil
}

// Self returns the calling process's Stat.
func Self() (Stat, error) { return Read(os.Getpid()) }

// StartTicks returns when process pid started, in clock ticks after boot
// (field 22 of /proc/<pid>/stat). A pid is reused; a pid and its start
// time name one process of one boot. A process that has exited and waits
// for its parent to reap it (a zombie) no longer runs: ErrNoProcess, as for
// a pid no process has. A process that /proc hides from this user
// (hidepid) is an error, not ErrNoProcess: it may well run.
func StartTicks(pid int) (uint64, error) {
	ps, err := procStat(pid)
	if errors.Is(err, ErrNoProcess) && !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return 0, fmt.Errorf("procstat: process %d runs but /proc does not show it", pid)
	}
	if err != nil {
		return 0, err
	}
	if exited(ps) {
		return 0, fmt.Errorf("%w: %d has exited", ErrNoProcess, pid)
	}
	return ps.Starttime, nil
}

// exited: the process is a zombie (exited, not yet reaped) or dead.
func exited(ps procfs.ProcStat) bool { return ps.State == "Z" || ps.State == "X" }

// procStat reads /proc/<pid>/stat, with ErrNoProcess for a pid no process
// has and ErrUnsupported where there is no /proc.
func procStat(pid int) (procfs.ProcStat, error) {
	fs, err := procFS()
	if err != nil {
		return procfs.ProcStat{}, err
	}
	p, err := fs.Proc(pid)
	if err == nil {
		var ps procfs.ProcStat
		if ps, err = p.Stat(); err == nil {
			return ps, nil
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		return procfs.ProcStat{}, fmt.Errorf("%w: %d", ErrNoProcess, pid)
	}
	return procfs.ProcStat{}, fmt.Errorf("procstat: %w", err)
}

// procFS is /proc, or ErrUnsupported.
func procFS() (procfs.FS, error) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return procfs.FS{}, ErrUnsupported
	}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return procfs.FS{}, fmt.Errorf("procstat: %w", err)
	}
	return fs, nil
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

// Alive reports whether process pid exists and has not exited: a zombie
// (exited, not yet reaped: an orphan in a container whose init does not
// reap) is not alive.
func Alive(pid int) bool {
	ps, err := procStat(pid)
	return err == nil && !exited(ps)
}

// Cmdline is process pid's command line, its arguments in order.
func Cmdline(pid int) ([]string, error) {
	fs, err := procFS()
	if err != nil {
		return nil, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %d", ErrNoProcess, pid)
		}
		return nil, fmt.Errorf("procstat: %w", err)
	}
	args, err := p.CmdLine()
	if err != nil {
		return nil, fmt.Errorf("procstat: %w", err)
	}
	return args, nil
}

// MemTotal is the machine's memory in bytes (/proc/meminfo), 0 where it
// cannot be read.
func MemTotal() uint64 {
	fs, err := procFS()
	if err != nil {
		return 0
	}
	mi, err := fs.Meminfo()
	if err != nil || mi.MemTotal == nil {
		return 0
	}
	return *mi.MemTotal * 1024
}
