package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// echoServer is a real TCP echo server on a free loopback port.
type echoServer struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	open []net.Conn
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.open = append(s.open, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		s.mu.Lock()
		for _, c := range s.open {
			_ = c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *echoServer) addr() string { return s.ln.Addr().String() }

func newProxy(t *testing.T, target string, opts ...Option) *Proxy {
	t.Helper()
	p, err := New(context.Background(), target, append([]Option{WithSeed(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes one line and reads the echo, returning the elapsed time.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, msg string) time.Duration {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if line != msg+"\n" {
		t.Fatalf("echo = %q, want %q", line, msg)
	}
	return time.Since(start)
}

func medianRTT(t *testing.T, addr string, n int) time.Duration {
	t.Helper()
	c := dial(t, addr)
	r := bufio.NewReader(c)
	rtts := make([]time.Duration, n)
	for i := range rtts {
		rtts[i] = roundTrip(t, c, r, fmt.Sprintf("ping %d", i))
	}
	slices.Sort(rtts)
	return rtts[n/2]
}

func TestForwardsBulkDataBothWays(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.addr(), WithChunkSize(4096))
	p.SetLatency(time.Millisecond, 900*time.Microsecond) // jitter must not reorder
	c := dial(t, p.Addr())
	payload := make([]byte, 1<<20)
	_, _ = rand.Read(payload)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		errc <- err
	}()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(c) // ends with EOF: the half-close travelled both ways
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("echoed %d bytes, differ from the %d sent", len(got), len(payload))
	}
	st := p.Stats()
	if st.BytesToServer != int64(len(payload)) || st.BytesToClient != int64(len(payload)) {
		t.Fatalf("stats %+v, want %d bytes each way", st, len(payload))
	}
}

// TestLatencyAddsToRoundTrip: with latency set, every round trip takes at
// least the latency each way, a lower bound the proxy's timers enforce;
// with it off again, the median round trip is below one way's latency.
// 100 ms each way is far above a loopback round trip through the proxy
// (tens of microseconds on a quiet machine, milliseconds on a loaded one),
// so neither check depends on how loaded the machine is; how the
// undelayed round trips compare is logged only.
func TestLatencyAddsToRoundTrip(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.addr())
	direct := medianRTT(t, echo.addr(), 21)
	plain := medianRTT(t, p.Addr(), 21)
	const base = 100 * time.Millisecond
	p.SetLatency(base, 0)
	delayed := medianRTT(t, p.Addr(), 5)
	p.SetLatency(0, 0)
	back := medianRTT(t, p.Addr(), 21)
	t.Logf("median RTT: direct %v, through proxy %v, with %v each way %v, latency off again %v", direct, plain, base, delayed, back)
	// A timer never fires early, so each round trip is at least 2*base.
	if delayed < 2*base {
		t.Fatalf("RTT with latency %v < 2*%v", delayed, base)
	}
	if back >= base {
		t.Fatalf("latency off: median RTT %v still >= %v", back, base)
	}
}

func TestDirectionLatencyAndJitter(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.addr())
	const base = 20 * time.Millisecond
	p.SetDirectionLatency(ServerToClient, base, 0)
	if b, j := p.Latency(ClientToServer); b != 0 || j != 0 {
		t.Fatalf("client->server latency %v±%v, want 0", b, j)
	}
	if rtt := medianRTT(t, p.Addr(), 5); rtt < base {
		t.Fatalf("RTT with %v on the way back = %v, want >= %v", base, rtt, base)
	}
	// Jitter: many small messages in flight at once stay in order.
	p.SetLatency(2*time.Millisecond, 2*time.Millisecond)
	c := dial(t, p.Addr())
	r := bufio.NewReader(c)
	const n = 300
	go func() {
		for i := range n {
			if _, err := fmt.Fprintf(c, "m%d\n", i); err != nil {
				return
			}
			if i%10 == 0 {
				time.Sleep(200 * time.Microsecond) // separate reads, so separate chunks
			}
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for i := range n {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("m%d\n", i); line != want {
			t.Fatalf("message %d = %q, want %q: jitter reordered chunks", i, line, want)
		}
	}
}

func TestCutHoldsBytesWithoutClosing(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.addr())
	c := dial(t, p.Addr())
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "before")

	p.Cut()
	if _, err := io.WriteString(c, "during\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if line, err := r.ReadString('\n'); !isTimeout(err) {
		t.Fatalf("read during cut = %q, %v; want a timeout (nothing forwarded, nothing closed)", line, err)
	}
	// A connection opened during the cut is accepted but not forwarded.
	c2 := dial(t, p.Addr())
	_, _ = io.WriteString(c2, "new\n")
	// The dial returns once the kernel has the connection; the proxy's
	// accept loop registers it later, maybe much later on a loaded machine.
	waitFor(t, func() bool { return len(p.Conns()) == 2 }, "the connection opened during the cut accepted")
	_ = c2.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := bufio.NewReader(c2).ReadString('\n'); !isTimeout(err) {
		t.Fatalf("new conn during cut: %v, want timeout", err)
	}
	if infos := p.Conns(); len(infos) != 2 || !infos[0].Cut || !infos[1].Cut {
		t.Fatalf("conns during cut = %+v", infos)
	}

	p.Restore()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := r.ReadString('\n')
	if err != nil || line != "during\n" {
		t.Fatalf("after restore read %q, %v; want the held bytes", line, err)
	}
	roundTrip(t, c, r, "after")
}

func TestCutForRestoresItself(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.addr())
	c := dial(t, p.Addr())
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "warm")
	// The cut lasts from the CutFor call: timed from there, a round trip
	// across it cannot be shorter, however late this goroutine runs.
	const cut = 150 * time.Millisecond
	t0 := time.Now()
	p.CutFor(cut)
	roundTrip(t, c, r, "held")
	if took := time.Since(t0); took < cut {
		t.Fatalf("round trip across a %v cut done %v after the cut began", cut, took)
	}
	if infos := p.Conns(); infos[0].Cut {
		t.Fatal("still cut after CutFor elapsed")
	}
	// Restore cancels a pending CutFor; Cut replaces it.
	p.CutFor(time.Hour)
	p.Restore()
	roundTrip(t, c, r, "restored")
}

func TestHealLiftsEveryCut(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.addr(), WithTags(NewTags()))
	a, b := dial(t, p.Addr()), dial(t, p.Addr())
	ra, rb := bufio.NewReader(a), bufio.NewReader(b)
	roundTrip(t, a, ra, "a")
	roundTrip(t, b, rb, "b")
	infos := p.Conns()
	if len(infos) != 2 || infos[0].Client != -1 {
		t.Fatalf("conns %+v: untagged dial must have client -1", infos)
	}
	if !p.CutConn(infos[0].ID) || p.CutConn(999) {
		t.Fatal("CutConn found the wrong connections")
	}
	roundTrip(t, b, rb, "b while a is cut")
	_, _ = io.WriteString(a, "held\n")
	_ = a.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := ra.ReadString('\n'); !isTimeout(err) {
		t.Fatalf("cut conn read: %v, want timeout", err)
	}
	p.Cut()
	p.Heal()
	_ = a.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := ra.ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("after Heal: %q, %v", line, err)
	}
	roundTrip(t, b, rb, "b after heal")
}

func TestResetAllResetsBothSides(t *testing.T) {
	echo := startEcho(t)
	p := newProxy(t, echo.addr())
	c := dial(t, p.Addr())
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "hello")
	p.SetLatency(time.Second, 0) // a request is in flight when the reset hits
	if _, err := io.WriteString(c, "in flight\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if n := p.ResetAll(); n != 1 {
		t.Fatalf("ResetAll = %d, want 1", n)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := r.ReadString('\n')
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after reset: %v, want ECONNRESET", err)
	}
	if s := p.Stats(); s.Resets != 1 {
		t.Fatalf("stats %+v, want 1 reset", s)
	}
	waitFor(t, func() bool { return p.Stats().Active == 0 }, "reset connection forgotten")
	// The proxy keeps serving new connections.
	p.SetLatency(0, 0)
	c2 := dial(t, p.Addr())
	roundTrip(t, c2, bufio.NewReader(c2), "again")
}

func TestClientTagsTargetOneClient(t *testing.T) {
	echo := startEcho(t)
	tags := NewTags()
	g, err := NewGroup(context.Background(), []string{echo.addr(), echo.addr()}, WithTags(tags), WithSeed(7))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	ctx := context.Background()
	conns := map[int]net.Conn{}
	readers := map[int]*bufio.Reader{}
	for _, id := range []int{1, 2} {
		nc, err := tags.Dialer(id)(ctx, "tcp", g[0].Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nc.Close() })
		conns[id], readers[id] = nc, bufio.NewReader(nc)
		roundTrip(t, nc, readers[id], fmt.Sprintf("client %d", id))
	}
	if tags.Len() != 2 {
		t.Fatalf("tags.Len = %d", tags.Len())
	}
	infos := g[0].Conns()
	if len(infos) != 2 || infos[0].Client != 1 || infos[1].Client != 2 || infos[0].ID != 1 || infos[1].ID != 2 {
		t.Fatalf("conns = %+v, want clients 1 and 2 in accept order", infos)
	}

	g.CutClient(1)
	roundTrip(t, conns[2], readers[2], "client 2 unaffected")
	g.Cut()
	g.Restore() // lifts the global cut only
	roundTrip(t, conns[2], readers[2], "client 2 after a global cut")
	_, _ = io.WriteString(conns[1], "cut\n")
	_ = conns[1].SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := readers[1].ReadString('\n'); !isTimeout(err) {
		t.Fatalf("client 1 read during CutClient: %v, want timeout", err)
	}
	// A new connection of client 1 is cut too.
	nc, err := tags.TimeoutDialer(1)("tcp", g[1].Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(nc, "x\n")
	_ = nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := bufio.NewReader(nc).ReadString('\n'); !isTimeout(err) {
		t.Fatalf("new conn of cut client: %v, want timeout", err)
	}
	_ = nc.Close()
	g.RestoreClient(1)
	_ = conns[1].SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := readers[1].ReadString('\n'); err != nil || line != "cut\n" {
		t.Fatalf("after RestoreClient: %q, %v", line, err)
	}

	if n := g.ResetClient(2); n != 1 {
		t.Fatalf("ResetClient(2) = %d, want 1", n)
	}
	roundTrip(t, conns[1], readers[1], "client 1 survives client 2's reset")
	_ = conns[2].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := readers[2].ReadString('\n'); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("client 2 after reset: %v, want ECONNRESET", err)
	}
}

func TestDeadTargetRefusesClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	p := newProxy(t, addr, WithDialTimeout(time.Second))
	// The reset may even beat the client's connect completion.
	c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err == nil {
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Fatalf("read through proxy to dead target: %v, want reset or EOF", err)
	}
	waitFor(t, func() bool { return p.Stats().DialFailures == 1 }, "dial failure counted")
}

func TestCloseEndsEveryGoroutine(t *testing.T) {
	echo := startEcho(t)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := New(ctx, echo.addr(), WithSeed(3))
	if err != nil {
		t.Fatal(err)
	}
	var cs []net.Conn
	for i := range 5 {
		c := dial(t, p.Addr())
		roundTrip(t, c, bufio.NewReader(c), fmt.Sprint(i))
		cs = append(cs, c)
	}
	p.SetLatency(time.Hour, 0) // pumps parked in a timer
	for _, c := range cs {
		_, _ = io.WriteString(c, "parked\n")
	}
	p.Cut()  // and in the cut gate
	cancel() // the context ends the proxy like Close
	_ = p.Close()
	_ = p.Close() // idempotent
	for _, c := range cs {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("client conn still open after Close: %v", err)
		}
		_ = c.Close()
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before+1 }, "goroutines back to baseline") // +1: echo handlers draining
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("proxy still accepts after Close")
	}
}

func TestNewRejectsBadTarget(t *testing.T) {
	if _, err := New(context.Background(), "no-port"); err == nil {
		t.Fatal("New accepted a target without a port")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
