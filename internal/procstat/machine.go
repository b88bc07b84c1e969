package procstat

import (
	"fmt"
	"os"
	"slices"
	"strconv"
)

// RootEnv names the environment variable that carries the pid of the
// zkbench process a run started from (MarkRoot), so that its children
// (local shards, client worker processes, the servers it started) count
// their whole family as zkbench's own, not as other load on the machine.
const RootEnv = "ZKBENCH_ROOT_PID"

// MarkRoot makes this process the root of zkbench's processes for itself
// and its children, unless an ancestor already is.
func MarkRoot() {
	if Root() == os.Getpid() {
		os.Setenv(RootEnv, strconv.Itoa(os.Getpid()))
	}
}

// Root is the pid of the process zkbench's processes descend from: RootEnv
// when it names this process or one of its ancestors, else this process.
func Root() int {
	self := os.Getpid()
	root, err := strconv.Atoi(os.Getenv(RootEnv))
	if err != nil || root <= 0 {
		return self
	}
	for pid, hops := self, 0; pid > 1 && hops < 64; hops++ {
		if pid == root {
			return root
		}
		ps, err := procStat(pid)
		if err != nil {
			return self
		}
		pid = ps.PPID
	}
	return self
}

// Machine is one reading of the machine's CPU time, of the processes that
// are zkbench's own, of the other processes and of the kernel's threads.
// The difference of two (Since) is what other processes took in between.
type Machine struct {
	// Cores is the machine's CPUs as /proc/stat lists them (on a container
	// the host's: /proc/stat is not namespaced).
	Cores int
	// Busy is the CPU time every CPU spent running a process, user, nice
	// and system time (a guest's time is inside user), in seconds since
	// boot. Idle, I/O wait, interrupt and soft-interrupt time and steal are
	// not in it.
	Busy float64
	// Steal is the time a hypervisor ran something else while this
	// machine's CPUs wanted to run.
	Steal float64
	// Own are the processes of zkbench's tree: Root and every process
	// below it (its servers started on this machine among them).
	Own map[int]Proc
	// Kernel are the kernel's threads (its network and block work
	// included: their time is not another process's load).
	Kernel map[int]Proc
	// Rest are the other processes: neither zkbench's nor the kernel's,
	// nor the container engine's.
	Rest map[int]Proc
	// Engine are the container engine's processes (dockerd, containerd,
	// its shims, docker-proxy, runc, and fuse-overlayfs where it is the
	// storage driver: EngineCommands): the work they do for a cluster
	// zkbench runs in containers (forwarding its published ports, running
	// its containers, their file system's writes) is the servers', not another
	// process's; otherwise it is another process's (Use.Engine).
	Engine map[int]Proc
}

// EngineCommands are the command names (comm) of the container engine's
// processes.
var EngineCommands = []string{"dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2", "docker-proxy", "runc", "fuse-overlayfs"}

// Proc is one process's CPU time at a reading.
type Proc struct {
	// Start is when it started (clock ticks after boot): a pid with a
	// new start is another process.
	Start uint64
	// CPU is its user and system time; Reaped that of the children it
	// has waited for (they are gone from /proc, their time is here).
	CPU, Reaped float64
}

// kernelThread is the PF_KTHREAD flag of /proc/<pid>/stat.
const kernelThread = 0x00200000

// ReadMachine reads the machine's CPU time and that of the processes below
// root (Root) and of the kernel's threads.
func ReadMachine(root int) (Machine, error) {
	fs, err := procFS()
	if err != nil {
		return Machine{}, err
	}
	st, err := fs.Stat()
	if err != nil {
		return Machine{}, fmt.Errorf("procstat: %w", err)
	}
	m := Machine{Cores: len(st.CPU), Own: map[int]Proc{}, Kernel: map[int]Proc{}, Rest: map[int]Proc{}, Engine: map[int]Proc{},
		Busy:  st.CPUTotal.User + st.CPUTotal.Nice + st.CPUTotal.System,
		Steal: st.CPUTotal.Steal}
	procs, err := fs.AllProcs()
	if err != nil {
		return Machine{}, fmt.Errorf("procstat: %w", err)
	}
	parent := make(map[int]int, len(procs))
	all := make(map[int]Proc, len(procs))
	engine := map[int]bool{}
	for _, p := range procs {
		ps, err := p.Stat()
		if err != nil {
			// It exited since the listing (ENOENT, ESRCH), or /proc hides
			// it from this user: neither is zkbench's.
			continue
		}
		pr := Proc{Start: ps.Starttime, CPU: ps.CPUTime(), Reaped: float64(ps.CUTime+ps.CSTime) / ticks}
		if ps.Flags&kernelThread != 0 {
			m.Kernel[ps.PID] = pr
			continue
		}
		all[ps.PID], parent[ps.PID] = pr, ps.PPID
		if slices.Contains(EngineCommands, ps.Comm) {
			engine[ps.PID] = true
		}
	}
	var below func(pid, hops int) bool
	below = func(pid, hops int) bool {
		switch {
		case pid == root:
			return true
		case pid <= 1 || hops > 64:
			return false
		}
		pp, ok := parent[pid]
		return ok && below(pp, hops+1)
	}
	for pid, pr := range all {
		switch {
		case below(pid, 0):
			m.Own[pid] = pr
		case engine[pid]:
			m.Engine[pid] = pr
		default:
			m.Rest[pid] = pr
		}
	}
	if len(m.Own) == 0 {
		return Machine{}, fmt.Errorf("%w: the root process %d", ErrNoProcess, root)
	}
	return m, nil
}

// ticks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every
// Linux architecture Go supports.
const ticks = 100

// Use is what a machine's CPUs did between two readings, in CPU seconds.
type Use struct {
	Cores int
	// Busy is every process's time (Machine.Busy), Own the part of it
	// zkbench's processes took, Kernel the kernel threads' part, Rest the
	// other processes', Engine the container engine's (Machine.Engine);
	// Steal is apart from Busy.
	Busy, Own, Kernel, Rest, Engine, Steal float64
}

// Others is the CPU time processes neither zkbench's nor the kernel's
// took: the other processes' own times, read as zkbench's are. Busy -
// Own - Kernel would mix two clocks: /proc/stat samples each CPU at every
// tick, while a process's time is the scheduler's exact count, and a
// workload that wakes on timers runs at the ticks, so the sampled busy
// time exceeded zkbench's exact time by up to 16% in a quiet run, which
// would read as other processes' load.
func (u Use) Others() float64 { return u.Rest }

// Since is what the machine did between before and m. A process of
// zkbench's that started in between counts whole; one that ended counts
// through the parent that reaped it (Proc.Reaped), less what it had used
// before.
func (m Machine) Since(before Machine) Use {
	u := Use{Cores: m.Cores, Busy: m.Busy - before.Busy, Steal: m.Steal - before.Steal}
	u.Own = treeSince(m.Own, before.Own, true)
	u.Kernel = treeSince(m.Kernel, before.Kernel, false)
	u.Rest = treeSince(m.Rest, before.Rest, true)
	u.Engine = treeSince(m.Engine, before.Engine, true)
	return u
}

func treeSince(after, before map[int]Proc, reaped bool) float64 {
	total := func(p Proc) float64 {
		if reaped {
			return p.CPU + p.Reaped
		}
		return p.CPU
	}
	var sum float64
	for pid, a := range after {
		sum += total(a)
		if b, ok := before[pid]; ok && b.Start == a.Start {
			sum -= total(b)
		}
	}
	if reaped {
		for pid, b := range before {
			if a, ok := after[pid]; !ok || a.Start != b.Start {
				sum -= total(b)
			}
		}
	}
	return max(0, sum)
}
