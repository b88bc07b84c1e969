package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
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

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// The run the test generates manifests for.
const (
	namespace = "zkbench-it"
	runID     = "kube-it"
	jobName   = "zkbench-kube-it"
	shards    = 3
	image     = "zkbench/zkbench:it"
)

var runFlags = []string{"--backend=zookeeper", "--clients=30", "--duration=10s",
	"--endpoints=zk-0.zk:2181", "--endpoints=zk-1.zk:2181", "--variants=naive,fair"}

// TestIndexedJobPods applies the manifests `zkbench kube job` writes to a
// real kube-apiserver (strict field validation) and checks the pods the
// real Job controller makes of the shards' Job: one per index, each with its
// completion index, JOB_COMPLETION_INDEX resolving to it, the image, and the
// command and arguments zkbench expects; the merge Job's pod reads the
// shards' folder. The namespace enforces the "restricted" Pod Security
// Standard, so every pod was admitted under it. No scheduler or kubelet
// runs: the pods stay Pending.
func TestIndexedJobPods(t *testing.T) {
	bins := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cs := startControlPlane(ctx, t, bins).cs

	dir := t.TempDir()
	args := append([]string{"kube", "job", "--shards", strconv.Itoa(shards), "--run-id", runID,
		"--namespace", namespace, "--image", image, "-o", dir}, runFlags...)
	out, err := exec.CommandContext(ctx, zkbench(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("zkbench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	// The namespace enforces the "restricted" Pod Security Standard: the
	// API server's PodSecurity admission refuses the fetch pod, and the
	// shards' and merge's pods the Job controller makes, unless each meets it.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, jobName, "*.yaml"))
	if err != nil || len(files) != 5 {
		t.Fatalf("manifests %v (%v), want 5 files\n%s", files, err, out)
	}
	// Absolute paths: this client posts to any group.
	rc := cs.CoreV1().RESTClient()
	for _, f := range files {
		for _, doc := range documents(t, f) {
			create(ctx, t, rc, doc)
		}
	}

	// PodSecurity admission is on: a pod without the manifests' security
	// contexts is refused in that namespace.
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: namespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, bare, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Errorf("a pod without security contexts: %v, want a PodSecurity refusal", err)
	}

	// The server's strict validation is what accepted the files: a
	// misspelled field is refused.
	b, err := os.ReadFile(filepath.Join(dir, jobName, "30-merge-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(bytes.Replace(b, []byte("backoffLimit:"), []byte("backofLimit:"), 1), []byte("name: "+jobName+"-merge"), []byte("name: misspelled"), 1)
	if err := post(ctx, rc, bad); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("a Job with backofLimit: %v, want an unknown field error", err)
	}

	pods := waitPods(ctx, t, cs, "app.kubernetes.io/instance="+jobName+",app.kubernetes.io/component=shard", shards)
	seen := map[int]bool{}
	for _, p := range pods {
		i := checkShardPod(t, p)
		if seen[i] {
			t.Errorf("index %d given to two pods", i)
		}
		seen[i] = true
	}
	for i := range shards {
		if !seen[i] {
			t.Errorf("no pod has index %d", i)
		}
	}

	merge := waitPods(ctx, t, cs, "app.kubernetes.io/instance="+jobName+",app.kubernetes.io/component=merge", 1)[0]
	c := merge.Spec.Containers[0]
	want := []string{"merge", "--shards-dir=/results/" + runID + "/shards", "--shards=" + strconv.Itoa(shards), "--output=/results/" + runID + "/merged"}
	if c.Image != image || !slices.Equal(c.Command, []string{"/zkbench"}) || !slices.Equal(c.Args, want) {
		t.Errorf("merge pod runs %s %q %q, want %s /zkbench %q", c.Image, c.Command, c.Args, image, want)
	}
	if merge.Status.Phase != corev1.PodPending {
		t.Errorf("merge pod %s: %s, want Pending (no kubelet runs here)", merge.Name, merge.Status.Phase)
	}
}

// checkShardPod checks one shard's pod and returns its index.
func checkShardPod(t *testing.T, p corev1.Pod) int {
	t.Helper()
	i, err := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
	if err != nil || i < 0 || i >= shards {
		t.Fatalf("pod %s: completion index %q (%v)", p.Name, p.Annotations[batchv1.JobCompletionIndexAnnotation], err)
	}
	if want := fmt.Sprintf("%s-%d", jobName, i); p.Spec.Hostname != want {
		t.Errorf("pod %s: hostname %q, want %q", p.Name, p.Spec.Hostname, want)
	}
	c := p.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = resolve(t, p, e)
	}
	if env["JOB_COMPLETION_INDEX"] != strconv.Itoa(i) {
		t.Errorf("pod %s (index %d): JOB_COMPLETION_INDEX %q (env %+v)", p.Name, i, env["JOB_COMPLETION_INDEX"], c.Env)
	}
	// The run's spec is the ConfigMap's, mounted (kube.SpecFile: this
	// module does not import zkbench's).
	want := []string{"run", "--spec=/etc/zkbench/run/run-spec.json", "--output=/results/" + runID + "/shards/$(JOB_COMPLETION_INDEX)", "--no-plots"}
	if c.Image != image || !slices.Equal(c.Command, []string{"/zkbench"}) || !slices.Equal(c.Args, want) {
		t.Errorf("pod %s runs %s %q %q\nwant %s /zkbench %q", p.Name, c.Image, c.Command, c.Args, image, want)
	}
	// As the kubelet expands $(VAR) from the container's environment: the
	// shard writes under its own folder.
	if out := expand(c.Args[len(c.Args)-2], env); out != fmt.Sprintf("--output=/results/%s/shards/%d", runID, i) {
		t.Errorf("pod %s: %s", p.Name, out)
	}
	t.Logf("pod %s: index %d, JOB_COMPLETION_INDEX=%s, %s %s %s", p.Name, i, env["JOB_COMPLETION_INDEX"], c.Image, c.Command[0], strings.Join(c.Args, " "))
	if p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
		t.Errorf("pod %s: phase %s on node %q, want Pending on none (no scheduler runs here)", p.Name, p.Status.Phase, p.Spec.NodeName)
	}
	return i
}

// resolve is the value the kubelet would give env var e in pod p.
func resolve(t *testing.T, p corev1.Pod, e corev1.EnvVar) string {
	if e.ValueFrom == nil {
		return e.Value
	}
	ref := e.ValueFrom.FieldRef
	if ref == nil {
		t.Fatalf("pod %s: env %s from %+v", p.Name, e.Name, e.ValueFrom)
	}
	for prefix, m := range map[string]map[string]string{"metadata.annotations": p.Annotations, "metadata.labels": p.Labels} {
		if key, ok := strings.CutPrefix(ref.FieldPath, prefix+"['"); ok {
			return m[strings.TrimSuffix(key, "']")]
		}
	}
	t.Fatalf("pod %s: env %s from field %s", p.Name, e.Name, ref.FieldPath)
	return ""
}

func expand(s string, env map[string]string) string {
	for k, v := range env {
		s = strings.ReplaceAll(s, "$("+k+")", v)
	}
	return s
}

func waitPods(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, selector string, n int) []corev1.Pod {
	t.Helper()
	for {
		list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err == nil && len(list.Items) >= n {
			if len(list.Items) > n {
				t.Fatalf("%d pods for %s, want %d", len(list.Items), selector, n)
			}
			return list.Items
		}
		select {
		case <-ctx.Done():
			got := 0
			if list != nil {
				got = len(list.Items)
			}
			t.Fatalf("the Job controller made %d of %d pods for %s (last error %v): %v", got, n, selector, err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// documents are a manifest file's YAML documents, as JSON.
func documents(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if err == io.EOF {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if j, err := yaml.YAMLToJSON(d); err != nil {
			t.Fatalf("%s: %v", path, err)
		} else if string(j) != "null" {
			docs = append(docs, j)
		}
	}
}

func create(ctx context.Context, t *testing.T, rc rest.Interface, doc []byte) {
	t.Helper()
	if err := post(ctx, rc, doc); err != nil {
		t.Fatalf("create %s: %v", doc, err)
	}
}

// resources are the kinds the manifests hold, by their API path.
var resources = map[string]string{
	"ConfigMap": "api/v1", "PersistentVolumeClaim": "api/v1", "Pod": "api/v1", "Job": "apis/batch/v1",
}

// post creates doc (YAML or JSON) as written, with the server's strict
// field validation: an unknown or duplicated field is an error, not a
// warning.
func post(ctx context.Context, rc rest.Interface, doc []byte) error {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(j); err != nil {
		return err
	}
	prefix, ok := resources[u.GetKind()]
	if !ok {
		return fmt.Errorf("unexpected kind %s", u.GetKind())
	}
	plural := strings.ToLower(u.GetKind()) + "s"
	return rc.Post().AbsPath(prefix, "namespaces", u.GetNamespace(), plural).
		Param("fieldValidation", "Strict").SetHeader("Content-Type", "application/json").
		Body(j).Do(ctx).Error()
}

// binaries is the folder build.sh built the control plane into; without
// it the test skips (under CI=true it fails), saying how to build it.
func binaries(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ZKBENCH_KUBE_BIN")
	if dir == "" {
		out, err := exec.Command("./build.sh", "--dir").Output()
		if err != nil {
			t.Fatalf("build.sh --dir: %v", err)
		}
		dir = strings.TrimSpace(string(out))
	}
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			msg := fmt.Sprintf("no %s in %s: build the control plane with `make kube-bins` (about 30 minutes cold on 2 cores, once per machine)", b, dir)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return dir
}

// zkbench is the zkbench binary: $ZKBENCH_BIN, or built from this
// repository.
func zkbench(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("ZKBENCH_BIN"); b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	bin := filepath.Join(t.TempDir(), "zkbench")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/zkbench")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/zkbench: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// controlPlane is a running control plane: a client of system:masters,
// the kubeconfig file that says the same, its PKI and the folder of the
// binaries.
type controlPlane struct {
	cs         *kubernetes.Clientset
	kubeconfig string
	pki        pki
	bins       string
}

// controllers are the kube-controller-manager controllers a node needs to
// run the manifests' Jobs: Jobs' pods, service accounts and their tokens'
// root CA, the node lifecycle (it lifts the not-ready taint), volume
// binding and attachment, the protections that let a claim in use be
// deleted once unused, and the garbage collectors that delete a Job's pods
// with it.
var controllers = []string{"job-controller", "serviceaccount-controller", "root-ca-certificate-publisher-controller",
	"node-lifecycle-controller", "persistentvolume-binder-controller", "garbage-collector-controller",
	"pod-garbage-collector-controller", "ttl-after-finished-controller", "persistentvolume-attach-detach-controller",
	"persistentvolumeclaim-protection-controller", "persistentvolume-protection-controller"}

// startControlPlane starts etcd, kube-apiserver (client certificates, RBAC)
// and kube-controller-manager with the controllers above, all on
// 127.0.0.1, stopped when the test ends; it returns once the server is
// ready. No node runs pods until startNode makes one.
func startControlPlane(ctx context.Context, t *testing.T, bins string) *controlPlane {
	t.Helper()
	dir := t.TempDir()
	pki := newPKI(t, dir)
	kubeletCrt, kubeletKey := pki.issue(t, dir, "apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, false, nil)

	etcdPort, peerPort, apiPort := freePort(t), freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	start(ctx, t, dir, filepath.Join(bins, "etcd"), "--name=it", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL, "--initial-cluster=it="+peerURL,
		"--unsafe-no-fsync")
	apiserver := start(ctx, t, dir, filepath.Join(bins, "kube-apiserver"), "--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(apiPort),
		"--tls-cert-file="+pki.serverCert, "--tls-private-key-file="+pki.serverKey, "--client-ca-file="+pki.caCert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+pki.saKey, "--service-account-signing-key-file="+pki.saKey,
		"--service-cluster-ip-range=10.0.0.0/24", "--authorization-mode=RBAC",
		// The endpoints of the kubernetes Service may not be loopback
		// addresses; nothing here needs that Service.
		"--endpoint-reconciler-type=none",
		// Logs and exec go from the server to the kubelet.
		"--kubelet-client-certificate="+kubeletCrt, "--kubelet-client-key="+kubeletKey,
		"--kubelet-preferred-address-types=InternalIP")

	cfg := &rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", apiPort),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: pki.caPEM, CertData: pki.clientPEM, KeyData: pki.clientKeyPEM,
		},
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			break
		}
		select {
		case <-apiserver:
			t.Fatalf("kube-apiserver exited before it was ready (its output below)")
		case <-ctx.Done():
			t.Fatalf("kube-apiserver not ready: %v (%s)", err, body)
		case <-time.After(250 * time.Millisecond):
		}
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, kubeconfig, cfg)
	start(ctx, t, dir, filepath.Join(bins, "kube-controller-manager"), "--kubeconfig="+kubeconfig,
		"--controllers="+strings.Join(controllers, ","), "--leader-elect=false", "--secure-port=0",
		"--root-ca-file="+pki.caCert, "--service-account-private-key-file="+pki.saKey,
		"--node-monitor-grace-period=20s")
	return &controlPlane{cs: cs, kubeconfig: kubeconfig, pki: pki, bins: bins}
}

// start runs bin with args until the test ends; its output goes to a log
// file that a failing test prints. The channel is closed when it exits.
func start(ctx context.Context, t *testing.T, dir, bin string, args ...string) <-chan struct{} {
	t.Helper()
	name := filepath.Base(bin)
	logPath := filepath.Join(dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 10 * time.Second
	// It dies with the test, even one that a timeout's panic ends
	// before its cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = log.Close()
		if t.Failed() {
			t.Logf("%s's errors and last output:\n%s", name, logExcerpt(logPath))
		}
	})
	return exited
}

// logExcerpt is what a failing test shows of a component's log: its first
// 20 error lines (klog's E and F) and its last 3,000 bytes.
func logExcerpt(path string) string {
	b, _ := os.ReadFile(path)
	var errs []string
	for _, line := range strings.Split(string(b), "\n") {
		if len(errs) < 20 && len(line) > 5 && (line[0] == 'E' || line[0] == 'F') && line[1] >= '0' && line[1] <= '9' {
			errs = append(errs, line)
		}
	}
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return strings.Join(errs, "\n") + "\n...\n" + string(b)
}

func writeKubeconfig(t *testing.T, path string, cfg *rest.Config) {
	t.Helper()
	b64 := base64.StdEncoding.EncodeToString
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: it
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: it
  context: {cluster: it, user: admin}
current-context: it
`, cfg.Host, b64(cfg.CAData), b64(cfg.CertData), b64(cfg.KeyData))
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
}

type pki struct {
	caCert, serverCert, serverKey, saKey string
	caPEM, clientPEM, clientKeyPEM       []byte
	ca                                   *x509.Certificate
	caKey                                *ecdsa.PrivateKey
	serial                               *int64
}

// leaf makes a certificate signed by the CA and its key, as PEM.
func (p pki) leaf(t *testing.T, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, []byte) {
	t.Helper()
	key := ecKey(t)
	*p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(*p.serial), Subject: subject, IPAddresses: ips, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// issue writes a certificate for cn in groups (a server's for ips if
// server, else a client's) and its key into dir; it returns their paths.
func (p pki) issue(t *testing.T, dir, name, cn string, groups []string, server bool, ips []net.IP) (string, string) {
	t.Helper()
	usage := x509.ExtKeyUsageClientAuth
	if server {
		usage = x509.ExtKeyUsageServerAuth
	}
	crt, key := p.leaf(t, pkix.Name{CommonName: cn, Organization: groups}, usage, ips)
	return writeFile(t, dir, name+".pem", crt), writeFile(t, dir, name+"-key.pem", key)
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newPKI makes a CA, the server's certificate for 127.0.0.1, an admin
// client certificate (system:masters) and the service accounts' key.
func newPKI(t *testing.T, dir string) pki {
	t.Helper()
	caKey := ecKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zkbench-it-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	serial := int64(1)
	p := pki{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), ca: ca, caKey: caKey, serial: &serial}
	serverPEM, serverKeyPEM := p.leaf(t, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	p.clientPEM, p.clientKeyPEM = p.leaf(t, pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil)
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	saPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(sa)})
	write := func(name string, b []byte) string { return writeFile(t, dir, name, b) }
	p.caCert = write("ca.pem", p.caPEM)
	p.serverCert = write("server.pem", serverPEM)
	p.serverKey = write("server-key.pem", serverKeyPEM)
	p.saKey = write("sa-key.pem", saPEM)
	return p
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
