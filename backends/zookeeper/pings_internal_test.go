package zookeeper

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
)

func frame(body ...[]byte) []byte {
	var b []byte
	for _, p := range body {
		b = append(b, p...)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func u32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// pingConn reads the negotiated timeout from the connect response, times
// each ping against the ticker's schedule, and matches ping replies, with
// frames split across reads at any byte.
func TestPingConnTimesPings(t *testing.T) {
	rec := backends.NewKeepAliveRecorder(backends.KeepAlivePingSent)
	c := newPingConn(nil, rec)
	// Connect response: protocol 0, timeout 3000 ms, session id, password.
	connect := frame(u32(0), u32(3000), make([]byte, 8), u32(16), make([]byte, 16))
	watch := frame(u32(-1), make([]byte, 8), u32(0), []byte("event body"))
	stream := append(connect, watch...)
	for i := range stream { // one byte at a time
		c.scan(stream[i : i+1])
	}
	if c.interval != time.Second {
		t.Fatalf("interval %v from a 3000 ms timeout", c.interval)
	}
	o := c.origin
	c.ping(o.Add(time.Second + time.Millisecond))       // on time
	c.ping(o.Add(2*time.Second + 400*time.Millisecond)) // 400 ms late: late (bound 100 ms)
	c.ping(o.Add(3*time.Second + 2*time.Millisecond))   // the next tick, on time
	c.ping(o.Add(5*time.Second + 500*time.Millisecond)) // busy past a tick: due at 4 s, 1.5 s late
	got := rec.Counts()
	var n int64
	for _, k := range got.Lateness {
		n += k
	}
	if n != 4 || got.Late != 2 || got.Interval != time.Second {
		t.Fatalf("counts %+v: want 4 pings, 2 late, interval 1s", got)
	}
	if got.Lateness[len(backends.DurationBounds)-3] != 1 { // (1s, 2s]
		t.Errorf("the 1.5 s late ping is not in (1s, 2s]: %v", got.Lateness)
	}
	reply := frame(u32(-2), make([]byte, 8), u32(0))
	c.scan(reply[:3])
	c.scan(reply[3:])
	var replies int64
	for _, k := range rec.Counts().Replies {
		replies += k
	}
	if replies != 1 || len(c.sent) != 3 {
		t.Fatalf("replies %d, unanswered %d: want 1 and 3", replies, len(c.sent))
	}
}

// Pings are recognised in what go-zookeeper writes.
func TestPingConnRecognisesPingPacket(t *testing.T) {
	rec := backends.NewKeepAliveRecorder(backends.KeepAlivePingSent)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := b.Read(buf); err != nil {
				return
			}
		}
	}()
	c := newPingConn(a, rec)
	c.interval, c.origin = time.Second, time.Now().Add(-time.Second)
	ping := frame(u32(-2), u32(opPing))
	other := frame(u32(7), u32(4), []byte("/some/path"))
	for _, p := range [][]byte{other, ping} {
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.sent) != 1 {
		t.Fatalf("%d pings seen in a request and a ping", len(c.sent))
	}
}
