package etcd_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/etcd"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

// pingCounter is a TCP proxy to an etcd member that counts the HTTP/2
// PING frames its clients send (not their acknowledgements of the
// server's): gRPC's bandwidth estimation is the only pinger of a
// clientv3 client without keepalive.
type pingCounter struct {
	ln    net.Listener
	to    string
	pings atomic.Int64
}

func newPingCounter(t *testing.T, to string) *pingCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pingCounter{ln: ln, to: strings.TrimPrefix(to, "http://")}
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

func (p *pingCounter) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		go func() { _, _ = io.Copy(c, s); c.Close() }()
		go func() { _ = p.count(io.TeeReader(c, s)); s.Close() }()
	}
}

// count reads the client's side: the 24-byte preface, then frames (a
// 9-byte header: length, type, flags, stream).
func (p *pingCounter) count(r io.Reader) error {
	if _, err := io.ReadFull(r, make([]byte, 24)); err != nil {
		return err
	}
	h := make([]byte, 9)
	for {
		if _, err := io.ReadFull(r, h); err != nil {
			return err
		}
		n := int64(binary.BigEndian.Uint32(append([]byte{0}, h[:3]...)))
		if h[3] == 0x6 && h[4]&0x1 == 0 { // PING, not an ACK
			p.pings.Add(1)
		}
		if _, err := io.CopyN(io.Discard, r, n); err != nil {
			return err
		}
	}
}

// TestFlowWindowStopsEstimationPings: a watcher that receives sparse
// events through gRPC's dynamic window pings the member for about every
// one of them; with Config.FlowWindow it sends none. Counted on the wire
// by a proxy between the watcher and the member.
func TestFlowWindowStopsEstimationPings(t *testing.T) {
	const events = 20
	ep := testcluster.EtcdEndpoints(t)
	writer, ns := open(t)
	w := session(t, writer)
	path := ns + "/config"
	if err := w.Set(ctxFor(t, 10*time.Second), path, []byte("0")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		window int
	}{{"dynamic", 0}, {"static 1MB", 1 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := newPingCounter(t, ep[0])
			b, err := etcd.New(etcd.Config{Endpoints: []string{"http://" + proxy.ln.Addr().String()}, FlowWindow: tc.window})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			s := session(t, b)
			ctx := ctxFor(t, 30*time.Second)
			_, _, ch, err := s.WatchData(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			before := proxy.pings.Load()
			for i := range events {
				sent := proxy.pings.Load()
				if err := w.Set(ctx, path, []byte(fmt.Sprint(i+1))); err != nil {
					t.Fatal(err)
				}
				if ev := event(t, ch, 10*time.Second); ev.Type != backends.EventDataChanged {
					t.Fatalf("event %+v", ev)
				}
				if tc.window == 0 {
					// The ping the event prompted is on its way: wait (a
					// little, as a ping may not come) until it has passed
					// the proxy, so that the member reads it before the
					// next event; a loaded machine can hold the proxy's
					// goroutine back past the pause below.
					for deadline := time.Now().Add(500 * time.Millisecond); proxy.pings.Load() == sent && time.Now().Before(deadline); {
						time.Sleep(time.Millisecond)
					}
				}
				time.Sleep(20 * time.Millisecond) // sparse: the last ping is answered before the next event
			}
			pings := proxy.pings.Load() - before
			t.Logf("%s: %d pings from the watcher for %d events", tc.name, pings, events)
			switch {
			case tc.window == 0 && pings < events/2:
				t.Errorf("dynamic window: %d pings for %d sparse events, want about one an event", pings, events)
			case tc.window > 0 && pings != 0:
				t.Errorf("static window: %d pings, want none", pings)
			}
		})
	}
	if _, err := etcd.New(etcd.Config{Endpoints: ep, FlowWindow: 1 << 10}); !errors.Is(err, etcd.ErrConfig) {
		t.Errorf("a 1 KB window: %v, want ErrConfig", err)
	}
}
