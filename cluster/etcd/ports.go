package etcd

import (
	"fmt"
	"net"
	"strconv"
)

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago (all held open together, so they differ). Another process may
// still take one before etcd binds it; starts then fail with "address
// already in use" and are retried with fresh ports.
func freePorts(n int) ([]int, error) {
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
			return nil, fmt.Errorf("cluster/etcd: pick a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// layout names n members and gives each a client and a peer URL on free
// ports and a data folder dir/<name>.
func layout(dir string, n int, token string, noFsync bool) ([]MemberConfig, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	ms := make([]MemberConfig, n)
	for i := range ms {
		name := "zkbench-" + strconv.Itoa(i+1)
		ms[i] = MemberConfig{
			Name:          name,
			DataDir:       dir + "/" + name,
			ClientURL:     "http://127.0.0.1:" + strconv.Itoa(ports[2*i]),
			PeerURL:       "http://127.0.0.1:" + strconv.Itoa(ports[2*i+1]),
			ClusterState:  "new",
			Token:         token,
			UnsafeNoFsync: noFsync,
		}
	}
	ic := initialCluster(ms)
	for i := range ms {
		ms[i].InitialCluster = ic
	}
	return ms, nil
}
