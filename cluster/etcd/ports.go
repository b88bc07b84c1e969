package etcd

import (
	"fmt"
	"strconv"

	"github.com/zkbench/zkbench/internal/freeport"
)

// layout names n members and gives each a client and a peer URL on free
// ports and a data folder dir/<name>.
func layout(dir string, n int, token string, noFsync bool) ([]MemberConfig, error) {
	// The ports were free a moment ago; another process may still take one
	// before etcd binds it. Starts then fail with "address already in use"
	// and are retried with fresh ports.
	ports, err := freeport.Ports(2 * n)
	if err != nil {
		return nil, fmt.Errorf("cluster/etcd: pick a free port: %w", err)
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
