package kube

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// strictDecoder decodes core/v1 and batch/v1 objects and fails on a field
// the API does not know, as kube-apiserver does with fieldValidation=Strict.
func strictDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// documents splits a file into its YAML documents.
func documents(t *testing.T, b []byte) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(b []byte) []byte {
	return regexp.MustCompile(`(?m)^#.*$`).ReplaceAll(b, nil)
}

func testSpec() Spec {
	return Spec{
		Name: "zkbench-lock-16k", Namespace: "bench", Image: "zkbench/zkbench:v1.2.3", Shards: 4, RunID: "lock-16k",
		RunSpec:  `{"config":{"backend":"zookeeper","clients":[16000]},"run_id":"lock-16k","shard":{"index":0,"count":4}}`,
		Deadline: 20 * time.Minute,
	}
}

// decodeAll builds spec's manifests, writes them as YAML and decodes every
// document strictly back into its type.
func decodeAll(t *testing.T, spec Spec) map[string]runtime.Object {
	t.Helper()
	m, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	dec := strictDecoder(t)
	objs := map[string]runtime.Object{}
	for _, f := range m.Files {
		b, err := m.Bytes(f)
		if err != nil {
			t.Fatal(err)
		}
		docs := documents(t, b)
		if len(docs) != len(f.Objects) {
			t.Fatalf("%s: %d documents, want %d", f.Name, len(docs), len(f.Objects))
		}
		for _, d := range docs {
			obj, gvk, err := dec.Decode(d, nil, nil)
			if err != nil {
				t.Fatalf("%s: strict decode: %v\n%s", f.Name, err, d)
			}
			objs[gvk.Kind+"/"+obj.(interface{ GetName() string }).GetName()] = obj
		}
	}
	return objs
}

func TestManifestsDecodeStrictly(t *testing.T) {
	spec := testSpec()
	objs := decodeAll(t, spec)
	for _, want := range []string{"ConfigMap/zkbench-lock-16k-config", "PersistentVolumeClaim/zkbench-lock-16k-results",
		"Job/zkbench-lock-16k", "Job/zkbench-lock-16k-merge", "Pod/zkbench-lock-16k-fetch"} {
		if objs[want] == nil {
			t.Errorf("no %s among the manifests", want)
		}
	}

	job := objs["Job/zkbench-lock-16k"].(*batchv1.Job)
	js := job.Spec
	switch {
	case js.CompletionMode == nil || *js.CompletionMode != batchv1.IndexedCompletion:
		t.Errorf("completionMode %v, want Indexed", js.CompletionMode)
	case js.Completions == nil || *js.Completions != 4, js.Parallelism == nil || *js.Parallelism != 4:
		t.Errorf("completions %v, parallelism %v: want both 4 (the shards)", js.Completions, js.Parallelism)
	case js.BackoffLimitPerIndex == nil || *js.BackoffLimitPerIndex != 0:
		t.Errorf("backoffLimitPerIndex %v, want 0", js.BackoffLimitPerIndex)
	case js.ActiveDeadlineSeconds == nil || *js.ActiveDeadlineSeconds != 1200:
		t.Errorf("activeDeadlineSeconds %v, want 1200", js.ActiveDeadlineSeconds)
	case js.PodFailurePolicy == nil || len(js.PodFailurePolicy.Rules) == 0:
		t.Error("no podFailurePolicy")
	case js.Template.Spec.RestartPolicy != corev1.RestartPolicyNever:
		t.Errorf("restartPolicy %s, want Never (required by podFailurePolicy)", js.Template.Spec.RestartPolicy)
	}
	for _, r := range js.PodFailurePolicy.Rules {
		if r.Action == batchv1.PodFailurePolicyActionIgnore || r.Action == batchv1.PodFailurePolicyActionCount {
			t.Errorf("pod failure rule %+v: a shard restarted late cannot rejoin its case", r)
		}
	}
	c := js.Template.Spec.Containers[0]
	if c.Image != "zkbench/zkbench:v1.2.3" || !slices.Equal(c.Command, []string{"/zkbench"}) {
		t.Errorf("shard container runs %s %v", c.Image, c.Command)
	}
	wantArgs := []string{"run", "--spec=/etc/zkbench/run/run-spec.json", "--output=/results/lock-16k/shards/$(JOB_COMPLETION_INDEX)", "--no-plots"}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("shard args\n %q\nwant\n %q", c.Args, wantArgs)
	}
	for _, dir := range []string{ResultsMount, ConfigMount} {
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir }) {
			t.Errorf("shard mounts %+v: no %s", c.VolumeMounts, dir)
		}
	}
	if !slices.ContainsFunc(js.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "zkbench-lock-16k-results"
	}) {
		t.Error("the shards do not mount the results claim")
	}

	merge := objs["Job/zkbench-lock-16k-merge"].(*batchv1.Job)
	margs := merge.Spec.Template.Spec.Containers[0].Args
	wantMerge := []string{"merge", "--shards-dir=/results/lock-16k/shards", "--shards=4", "--output=/results/lock-16k/merged"}
	if !slices.Equal(margs, wantMerge) {
		t.Errorf("merge args %q, want %q", margs, wantMerge)
	}
	// Each shard's --output, its index expanded, is the folder the merge
	// reads shard I from: <shards-dir>/I.
	for i := range 4 {
		out := strings.ReplaceAll(strings.TrimPrefix(wantArgs[2], "--output="), "$(JOB_COMPLETION_INDEX)", string(rune('0'+i)))
		if dir := strings.TrimPrefix(margs[1], "--shards-dir=") + "/" + string(rune('0'+i)); dir != out {
			t.Errorf("merge reads shard %d from %s, it writes to %s", i, dir, out)
		}
	}

	cm := objs["ConfigMap/zkbench-lock-16k-config"].(*corev1.ConfigMap)
	if cm.Data["shards"] != "4" || cm.Data["run-id"] != "lock-16k" || !strings.Contains(cm.Data["shard-command"], "'--output=/results/lock-16k/shards/$(JOB_COMPLETION_INDEX)'") ||
		cm.Data[SpecKey] != testSpec().RunSpec ||
		cm.Data["merge-command"] != "/zkbench "+strings.Join(wantMerge, " ")+"\n" {
		t.Errorf("config map %v", cm.Data)
	}

	// The default ReadWriteMany claim: the shards spread over the nodes.
	ps := js.Template.Spec
	if len(ps.TopologySpreadConstraints) != 1 || ps.TopologySpreadConstraints[0].TopologyKey != corev1.LabelHostname || ps.Affinity != nil {
		t.Errorf("placement: spread %+v, affinity %+v; want a spread over hostnames", ps.TopologySpreadConstraints, ps.Affinity)
	}
	checkSecurity(t, "shards", js.Template.Spec)
	checkSecurity(t, "merge", merge.Spec.Template.Spec)
	fetch := objs["Pod/zkbench-lock-16k-fetch"].(*corev1.Pod).Spec
	checkSecurity(t, "fetch", fetch)
	// The fetch pod runs the zkbench image (no other image to pull): it
	// archives the merged run's folder to its log, holding the volume
	// read-only, and exits.
	fc := fetch.Containers[0]
	if wantFetch := []string{"kube", "archive", "/results/lock-16k/merged/lock-16k"}; fc.Image != "zkbench/zkbench:v1.2.3" ||
		!slices.Equal(fc.Command, []string{"/zkbench"}) || !slices.Equal(fc.Args, wantFetch) {
		t.Errorf("fetch pod runs %s %q %q, want the shards' image, /zkbench %q", fc.Image, fc.Command, fc.Args, wantFetch)
	}
	// zkbench merge -o DIR writes DIR/<run-id>/results.json.
	if merged := strings.TrimPrefix(wantMerge[3], "--output=") + "/lock-16k"; fc.Args[2] != merged {
		t.Errorf("fetch pod archives %s, the merge writes %s", fc.Args[2], merged)
	}
	if fetch.RestartPolicy != corev1.RestartPolicyNever || fetch.ActiveDeadlineSeconds == nil || *fetch.ActiveDeadlineSeconds != 600 {
		t.Errorf("fetch pod: restartPolicy %s, activeDeadlineSeconds %v; want Never, 600", fetch.RestartPolicy, fetch.ActiveDeadlineSeconds)
	}
	for _, v := range fetch.Volumes {
		if v.PersistentVolumeClaim != nil && !v.PersistentVolumeClaim.ReadOnly {
			t.Errorf("fetch pod mounts the claim writable: %+v", v)
		}
	}
	for _, m := range fc.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("fetch pod mounts %s writable", m.MountPath)
		}
	}
	for k, o := range objs {
		if o.(interface{ GetNamespace() string }).GetNamespace() != "bench" {
			t.Errorf("%s is not in namespace bench", k)
		}
	}
}

// checkSecurity checks that pod spec ps (as decoded) meets the "restricted"
// Pod Security Standard and can write the results volume: non-root with a
// fixed uid and gid, fsGroup, RuntimeDefault seccomp, and every container
// without privilege escalation or capabilities.
func checkSecurity(t *testing.T, what string, ps corev1.PodSpec) {
	t.Helper()
	sc := ps.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("%s: no pod securityContext", what)
		return
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Errorf("%s: runAsNonRoot %v", what, sc.RunAsNonRoot)
	case sc.RunAsUser == nil || *sc.RunAsUser != UID || sc.RunAsGroup == nil || *sc.RunAsGroup != UID:
		t.Errorf("%s: runAsUser %v, runAsGroup %v, want %d", what, sc.RunAsUser, sc.RunAsGroup, UID)
	case sc.FSGroup == nil || *sc.FSGroup != UID:
		t.Errorf("%s: fsGroup %v, want %d (the pods write the results volume)", what, sc.FSGroup, UID)
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("%s: seccompProfile %+v, want RuntimeDefault", what, sc.SeccompProfile)
	}
	if len(ps.Containers) == 0 {
		t.Errorf("%s: no containers", what)
	}
	for _, c := range ps.Containers {
		cs := c.SecurityContext
		switch {
		case cs == nil:
			t.Errorf("%s: container %s has no securityContext", what, c.Name)
		case cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation:
			t.Errorf("%s: container %s: allowPrivilegeEscalation %v", what, c.Name, cs.AllowPrivilegeEscalation)
		case cs.Capabilities == nil || !slices.Equal(cs.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(cs.Capabilities.Add) > 0:
			t.Errorf("%s: container %s: capabilities %+v, want drop ALL", what, c.Name, cs.Capabilities)
		case cs.Privileged != nil && *cs.Privileged, cs.RunAsUser != nil && *cs.RunAsUser == 0:
			t.Errorf("%s: container %s: privileged or root: %+v", what, c.Name, cs)
		}
	}
}

// With a ReadWriteOnce claim (mounted on one node only) the shards are not
// spread: each is required on the node of the others.
func TestReadWriteOnceCoLocatesShards(t *testing.T) {
	spec := testSpec()
	spec.AccessMode = corev1.ReadWriteOnce
	objs := decodeAll(t, spec)
	if c := objs["PersistentVolumeClaim/zkbench-lock-16k-results"].(*corev1.PersistentVolumeClaim); !slices.Equal(c.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
		t.Errorf("claim access modes %v", c.Spec.AccessModes)
	}
	ps := objs["Job/zkbench-lock-16k"].(*batchv1.Job).Spec.Template
	if len(ps.Spec.TopologySpreadConstraints) > 0 {
		t.Errorf("shards spread over nodes with a ReadWriteOnce claim: %+v", ps.Spec.TopologySpreadConstraints)
	}
	a := ps.Spec.Affinity
	if a == nil || a.PodAffinity == nil || len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("affinity %+v: want one required pod affinity term", a)
	}
	term := a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	if term.TopologyKey != corev1.LabelHostname || term.LabelSelector == nil || len(term.LabelSelector.MatchLabels) == 0 {
		t.Fatalf("affinity term %+v", term)
	}
	// The term selects the shards' own pods (and so their node).
	for k, v := range term.LabelSelector.MatchLabels {
		if ps.Labels[k] != v {
			t.Errorf("affinity selects %s=%s, the shards' pods have %s=%q", k, v, k, ps.Labels[k])
		}
	}
}

// The merge names the shards' folder, not each file: the objects do not
// grow with the shards, and each stays under what kubectl apply can store.
func TestManifestsStaySmall(t *testing.T) {
	spec := testSpec()
	spec.Shards, spec.RunID, spec.Name = 100000, strings.Repeat("r", 64), "zk"
	m, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		b, err := m.Bytes(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 8<<10 {
			t.Errorf("%s: %d bytes at 100,000 shards", f.Name, len(b))
		}
	}
	if args := spec.MergeArgs(); len(args) != 4 || args[2] != "--shards=100000" {
		t.Errorf("merge args %q", args)
	}
}

// WaitCommand's loop ends on Complete (exit 0) and on Failed or a kubectl
// that fails (exit 1), and polls while the Job runs; run with a kubectl
// that answers from a file.
func TestWaitCommand(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatalf("no sh: %v", err)
	}
	for _, c := range []struct {
		answers []string // conditions per call; "!" fails the call
		ok      bool
		calls   int
		out     string
	}{
		{[]string{"SuccessCriteriaMet Complete"}, true, 1, "job/j: SuccessCriteriaMet Complete"},
		{[]string{"FailureTarget Failed"}, false, 1, "job/j: FailureTarget Failed"},
		{[]string{"", "FailureTarget", "SuccessCriteriaMet Complete"}, true, 3, "Complete"},
		{[]string{"!"}, false, 1, "job/j: not found"},
	} {
		dir := t.TempDir()
		for i, a := range c.answers {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprint("answer", i+1)), []byte(a), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fake := `#!/bin/sh
d=` + dir + `
echo "$*" >>$d/calls
n=$(wc -l <$d/calls | tr -d ' ')
a=$(cat $d/answer$n 2>/dev/null) || exit 1
[ "$a" = "!" ] && { echo 'Error from server (NotFound)' >&2; exit 1; }
printf '%s' "$a"
`
		if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, "sh", "-c", WaitCommand("bench", "j", 0))
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		cancel()
		calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
		lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
		if (err == nil) != c.ok || !strings.Contains(string(out), c.out) || len(lines) != c.calls {
			t.Errorf("answers %q: err %v, output %q, calls %q; want ok %v, %q, %d calls", c.answers, err, out, lines, c.ok, c.out, c.calls)
		}
		if want := `-n bench get job/j -o jsonpath={.status.conditions[?(@.status=="True")].type}`; lines[0] != want {
			t.Errorf("kubectl %s, want kubectl %s", lines[0], want)
		}
	}
}

// A misspelled or unknown field fails the strict decoder that the test
// above reads the manifests with (so its passing means something).
func TestStrictDecodeRefusesUnknownFields(t *testing.T) {
	m, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	var job File
	for _, f := range m.Files {
		if f.Name == "20-shards-job.yaml" {
			job = f
		}
	}
	b, err := m.Bytes(job)
	if err != nil {
		t.Fatal(err)
	}
	dec := strictDecoder(t)
	if _, _, err := dec.Decode(b, nil, nil); err != nil {
		t.Fatalf("the Job as written: %v", err)
	}
	for _, c := range []struct{ from, to string }{
		{"completionMode:", "completionMod:"},
		{"backoffLimitPerIndex:", "backoffLimitPerIndx:"},
		{"restartPolicy:", "restartpolicy:"},
		{"  parallelism:", "  parallelism: 4\n  parallelismm:"},
	} {
		bad := bytes.Replace(b, []byte(c.from), []byte(c.to), 1)
		if bytes.Equal(bad, b) {
			t.Fatalf("%q is not in the Job", c.from)
		}
		if _, _, err := dec.Decode(bad, nil, nil); err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("%s -> %s: decoded (err %v), want an unknown field error", c.from, c.to, err)
		}
	}
}

func TestManifestsExistingClaimAndSecrets(t *testing.T) {
	spec := testSpec()
	spec.Claim = "nfs-results"
	spec.PasswordSecret = "etcd-auth:password"
	spec.TLSSecret = "etcd-tls"
	spec.NoPlots = true
	objs := decodeAll(t, spec)
	if objs["PersistentVolumeClaim/zkbench-lock-16k-results"] != nil {
		t.Error("a claim was written though --claim names an existing one")
	}
	job := objs["Job/zkbench-lock-16k"].(*batchv1.Job)
	ps := job.Spec.Template.Spec
	if !slices.ContainsFunc(ps.Volumes, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "nfs-results"
	}) || !slices.ContainsFunc(ps.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "etcd-tls" }) {
		t.Errorf("volumes %+v", ps.Volumes)
	}
	env := ps.Containers[0].Env
	if len(env) != 1 || env[0].Name != PasswordEnv || env[0].ValueFrom.SecretKeyRef.Name != "etcd-auth" || env[0].ValueFrom.SecretKeyRef.Key != "password" {
		t.Errorf("env %+v", env)
	}
	if args := objs["Job/zkbench-lock-16k-merge"].(*batchv1.Job).Spec.Template.Spec.Containers[0].Args; args[len(args)-1] != "--no-plots" {
		t.Errorf("merge args %q: no --no-plots", args)
	}
}

func TestSpecRefuses(t *testing.T) {
	for _, c := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Shards = 0 }, "--shards 0"},
		{func(s *Spec) { s.Shards = 100001 }, "at most 100,000"},
		{func(s *Spec) { s.Name = "Lock_16k" }, "not a DNS label"},
		{func(s *Spec) { s.Name = strings.Repeat("a", 60) }, "give a shorter --name"},
		{func(s *Spec) { s.Image = "" }, "--image"},
		{func(s *Spec) { s.PasswordSecret = "etcd-auth" }, "want SECRET:KEY"},
		{func(s *Spec) { s.Namespace = "Bench" }, "--namespace"},
		{func(s *Spec) { s.AccessMode = corev1.ReadWriteOncePod }, "--access-mode ReadWriteOncePod with --shards 4: only one pod can mount the claim"},
		{func(s *Spec) { s.AccessMode = "ReadOnlyMany" }, `--access-mode "ReadOnlyMany"`},
		{func(s *Spec) {
			s.RunSpec = strings.Replace(s.RunSpec, "16000", strings.Repeat("1000,", 50000)+"1000", 1)
		}, "kubectl apply can keep"},
		{func(s *Spec) { s.RunSpec = "" }, "no run spec"},
	} {
		s := testSpec()
		c.edit(&s)
		_, err := Build(s)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", s, err, c.want)
		}
	}
}

// One shard may have the claim to itself.
func TestReadWriteOncePodOneShard(t *testing.T) {
	spec := testSpec()
	spec.Shards, spec.AccessMode = 1, corev1.ReadWriteOncePod
	decodeAll(t, spec)
}

func TestShellQuote(t *testing.T) {
	got := ShellQuote([]string{"/zkbench", "run", "--output=/r/$(X)", "it's", ""})
	if want := `/zkbench run '--output=/r/$(X)' 'it'\''s' ''`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
