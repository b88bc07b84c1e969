package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
)

func sampleRun(t testing.TB) *Run {
	t.Helper()
	rec := NewRecorder()
	for i := 1; i <= 100; i++ {
		Record(rec, time.Duration(i)*time.Millisecond)
	}
	h, err := NewHistogram(rec)
	if err != nil {
		t.Fatal(err)
	}
	return &Run{
		Format: FormatVersion,
		ID:     "read-test",
		Status: StatusComplete,
		Config: Config{Workload: "lock", Backend: "etcd", Clients: []int{4}},
		Results: []Result{{
			Workload: "lock", Variant: "naive", Backend: "etcd", Clients: 4,
			Ops:        Ops{Issued: 100, Succeeded: 100},
			Throughput: 50,
			Latency:    map[figures.Latency]*Histogram{"acquire": h},
			PerOp:      map[string]float64{"watch_events": 3},
		}},
	}
}

func TestReadFileRoundTrip(t *testing.T) {
	want := sampleRun(t)
	raw, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != want.ID || len(got.Results) != 1 || got.Results[0].PerOp["watch_events"] != 3 {
		t.Fatalf("read back %+v", got)
	}
	p99, err := got.Results[0].Latency["acquire"].Quantile(99)
	if err != nil {
		t.Fatal(err)
	}
	if p99 < 98*time.Millisecond || p99 > 100*time.Millisecond {
		t.Fatalf("p99 after round trip = %v, want about 99ms", p99)
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		path    string
		is      error
		message string
	}{
		{"missing", filepath.Join(dir, "nope.json"), fs.ErrNotExist, "nope.json"},
		{"directory", dir, ErrInvalid, "is a directory"},
		{"empty", write("empty.json", "  \n"), ErrInvalid, "is empty"},
		{"not json", write("text.json", "hello"), ErrInvalid, "text.json: not a whole JSON document"},
		{"cut short", write("cut.json", `{"format":1,"results":[{"clie`), ErrInvalid, "so this one was cut short or edited"},
		{"an array", write("array.json", `[1]`), ErrInvalid, "a JSON array where a results file has an object"},
		{"no format", write("nofmt.json", `{"id":"x"}`), ErrInvalid, `no "format" field`},
		{"format zero", write("zero.json", `{"format":0}`), ErrInvalid, "format 0"},
		{"newer", write("new.json", `{"format":99,"results":"changed shape"}`), ErrNewerFormat,
			"results file " + filepath.Join(dir, "new.json") + " is format 99; this zkbench reads up to 1: upgrade zkbench"},
		{"trailing", write("trail.json", `{"format":1}{"format":1}`), ErrInvalid, "after top-level value"},
		{"wrong type", write("type.json", `{"format":1,"results":[{"clients":"many"}]}`), ErrInvalid, `type.json: field "results.clients" holds a JSON string where a results file has a JSON number`},
		{"null histogram", write("null.json", `{"format":1,"results":[{"latency":{"acquire":null}}]}`), ErrInvalid, `latency "acquire" is null`},
		{"unit", write("unit.json", `{"format":1,"results":[{"latency":{"acquire":{"unit":"ms"}}}]}`), ErrInvalid, `unit "ms"`},
		{"negative clients", write("neg.json", `{"format":1,"results":[{"clients":-1}]}`), ErrInvalid, "-1 clients"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, err := ReadFile(tt.path)
			if err == nil {
				t.Fatalf("ReadFile = %+v, want an error", run)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not say %q", err, tt.message)
			}
		})
	}
}

// FuzzDecode checks that Decode never panics, and that whatever it accepts
// encodes and decodes again to the same run.
func FuzzDecode(f *testing.F) {
	good, err := json.Marshal(sampleRun(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"format":1}`))
	f.Add([]byte(`{"format":2}`))
	f.Add([]byte(`{"format":1,"results":[{"latency":{"a":{"unit":"ns","hdr":"!!"}}}]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		run, err := Decode(bytes.NewReader(data))
		if err != nil {
			if run != nil {
				t.Fatalf("Decode returned a run and an error %v", err)
			}
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrNewerFormat) {
				t.Fatalf("Decode error %v wraps neither ErrInvalid nor ErrNewerFormat", err)
			}
			return
		}
		if run.Format < 1 || run.Format > FormatVersion {
			t.Fatalf("accepted format %d", run.Format)
		}
		again, err := json.Marshal(run)
		if err != nil {
			t.Fatalf("accepted run does not encode: %v", err)
		}
		run2, err := Decode(bytes.NewReader(again))
		if err != nil {
			t.Fatalf("re-encoded run does not decode: %v", err)
		}
		third, _ := json.Marshal(run2)
		if !bytes.Equal(again, third) {
			t.Fatalf("decode/encode not stable:\n%s\n%s", again, third)
		}
		// Stored histograms must never panic when decoded, valid or not.
		for _, res := range run.Results {
			for _, h := range res.Latency {
				_, _ = h.Decode()
			}
		}
	})
}

// TestTimelineClient: client 0 is written and read back as 0, "no client"
// as NoClient, and a format 1 file from before the field was always written
// (client 0 omitted, -1 written) reads as it meant.
func TestTimelineClient(t *testing.T) {
	run := sampleRun(t)
	run.Timeline = []TimelineEvent{
		{At: time.Second, Kind: "session", What: "expired", Client: 0},
		{At: 2 * time.Second, Kind: "fault", What: "kill-leader (server 1)", Client: NoClient},
		{At: 3 * time.Second, Kind: "session", What: "lost", Client: 7},
	}
	raw, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"what":"expired","client":0}`)) {
		t.Fatalf("client 0 not written: %s", raw)
	}
	got, err := Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range got.Timeline {
		if e != run.Timeline[i] {
			t.Errorf("event %d read back as %+v, want %+v", i, e, run.Timeline[i])
		}
	}

	old := `{"format":1,"id":"old","status":"complete","results":[],"timeline":[` +
		`{"at_ns":1000,"kind":"session","what":"expired"},` +
		`{"at_ns":2000,"kind":"case","what":"start fair-3-1","client":-1}]}`
	got, err = Decode(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if c0, c1 := got.Timeline[0].Client, got.Timeline[1].Client; c0 != 0 || c1 != NoClient {
		t.Fatalf("old file's clients read as %d, %d; want 0, %d", c0, c1, NoClient)
	}
}

// An older file counted acquisitions still waiting at the end as failed,
// under Errors["stopped_waiting"]; Decode moves them to Ops.StillWaiting, so
// that the error count and Failed hold real errors only, and the file stays
// valid. docs/runs/lock-etcd/results.json is such a file.
func TestDecodeMovesStoppedWaiting(t *testing.T) {
	old := `{"format":1,"id":"old","status":"complete","config":{"workload":"lock"},"results":[
		{"workload":"lock","variant":"fair","clients":1000,"stopped_by":"duration",
		 "ops":{"issued":1500,"succeeded":500,"failed":1000,"unknown":0},
		 "errors":{"stopped_waiting":999,"session_lost":1}},
		{"workload":"lock","variant":"naive","clients":10,"stopped_by":"duration",
		 "ops":{"issued":19,"succeeded":10,"failed":9,"unknown":0},
		 "errors":{"stopped_waiting":9}}]}`
	run, err := Decode(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Validate(); err != nil {
		t.Fatal(err)
	}
	a, b := run.Results[0], run.Results[1]
	if want := (Ops{Issued: 1500, Succeeded: 500, Failed: 1, StillWaiting: 999}); a.Ops != want {
		t.Errorf("ops %+v, want %+v", a.Ops, want)
	}
	if len(a.Errors) != 1 || a.Errors["session_lost"] != 1 {
		t.Errorf("errors %v, want session_lost only", a.Errors)
	}
	if want := (Ops{Issued: 19, Succeeded: 10, StillWaiting: 9}); b.Ops != want || b.Errors != nil {
		t.Errorf("ops %+v errors %v, want %+v and no errors", b.Ops, b.Errors, want)
	}
	for _, path := range []string{"../docs/runs/lock-etcd/results.json", "../docs/runs/lock-zookeeper/results.json"} {
		run, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range run.Results {
			if _, ok := res.Errors[ErrorKindStoppedWaiting]; ok {
				t.Errorf("%s: %s/%d still has %s errors after Decode", path, res.Variant, res.Clients, ErrorKindStoppedWaiting)
			}
		}
	}
}

// Older files kept the servers' byte counters under their raw names only;
// reading them gives the canonical names the same deltas, so their server
// bytes per operation are shown. docs/runs/lock-zookeeper holds them.
func TestDecodeNamesRawByteCounters(t *testing.T) {
	run, err := ReadFile("../docs/runs/lock-zookeeper/results.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range run.Results {
		raw, ok := res.Server["zk_response_bytes"]
		if got := res.Server[backends.MetricBytesSent]; !ok || got != raw || raw <= 0 {
			t.Errorf("%s/%d: canonical bytes sent %v, raw zk_response_bytes %v (%v)", res.Variant, res.Clients, got, raw, ok)
		}
	}
	partial := `{"format":1,"id":"p","status":"complete","config":{"workload":"lock"},"results":[
		{"workload":"lock","variant":"fair","backend":"etcd","clients":3,"stopped_by":"duration","ops":{"issued":1,"succeeded":1},
		 "server_partial":true,"server":{"etcd_network_client_grpc_sent_bytes_total":100}}]}`
	run, err = Decode(strings.NewReader(partial))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := run.Results[0].Server[backends.MetricBytesSent]; ok {
		t.Error("a partial server count was given a canonical byte count")
	}
}

// The servers' log syncs have canonical names since 2026-12-07; older files
// kept them under their raw names, and reading them names them so, with
// the same deltas (etcd's WAL fsyncs and their time, ZooKeeper's
// transaction log syncs, untimed).
func TestDecodeNamesRawLogSyncs(t *testing.T) {
	for path, raw := range map[string]map[string]string{
		"../docs/runs/handoff-path-etcd/results.json": {backends.MetricLogSyncs: "etcd_disk_wal_fsync_duration_seconds_count",
			backends.MetricLogSyncSeconds: "etcd_disk_wal_fsync_duration_seconds_sum"},
		"../docs/runs/handoff-path-zookeeper/results.json": {backends.MetricLogSyncs: "zk_cnt_fsynctime"},
	} {
		run, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range run.Results {
			for canonical, name := range raw {
				v, ok := res.Server[name]
				if got := res.Server[canonical]; !ok || got != v || v <= 0 {
					t.Errorf("%s: %d clients: %s %v, raw %s %v (%v)", path, res.Clients, canonical, got, name, v, ok)
				}
			}
			if _, ok := res.Server[backends.MetricLogSyncSeconds]; ok && res.Backend == backends.ZooKeeper {
				t.Errorf("%s: %d clients: ZooKeeper's sync time named, from whole milliseconds", path, res.Clients)
			}
		}
	}
}

// A run given twice to a command that reads several (the same folder, or a
// copy of its file) is refused, naming both; two shards of one run, or two
// runs, are read.
func TestReadPathsRefusesARunTwice(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r *Run) string {
		t.Helper()
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name, FileName)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := sampleRun(t)
	run.StartedAt = time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	a := write("a", run)
	copyOfA := write("copy", run)
	other := *run
	other.StartedAt = run.StartedAt.Add(time.Minute)
	b := write("b", &other)
	shard0, shard1 := *run, *run
	shard0.Shard, shard1.Shard = &Shard{Index: 0, Count: 2}, &Shard{Index: 1, Count: 2}
	s0, s1 := write("s0", &shard0), write("s1", &shard1)

	for _, tc := range []struct {
		paths []string
		want  string // "" when read
	}{
		{[]string{a, b}, ""},
		{[]string{s0, s1}, ""},
		{[]string{a, filepath.Dir(a)}, a + " and " + filepath.Dir(a) + " hold the same run (read-test, started 2026-12-07T20:00:00Z)"},
		{[]string{a, b, copyOfA}, a + " and " + copyOfA + " hold the same run"},
		{[]string{s1, s0, s1}, "hold the same run"},
	} {
		runs, err := ReadPaths(tc.paths)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.paths, err)
		case tc.want == "" && len(runs) != len(tc.paths):
			t.Errorf("%v: read %d runs", tc.paths, len(runs))
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want %q", tc.paths, err, tc.want)
		}
	}
}
