// Command pause is the sandbox ("pause") container of the test node's pods:
// the first process of each pod, which holds the pod's namespaces while its
// containers come and go. It waits for SIGINT or SIGTERM and reaps any child
// that a shared process namespace hands it. It is built static and put in an
// image FROM scratch by the node test, so no pause image is pulled.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
