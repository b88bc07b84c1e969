package docker

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/zkbench/zkbench/internal/procstat"
)

// LabelOwner labels every container and network of a cluster with the
// process that started it, so that a later zkbench can tell a cluster whose
// owner still runs from one that a killed process left behind
// (RemoveLeftovers). Its value is
//
//	<hostname>/<machine id>/<boot id>/<pid namespace>/<pid>/<start time>
//
// A pid is reused; a pid with its start time (clock ticks after boot, from
// /proc/<pid>/stat) names one process of one boot. The machine id
// (/etc/machine-id) names the host across boots and renames, the hostname
// where it has none; a pid means that process only in its pid namespace.
const LabelOwner = "zkbench.owner"

// owner is a process that started a cluster, as LabelOwner records it.
type owner struct {
	host, machine, boot, pidNS string
	// pid 0: a process whose /proc told nothing (not Linux); such an owner
	// is never judged gone, nor does such a process judge others.
	pid   int
	start uint64
}

func (o owner) String() string {
	return strings.Join([]string{o.host, o.machine, o.boot, o.pidNS,
		strconv.Itoa(o.pid), strconv.FormatUint(o.start, 10)}, "/")
}

// parseOwner reads a LabelOwner value. Fields count from the right, so a
// hostname with a slash in it still parses.
func parseOwner(s string) (owner, error) {
	f := strings.Split(s, "/")
	n := len(f)
	if n < 6 {
		return owner{}, fmt.Errorf("cluster/docker: owner %q: want host/machine/boot/pidns/pid/start", s)
	}
	o := owner{host: strings.Join(f[:n-5], "/"), machine: f[n-5], boot: f[n-4], pidNS: f[n-3]}
	pid, err1 := strconv.Atoi(f[n-2])
	start, err2 := strconv.ParseUint(f[n-1], 10, 64)
	if err := errors.Join(err1, err2); err != nil || pid < 0 {
		return owner{}, fmt.Errorf("cluster/docker: owner %q: pid and start time: %v", s, err)
	}
	o.pid, o.start = pid, start
	return o, nil
}

// thisProcess is the owner of the clusters this process starts, read once.
var thisProcess = sync.OnceValue(func() owner {
	o := owner{}
	o.host, _ = os.Hostname()
	if b, err := os.ReadFile("/etc/machine-id"); err == nil {
		o.machine = strings.TrimSpace(string(b))
	}
	boot, err1 := procstat.BootID()
	ns, err2 := procstat.PIDNamespace()
	start, err3 := procstat.StartTicks(os.Getpid())
	if errors.Join(err1, err2, err3) == nil {
		o.boot, o.pidNS, o.pid, o.start = boot, ns, os.Getpid(), start
	}
	return o
})

// sameHost: the machine id decides where both have one, else the hostname.
func sameHost(a, b owner) bool {
	if a.machine != "" && b.machine != "" {
		return a.machine == b.machine
	}
	return a.host == b.host
}

// judge says whether the cluster labelled with owner label (empty: none)
// is left over, seen from process self, and why, in words that follow the
// cluster's name: "left by process 1234 (no longer running)". startOf gives
// a pid's start time (procstat.StartTicks). Only a process known to have
// gone makes a leftover; anything uncertain keeps the cluster.
func judge(label string, self owner, startOf func(pid int) (uint64, error)) (gone bool, why string) {
	if label == "" {
		return true, "left by a zkbench older than owner labels"
	}
	o, err := parseOwner(label)
	switch {
	case err != nil:
		return false, fmt.Sprintf("unreadable owner %q", label)
	case self.pid == 0 || o.pid == 0:
		return false, fmt.Sprintf("owned by process %d on %s, which /proc cannot check", o.pid, o.host)
	case !sameHost(o, self):
		return false, fmt.Sprintf("owned by process %d on another host, %s", o.pid, o.host)
	case o.boot != self.boot:
		return true, fmt.Sprintf("left by process %d before this machine restarted", o.pid)
	case o.pidNS != self.pidNS:
		return false, fmt.Sprintf("owned by process %d of another pid namespace", o.pid)
	}
	start, err := startOf(o.pid)
	switch {
	case errors.Is(err, procstat.ErrNoProcess):
		return true, fmt.Sprintf("left by process %d (no longer running)", o.pid)
	case err != nil:
		return false, fmt.Sprintf("owned by process %d (%v)", o.pid, err)
	case start != o.start:
		return true, fmt.Sprintf("left by process %d (no longer running; its pid now names another process)", o.pid)
	}
	return false, fmt.Sprintf("owned by process %d, which runs", o.pid)
}
