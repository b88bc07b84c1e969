package executor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/backends/etcd"
	"github.com/zkbench/zkbench/backends/zookeeper"
	zkcluster "github.com/zkbench/zkbench/cluster/zookeeper"
	"github.com/zkbench/zkbench/executor"
	"github.com/zkbench/zkbench/faults"
	"github.com/zkbench/zkbench/faults/proxy"
	"github.com/zkbench/zkbench/internal/spawn"
	"github.com/zkbench/zkbench/internal/testenv/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// bound is generous for a loaded machine: a step either happens or the
// executor is broken.
const bound = 20 * time.Second

// program is a real child: it appends "start PID DATA" to out when it
// starts and "stop PID" when it gets SIGTERM, and prints DATA on stdout.
// Its trap is set before it logs its start: a test that changes the data
// once it reads "start" must find the SIGTERM logged, however late a
// loaded machine runs the shell.
func program(file, out string) []string {
	script := fmt.Sprintf(`trap 'echo "stop $$" >> %[2]s; exit 0' TERM; echo "start $$ $(cat %[1]s)" >> %[2]s; cat %[1]s; echo; while :; do sleep 0.05; done`, file, out)
	return []string{"/bin/sh", "-c", script}
}

// lines reads the program's log.
func lines(t *testing.T, out string) []string {
	b, err := os.ReadFile(out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " | "))
}

// waitLog waits until the program's log, as one line, ends with want.
func waitLog(t *testing.T, out, what string, want func(log string) bool) string {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		b, _ := os.ReadFile(out)
		if want(string(b)) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: program log after %v:\n%s", what, bound, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func count(log, word string) int { return strings.Count(log, word+" ") }

// syncBuf is a goroutine-safe buffer for the program's stdout.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness runs an executor on node in the background.
type harness struct {
	t         *testing.T
	node, out string
	stdout    *syncBuf
	log       *syncBuf // the executor's own lines
	done      chan error
	cancel    context.CancelFunc
}

func start(t *testing.T, s backends.Session, node string) *harness {
	return startProgram(t, s, node, program)
}

// startProgram is start with another program, made of FILE and the log
// path.
func startProgram(t *testing.T, s backends.Session, node string, prog func(file, out string) []string) *harness {
	dir := t.TempDir()
	h := &harness{t: t, node: node, out: filepath.Join(dir, "log"), stdout: &syncBuf{}, log: &syncBuf{}, done: make(chan error, 1)}
	file := filepath.Join(dir, "config")
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	e := executor.New(s, executor.Config{Node: node, File: file, Program: prog(file, h.out), Stdout: h.stdout, Log: h.log, Grace: 2 * time.Second})
	go func() { h.done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-h.done
	})
	return h
}

func set(t *testing.T, s backends.Session, p, data string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := s.Set(ctx, p, []byte(data)); err != nil {
		t.Fatalf("Set(%s): %v", p, err)
	}
}

func del(t *testing.T, s backends.Session, p string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := s.Delete(ctx, p); err != nil {
		t.Fatalf("Delete(%s): %v", p, err)
	}
}

// lifecycle: start, change, delete, re-create, as the seed's Executor.
func lifecycle(t *testing.T, h *harness, writer backends.Session) {
	set(t, writer, h.node, "one")
	waitLog(t, h.out, "start on the node's data", func(l string) bool { return strings.Contains(l, " one\n") && count(l, "start") == 1 })
	set(t, writer, h.node, "two")
	waitLog(t, h.out, "restart on a change", func(l string) bool {
		return strings.Contains(l, " two\n") && count(l, "start") == 2 && count(l, "stop") == 1
	})
	set(t, writer, h.node, "two") // same data: no restart
	time.Sleep(500 * time.Millisecond)
	if l := lines(t, h.out); strings.Count(strings.Join(l, " "), "start") != 2 {
		t.Fatalf("a write of the same data restarted the program: %v", l)
	}
	del(t, writer, h.node)
	waitLog(t, h.out, "stop on delete", func(l string) bool { return count(l, "stop") == 2 })
	time.Sleep(300 * time.Millisecond)
	if l := string(must(os.ReadFile(h.out))); count(l, "start") != 2 {
		t.Fatalf("started while the node was gone: %s", l)
	}
	set(t, writer, h.node, "three")
	waitLog(t, h.out, "start on re-create", func(l string) bool { return strings.Contains(l, " three\n") && count(l, "start") == 3 })
	// The program logs its start before it prints the data, and its stdout
	// reaches h.stdout through a pipe and a copying goroutine: the log line
	// does not mean the print has arrived, so the print is waited for.
	deadline := time.Now().Add(bound)
	for !strings.Contains(h.stdout.String(), "three") {
		if time.Now().After(deadline) {
			t.Fatalf("the program's stdout did not pass through within %v: %q", bound, h.stdout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// notAChange: after a connection loss the program is still the one started
// last, never restarted.
func notAChange(t *testing.T, h *harness, starts int) {
	time.Sleep(time.Second)
	l := string(must(os.ReadFile(h.out)))
	if count(l, "start") != starts {
		t.Fatalf("a lost connection restarted the program:\n%s", l)
	}
	select {
	case err := <-h.done:
		t.Fatalf("exec ended on a lost connection: %v", err)
	default:
	}
}

// expired: the executor stops the program and ends with ErrSessionExpired.
func expired(t *testing.T, h *harness, starts int) {
	select {
	case err := <-h.done:
		h.done <- err
		if !errors.Is(err, executor.ErrSessionExpired) {
			t.Fatalf("after expiry Run = %v, want ErrSessionExpired", err)
		}
		t.Logf("exec ended: %v", err)
	case <-time.After(bound):
		t.Fatalf("exec still running %v after its session expired", bound)
	}
	waitLog(t, h.out, "stop on expiry", func(l string) bool { return count(l, "stop") == starts })
}

func TestExecZooKeeper(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := zkcluster.Start(ctx, zkcluster.Options{TickTime: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("a ZooKeeper of its own (to restart it): %v", err)
	}
	defer c.Stop(context.Background())
	eps := c.Endpoints()
	zs := faults.NewZKSessions(nil)
	b, err := zookeeper.New(zookeeper.Config{Endpoints: eps, SessionTimeout: 6 * time.Second}, zookeeper.WithDialer(zs.Dialer(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	writer, err := b.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	watcher, err := b.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ns := backends.Namespace("exec-test")
	if err := writer.EnsurePath(ctx, ns); err != nil {
		t.Fatal(err)
	}
	h := start(t, watcher, ns+"/config")
	lifecycle(t, h, writer)

	// A server restart drops every connection; the session lives on.
	if err := c.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}
	notAChange(t, h, 3)
	set(t, writer, h.node, "four")
	waitLog(t, h.out, "a change after the restart", func(l string) bool { return strings.Contains(l, " four\n") && count(l, "start") == 4 })

	if err := (faults.ZKExpirer{Sessions: zs, Endpoints: eps}).Expire(ctx, watcher.ID()); err != nil {
		t.Fatal(err)
	}
	expired(t, h, 4)
	del(t, writer, h.node)
}

func TestExecEtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eps := testcluster.EtcdEndpoints(t)
	var targets []string
	for _, ep := range eps {
		targets = append(targets, strings.TrimPrefix(ep, "http://"))
	}
	g, err := proxy.NewGroup(ctx, targets)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	direct, err := etcd.New(etcd.Config{Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() }) // after the namespace's removal
	proxied, err := etcd.New(etcd.Config{Endpoints: g.Addrs(), LeaseTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer proxied.Close()
	writer, err := direct.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	watcher, err := proxied.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := testcluster.TestNamespace(t, direct) + "/config"
	h := start(t, watcher, node)
	lifecycle(t, h, writer)

	// Every connection of the watcher cut for two seconds, well within
	// its lease: the stream resumes, nothing changed.
	g.CutFor(2 * time.Second)
	time.Sleep(2500 * time.Millisecond)
	notAChange(t, h, 3)
	set(t, writer, h.node, "four")
	waitLog(t, h.out, "a change after the cut", func(l string) bool { return strings.Contains(l, " four\n") && count(l, "start") == 4 })

	es := watcher.(*etcd.Session)
	if _, err := es.Client().Revoke(ctx, es.Lease()); err != nil {
		t.Fatal(err)
	}
	expired(t, h, 4)
	del(t, writer, h.node)
}

// etcdSessions are a writer's and a watcher's sessions on the shared test
// etcd, and a node in the test's namespace.
func etcdSessions(ctx context.Context, t *testing.T) (writer, watcher backends.Session, node string) {
	b, err := etcd.New(etcd.Config{Endpoints: testcluster.EtcdEndpoints(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() }) // after the namespace's removal
	if writer, err = b.NewSession(ctx); err != nil {
		t.Fatal(err)
	}
	if watcher, err = b.NewSession(ctx); err != nil {
		t.Fatal(err)
	}
	return writer, watcher, testcluster.TestNamespace(t, b) + "/config"
}

// exited waits until process pid is gone.
func exited(t *testing.T, what string, pid string) {
	t.Helper()
	n, err := strconv.Atoi(pid)
	if err != nil {
		t.Fatalf("%s: pid %q", what, pid)
	}
	deadline := time.Now().Add(bound)
	for spawn.Alive(n) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(n, syscall.SIGKILL)
			t.Fatalf("%s: the program's child %d still runs %v later", what, n, bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExecStopsProgramGroup: a program that starts a child of its own (as
// sh -c 'cat FILE; sleep 1000' does) is stopped with that child, on a
// change and when exec ends.
func TestExecStopsProgramGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	writer, watcher, node := etcdSessions(ctx, t)
	h := startProgram(t, watcher, node, func(file, out string) []string {
		script := fmt.Sprintf(`trap 'echo "stop $$" >> %[2]s; exit 0' TERM; echo "start $$ $(cat %[1]s)" >> %[2]s; `+
			`sleep 1000 & echo "child $!" >> %[2]s; while :; do sleep 0.05; done`, file, out)
		return []string{"/bin/sh", "-c", script}
	})
	children := func(l string) []string {
		var pids []string
		for _, line := range strings.Split(l, "\n") {
			if pid, ok := strings.CutPrefix(line, "child "); ok {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	set(t, writer, node, "one")
	l := waitLog(t, h.out, "start and a child", func(l string) bool { return len(children(l)) == 1 })
	first := children(l)[0]
	set(t, writer, node, "two")
	l = waitLog(t, h.out, "restart and a new child", func(l string) bool { return len(children(l)) == 2 && count(l, "stop") == 1 })
	exited(t, "after a change", first)
	h.cancel()
	select {
	case err := <-h.done:
		h.done <- err
		if err != nil {
			t.Fatalf("Run after cancel = %v", err)
		}
	case <-time.After(bound):
		t.Fatalf("exec still running %v after its context ended", bound)
	}
	exited(t, "after exec ended", children(l)[1])
	del(t, writer, node)
}

// TestExecProgramExits: a program that exits by itself is logged with its
// status and not started again until the next change, which starts it.
func TestExecProgramExits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	writer, watcher, node := etcdSessions(ctx, t)
	h := startProgram(t, watcher, node, func(file, out string) []string {
		return []string{"/bin/sh", "-c", fmt.Sprintf(`echo "start $$ $(cat %[1]s)" >> %[2]s; exit 3`, file, out)}
	})
	exitLog := func(what string, n int) {
		t.Helper()
		deadline := time.Now().Add(bound)
		for strings.Count(h.log.String(), "exited (exit status 3) without being stopped") != n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: want %d exits logged with their status, exec logged:\n%s", what, n, h.log.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	set(t, writer, node, "one")
	waitLog(t, h.out, "start", func(l string) bool { return strings.Contains(l, " one\n") })
	exitLog("first exit", 1)
	time.Sleep(500 * time.Millisecond)
	if l := string(must(os.ReadFile(h.out))); count(l, "start") != 1 {
		t.Fatalf("a program that exited was started again without a change:\n%s", l)
	}
	select {
	case err := <-h.done:
		t.Fatalf("exec ended when its program exited: %v", err)
	default:
	}
	set(t, writer, node, "two")
	waitLog(t, h.out, "start on the next change", func(l string) bool { return strings.Contains(l, " two\n") && count(l, "start") == 2 })
	exitLog("second exit", 2)
	del(t, writer, node)
}
