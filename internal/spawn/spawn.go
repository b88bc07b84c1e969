// Package spawn starts child processes (ZooKeeper or etcd servers) that die
// when zkbench dies, however it dies.
//
// Linux delivers a child's Pdeathsig when the OS thread that forked it exits,
// not when the process does (golang/go#27505). Go may retire a thread while
// the process lives on, which would kill the server early. So every child is
// forked from one goroutine locked to one OS thread for the life of the
// process: that thread ends only with the process, and the children with it.
package spawn

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	once sync.Once
	reqs chan startReq
)

// Start starts cmd like cmd.Start, with SIGKILL as its parent-death signal
// and its own process group (so a terminal's Ctrl-C reaches zkbench, which
// then stops its servers in order, rather than every process at once).
// Start does not block beyond the fork; wait for cmd with cmd.Wait as usual.
func Start(cmd *exec.Cmd) error {
	once.Do(func() {
		reqs = make(chan startReq)
		go forker()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	r := startReq{cmd: cmd, done: make(chan error, 1)}
	reqs <- r
	return <-r.done
}

// forker never returns and never unlocks its thread.
func forker() {
	runtime.LockOSThread()
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}
