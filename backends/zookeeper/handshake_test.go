package zookeeper_test

import (
	"io"
	"log"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// TestHandshakeGivesUpOnASilentServer: a connection that the server accepts
// and never answers (a ZooKeeper 3.8 restarting under load did this to
// a connection made as it bound its port) is given up after half the
// session timeout (one server), at least 1 s, and the next connection gets
// the session. go-zookeeper v1.0.4 waited ten receive timeouts, 13.3 s at
// this 2 s session, for the silent server's reply (third_party README).
func TestHandshakeGivesUpOnASilentServer(t *testing.T) {
	target := testcluster.ZooKeeperEndpoints(t)[0]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	defer func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if n == 0 { // the silent server: reads the connect request, answers nothing
				go func() { _, _ = io.Copy(io.Discard, c) }()
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, s)
			mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()

	const session = 2 * time.Second
	start := time.Now()
	conn, events, err := zk.Connect([]string{ln.Addr().String()}, session, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// 1 s for the silent handshake, a pause of 1 s before the next
	// attempt, and its handshake: about 2 s. The bound leaves a loaded
	// machine 6 s more and stays under v1.0.4's 13.3 s.
	const bound = 8 * time.Second
	deadline := time.After(bound)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				t.Logf("session after %v", time.Since(start).Round(time.Millisecond))
				return
			}
		case <-deadline:
			t.Fatalf("no session within %v: the client still waits on the silent server's handshake", bound)
		}
	}
}
