// Package freeport picks TCP ports on 127.0.0.1 for servers zkbench starts
// itself (cluster/etcd and cluster/zookeeper members).
package freeport

import "net"

// Ports returns n distinct TCP ports on 127.0.0.1 that were free a moment
// ago: all n are held open together, so they differ, and all are released
// before Ports returns. Another process may still take one before the caller
// binds it; callers retry with fresh ports when a bind fails. The error is
// net.Listen's, unwrapped, for the caller to prefix.
func Ports(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
