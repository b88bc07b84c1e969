package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The test node: its name, the pod network and the bridge that carries it,
// the images it holds, and the cgroup under which the kubelet puts its pods.
// The host is the bridge's gateway: a server that listens on the host's
// every address is reachable from the pods at podGateway.
const (
	nodeName    = "zkbench-it-node"
	podSubnet   = "10.244.77.0/24"
	podGateway  = "10.244.77.1"
	podBridge   = "zkbit0"
	pauseImage  = "zkbench/pause:it"
	cgroupRoot  = "/zkbench-kube-it"
	criProtocol = "unix://"
)

// kernelSysctls are what the kubelet rewrites at start (its "protect kernel
// defaults" set): the node puts back what it found when it stops.
var kernelSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"}

// node is a kubelet, a CRI containerd and kube-scheduler, registered with
// the control plane as one node that runs pods.
type node struct {
	dir     string // its files: containerd's root and state, the kubelet's, the volumes'
	volumes string // hostPath volumes' parent folder, on the host
}

// startNode makes this machine a node of cp: a containerd of its own (CRI,
// overlayfs, runc, Debian's CNI bridge and host-local plugins) beside
// Docker's, holding the pause image and the given images (from Docker's
// engine: `make images` built them), a kubelet registered as nodeName, and
// kube-scheduler. It waits until the node is Ready and schedulable. When
// the test ends it removes every pod sandbox (their network namespaces and
// veths with them), stops the three, kills whatever of theirs is left,
// unmounts what they mounted, deletes the bridge and the pods' cgroups and
// puts back the kernel settings the kubelet changed (docs/kubernetes.md
// lists all of it).
func startNode(ctx context.Context, t *testing.T, cp *controlPlane, images ...string) *node {
	t.Helper()
	for _, p := range []string{"/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/loopback"} {
		if _, err := os.Stat(p); err != nil {
			fail(t, "no %s: apt-get install containernetworking-plugins (make deps)", p)
		}
	}
	for _, b := range []string{"containerd", "runc", "ctr", "docker"} {
		if _, err := exec.LookPath(b); err != nil {
			fail(t, "no %s on PATH: apt-get install containerd runc (make deps); Docker holds the images", b)
		}
	}
	if os.Geteuid() != 0 {
		fail(t, "the test node needs root (a kubelet and containerd), this test runs as uid %d", os.Geteuid())
	}
	// What a test that died before its cleanups (a timeout's panic, a
	// kill) left behind.
	sweepNodes(t)
	// The sockets' paths must fit in 108 bytes: t.TempDir's may not.
	dir, err := os.MkdirTemp("", nodeDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{dir: dir, volumes: filepath.Join(dir, "volumes")}
	saved := saveSysctls(t, dir)
	t.Cleanup(func() {
		if err := n.cleanUp(); err != nil {
			t.Error(err)
		}
		for _, left := range leftOnHost(saved) {
			t.Errorf("the node left on the host: %s", left)
		}
	})
	for _, d := range []string{"containerd/root", "containerd/state", "containerd/opt", "cni/conf", "cni/ipam", "kubelet", "volume-plugins"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(n.volumes, 0o755); err != nil {
		t.Fatal(err)
	}

	sock := n.criSocket()
	write(t, filepath.Join(dir, "containerd.toml"), fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[ttrpc]
  address = "%[3]s.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  # The test runs without CAP_SYS_RESOURCE: runc cannot lower a child's
  # oom_score_adj below its own.
  restrict_oom_score_adj = true
  # The pods' network namespaces under state, not /var/run/netns.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[6]q
`, filepath.Join(dir, "containerd/root"), filepath.Join(dir, "containerd/state"), sock,
		filepath.Join(dir, "containerd/opt"), pauseImage, filepath.Join(dir, "cni/conf")))
	write(t, filepath.Join(dir, "cni/conf/10-zkbench-it.conflist"), fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "zkbench-it",
  "plugins": [{
    "type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "gateway": %q}]],
             "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}
  }]
}
`, podBridge, podSubnet, podGateway, filepath.Join(dir, "cni/ipam")))
	containerd := start(ctx, t, dir, "containerd", "--config", filepath.Join(dir, "containerd.toml"))
	// Registered after containerd's own stop, so it runs first: after the
	// kubelet stops, before containerd does.
	t.Cleanup(func() { n.stopSandboxes(t) })
	n.waitCRI(ctx, t, containerd)
	n.loadImages(ctx, t, images)

	// The kubelet: cgroupfs (PID 1 is not systemd) on this cgroup v1 host,
	// its own root folder, port and cgroup root, client certificates from
	// the control plane's CA for the API server's log and exec calls, no
	// eviction or image collection on a shared disk.
	makeCgroup(t, cgroupRoot)
	kubeletPort := freePort(t)
	crt, key := cp.pki.issue(t, dir, "kubelet", "system:node:"+nodeName, []string{"system:nodes"}, true, hostIPs(t))
	write(t, filepath.Join(dir, "kubelet.yaml"), fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %q
containerRuntimeEndpoint: %q
port: %d
readOnlyPort: 0
healthzPort: 0
tlsCertFile: %q
tlsPrivateKeyFile: %q
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %q}
authorization:
  mode: AlwaysAllow
failSwapOn: false
volumePluginDir: %q
evictionHard: {"memory.available": "50Mi", "nodefs.available": "1%%", "imagefs.available": "1%%", "nodefs.inodesFree": "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
resolvConf: /etc/resolv.conf
registerNode: true
serializeImagePulls: false
# No KUBE-FIREWALL and canary chains in the host's iptables: nothing here
# needs them, and the firewall's rule would drop other tests' traffic to
# 127.0.0.1 from non-loopback sources.
makeIPTablesUtilChains: false
`, cgroupRoot, criProtocol+sock, kubeletPort, crt, key, cp.pki.caCert, filepath.Join(dir, "volume-plugins")))
	kubeletExited := start(ctx, t, dir, filepath.Join(cp.bins, "kubelet"), "--config="+filepath.Join(dir, "kubelet.yaml"),
		"--kubeconfig="+cp.kubeconfig, "--root-dir="+filepath.Join(dir, "kubelet"),
		"--hostname-override="+nodeName, "--node-ip="+hostIPs(t)[0].String())
	start(ctx, t, dir, filepath.Join(cp.bins, "kube-scheduler"), "--kubeconfig="+cp.kubeconfig,
		"--leader-elect=false", "--secure-port=0")
	waitNodeReady(ctx, t, cp.cs, kubeletExited)
	return n
}

func (n *node) criSocket() string { return filepath.Join(n.dir, "containerd.sock") }

// waitCRI waits until containerd answers CRI's Version.
func (n *node) waitCRI(ctx context.Context, t *testing.T, exited <-chan struct{}) {
	t.Helper()
	for {
		c, closeConn, err := n.cri()
		if err == nil {
			var v *cri.VersionResponse
			v, err = c.Version(ctx, &cri.VersionRequest{})
			closeConn()
			if err == nil {
				t.Logf("containerd: %s %s, CRI %s", v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion)
				return
			}
		}
		select {
		case <-exited:
			t.Fatalf("containerd exited before it answered CRI (its output below)")
		case <-ctx.Done():
			t.Fatalf("containerd's CRI: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (n *node) cri() (cri.RuntimeServiceClient, func(), error) {
	conn, err := grpc.NewClient(criProtocol+n.criSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return cri.NewRuntimeServiceClient(conn), func() { _ = conn.Close() }, nil
}

// loadImages builds the pause image (cmd/pause, static, FROM scratch) in
// Docker's engine and copies it and images from there into the node's
// containerd: nothing is pulled.
func (n *node) loadImages(ctx context.Context, t *testing.T, images []string) {
	t.Helper()
	build := t.TempDir()
	run(ctx, t, "", []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(build, "pause"), "./cmd/pause")
	write(t, filepath.Join(build, "Dockerfile"), "FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT [\"/pause\"]\n")
	run(ctx, t, build, []string{"DOCKER_BUILDKIT=0"}, "docker", "build", "-q", "-t", pauseImage, ".")
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", pauseImage).Run() })
	for _, img := range images {
		if err := exec.CommandContext(ctx, "docker", "image", "inspect", img).Run(); err != nil {
			fail(t, "no image %s in Docker's engine: build it with `make images`", img)
		}
	}
	archive := filepath.Join(build, "images.tar")
	run(ctx, t, "", nil, "docker", append([]string{"save", "-o", archive, pauseImage}, images...)...)
	run(ctx, t, "", nil, "ctr", "--address", n.criSocket(), "-n", "k8s.io", "images", "import", archive)
}

// waitNodeReady waits until the node is Ready with no taint left (the
// node lifecycle controller removes the not-ready one).
func waitNodeReady(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, kubelet <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	start := time.Now()
	last := "not registered"
	for {
		nd, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err == nil {
			ready := false
			for _, c := range nd.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = c.Status == corev1.ConditionTrue
					last = fmt.Sprintf("Ready=%s (%s: %s)", c.Status, c.Reason, c.Message)
				}
			}
			if ready && len(nd.Spec.Taints) == 0 {
				cpu := nd.Status.Allocatable[corev1.ResourceCPU]
				t.Logf("node %s Ready %v after the kubelet started, allocatable cpu %s memory %s", nodeName,
					time.Since(start).Round(time.Millisecond), cpu.String(), nd.Status.Allocatable.Memory())
				return
			}
			if ready {
				last = fmt.Sprintf("Ready, tainted %v", nd.Spec.Taints)
			}
		}
		select {
		case <-kubelet:
			t.Fatalf("the kubelet exited (its output below)")
		case <-ctx.Done():
			t.Fatalf("node %s not Ready: %s", nodeName, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// cleanUp undoes what the node did to the host, for whatever its stops
// left: the pods' processes (whatever is in the pods' cgroups), containerd's
// shims (they outlive it), the mounts under the node's folder (the pods'
// network namespaces among them), the bridge, the cgroups and the kernel
// settings the kubelet changed; then it removes the folder. The test's
// cleanups stop the kubelet, remove the pod sandboxes through CRI and stop
// containerd before it runs; sweepNodes runs it for a node whose test died.
func (n *node) cleanUp() error {
	for _, pid := range pidsWith(n.dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	killCgroup(cgroupRoot)
	time.Sleep(200 * time.Millisecond)
	unmountUnder(n.dir)
	_ = exec.Command("ip", "link", "delete", podBridge).Run()
	removeKubeletChains()
	removeCgroup(cgroupRoot)
	var errs []error
	if b, err := os.ReadFile(filepath.Join(n.dir, sysctlsFile)); err == nil {
		var saved map[string]string
		if err := json.Unmarshal(b, &saved); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sysctlsFile, err))
		}
		for k, v := range saved {
			if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("putting back %s=%s: %w", k, v, err))
			}
		}
	}
	if err := os.RemoveAll(n.dir); err != nil {
		errs = append(errs, fmt.Errorf("removing the node's files: %w", err))
	}
	return errors.Join(errs...)
}

// nodeDirPrefix names the nodes' folders in the temporary folder.
const nodeDirPrefix = "zkit-node-"

// sysctlsFile holds, in a node's folder, the kernel settings as they were
// before its kubelet started.
const sysctlsFile = "sysctls.json"

// sweepNodes cleans up after nodes whose test died without its cleanups:
// their processes (each names its node's folder) are killed and cleanUp
// runs for each.
func sweepNodes(t *testing.T) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), nodeDirPrefix+"*"))
	for _, d := range dirs {
		t.Logf("a node left by an earlier test: cleaning up %s", d)
		if err := (&node{dir: d}).cleanUp(); err != nil {
			t.Logf("cleaning up %s: %v", d, err)
		}
	}
}

// stopSandboxes removes every pod sandbox through CRI, as the kubelet would
// when pods go: containerd tears their network down and kills their
// containers. Called before containerd stops.
func (n *node) stopSandboxes(t *testing.T) {
	c, closeConn, err := n.cri()
	if err != nil {
		return
	}
	defer closeConn()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	list, err := c.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		return
	}
	for _, s := range list.Items {
		if _, err := c.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			t.Logf("stopping sandbox %s: %v", s.Metadata.GetName(), err)
		}
		if _, err := c.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			t.Logf("removing sandbox %s: %v", s.Metadata.GetName(), err)
		}
	}
}

// leftOnHost is what of a node is still on the host after its cleanup:
// kernel settings other than saved, the bridge, the cgroups, mounts and
// processes of a node folder, and the kubelet's iptables chains.
func leftOnHost(saved map[string]string) []string {
	var left []string
	for k, v := range saved {
		if b, _ := os.ReadFile("/proc/sys/" + k); strings.TrimSpace(string(b)) != v {
			left = append(left, fmt.Sprintf("%s=%s, was %s", k, strings.TrimSpace(string(b)), v))
		}
	}
	if _, err := net.InterfaceByName(podBridge); err == nil {
		left = append(left, "the bridge "+podBridge)
	}
	left = append(left, cgroupDirs(cgroupRoot)...)
	nodes := filepath.Join(os.TempDir(), nodeDirPrefix)
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(b), nodes) {
		left = append(left, "mounts under "+nodes+"*")
	}
	if pids := pidsWith(nodes); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes %v", pids))
	}
	for _, ipt := range []string{"iptables", "ip6tables"} {
		if out, err := exec.Command(ipt + "-save").Output(); err == nil && bytes.Contains(out, []byte(":KUBE-")) {
			left = append(left, ipt+" chains KUBE-*")
		}
	}
	return left
}

// saveSysctls writes the kernel settings the kubelet changes, as they are
// now, into the node's folder, and returns them.
func saveSysctls(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, k := range kernelSysctls {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			t.Fatal(err)
		}
		m[k] = strings.TrimSpace(string(b))
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, sysctlsFile), string(b))
	return m
}

// kubeletChains are the iptables chains a kubelet makes when
// makeIPTablesUtilChains is on (the node turns it off), by table, and the
// rules that jump to them.
var kubeletChains = map[string][]string{
	"filter": {"KUBE-FIREWALL", "KUBE-KUBELET-CANARY"},
	"nat":    {"KUBE-KUBELET-CANARY"},
	"mangle": {"KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY"},
}

// removeKubeletChains removes the kubelet's iptables chains, IPv4 and
// IPv6, should a kubelet have made them.
func removeKubeletChains() {
	for _, ipt := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(ipt); err != nil {
			continue
		}
		for _, from := range []string{"INPUT", "OUTPUT"} {
			_ = exec.Command(ipt, "-w", "-D", from, "-j", "KUBE-FIREWALL").Run()
		}
		for table, chains := range kubeletChains {
			for _, c := range chains {
				_ = exec.Command(ipt, "-w", "-t", table, "-F", c).Run()
				_ = exec.Command(ipt, "-w", "-t", table, "-X", c).Run()
			}
		}
	}
}

// cgroupDirs are the folders of cgroup path p in every v1 hierarchy.
func cgroupDirs(p string) []string {
	m, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", strings.TrimPrefix(p, "/")))
	return m
}

// makeCgroup makes cgroup p in every v1 hierarchy (the kubelet wants its
// cgroup root to exist), its cpuset holding the parent's CPUs and memory.
func makeCgroup(t *testing.T, p string) {
	t.Helper()
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		if st, err := os.Lstat(h); err != nil || !st.IsDir() {
			continue // the cpu,cpuacct links
		}
		d := filepath.Join(h, strings.TrimPrefix(p, "/"))
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			t.Fatalf("cgroup %s: %v", d, err)
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(h, f))
				if err == nil {
					err = os.WriteFile(filepath.Join(d, f), b, 0o644)
				}
				if err != nil {
					t.Fatalf("cgroup %s: %s: %v", d, f, err)
				}
			}
		}
	}
}

// killCgroup kills every process in cgroup p and below.
func killCgroup(p string) {
	for _, d := range cgroupDirs(p) {
		_ = filepath.WalkDir(d, func(path string, e os.DirEntry, err error) error {
			if err == nil && e.Name() == "cgroup.procs" {
				b, _ := os.ReadFile(path)
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			return nil
		})
	}
}

// removeCgroup removes cgroup p and its children, deepest first.
func removeCgroup(p string) {
	for _, d := range cgroupDirs(p) {
		var dirs []string
		_ = filepath.WalkDir(d, func(path string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			for range 20 {
				if err := syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, os.ErrNotExist) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
}

// pidsWith are the processes whose command line holds s.
func pidsWith(s string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// unmountUnder detaches every mount at or below dir, deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// hostIPs are this machine's non-loopback IPv4 addresses, the route to the
// outside first (the kubelet refuses a loopback node IP).
func hostIPs(t *testing.T) []net.IP {
	t.Helper()
	var ips []net.IP
	if c, err := net.Dial("udp", "192.0.2.1:9"); err == nil {
		ips = append(ips, c.LocalAddr().(*net.UDPAddr).IP.To4())
		_ = c.Close()
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !slices.ContainsFunc(ips, n.IP.Equal) {
			ips = append(ips, n.IP.To4())
		}
	}
	if len(ips) == 0 {
		t.Fatal("this machine has no non-loopback IPv4 address for the kubelet")
	}
	return ips
}

// hostPathVolume makes a PersistentVolume of a host folder (world-writable:
// the pods run as an unprivileged user), bound in advance to the claim
// namespace/claim.
func (n *node) hostPathVolume(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, namespace, claim string) string {
	t.Helper()
	path := filepath.Join(n.volumes, namespace+"-"+claim)
	if err := os.MkdirAll(path, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: namespace + "-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: namespace, Name: claim},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return path
}

// zookeeper starts a standalone ZooKeeper (Debian's package) that listens
// on every address of the host, so the pods reach it at podGateway, with no
// per-address connection limit (every pod's clients come from one IP).
// It returns the port.
func zookeeper(ctx context.Context, t *testing.T) int {
	t.Helper()
	const jar = "/usr/share/java/zookeeper.jar"
	if _, err := os.Stat(jar); err != nil {
		fail(t, "no %s: apt-get install zookeeper (make deps)", jar)
	}
	dir := t.TempDir()
	port := freePort(t)
	write(t, filepath.Join(dir, "zoo.cfg"), fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=0.0.0.0\n"+
		"maxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=*\nforceSync=no\n", dir, port))
	exited := start(ctx, t, dir, "java", "-Xmx1g", "-cp", jar+":/usr/share/java/slf4j-simple.jar",
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(dir, "zoo.cfg"))
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			_, _ = c.Write([]byte("ruok"))
			b := make([]byte, 4)
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			k, _ := c.Read(b)
			_ = c.Close()
			if string(b[:k]) == "imok" {
				return port
			}
		}
		select {
		case <-exited:
			t.Fatalf("ZooKeeper exited (its output below)")
		case <-ctx.Done():
			t.Fatalf("ZooKeeper not up on port %d: %v", port, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// run runs name with args in dir (empty: this package's), env added to
// this process's, and fails the test with its output if it fails.
func run(ctx context.Context, t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fail skips the test, saying what is missing; under CI=true it fails.
func fail(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// resultsFile is what the end-to-end test reads of a results.json.
type resultsFile struct {
	Status       string `json:"status"`
	MergedShards int    `json:"merged_shards"`
	Results      []struct {
		Workload string             `json:"workload"`
		Variant  string             `json:"variant"`
		Clients  int                `json:"clients"`
		PerOp    map[string]float64 `json:"per_op"`
		Latency  map[string]struct {
			Count int64 `json:"count"`
		} `json:"latency"`
		SessionsLost int64 `json:"sessions_lost"`
	} `json:"results"`
}

func readResults(t *testing.T, path string) resultsFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r resultsFile
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}
