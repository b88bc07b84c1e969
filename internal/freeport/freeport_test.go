package freeport

import (
	"net"
	"strconv"
	"testing"
)

// Ports gives n distinct ports, each of which can be bound once it returns.
func TestPorts(t *testing.T) {
	const n = 6
	ports, err := Ports(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != n {
		t.Fatalf("got %d ports, want %d", len(ports), n)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || p > 65535 {
			t.Fatalf("port %d out of range", p)
		}
		if seen[p] {
			t.Fatalf("port %d returned twice in %v", p, ports)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d not free after Ports returned: %v", p, err)
		}
		l.Close()
	}
}
