package results

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/zkbench/zkbench/backends"
)

// Errors returned by Decode and ReadFile, checked with errors.Is.
var (
	// ErrNewerFormat: the file was written by a newer zkbench whose format
	// this one cannot read.
	ErrNewerFormat = errors.New("results: newer format")
	// ErrInvalid: the input is not a zkbench results file.
	ErrInvalid = errors.New("results: not a valid results file")
)

// maxFileSize bounds what is read: a results file holds encoded histograms
// and series, megabytes at most.
const maxFileSize = 1 << 30

// Decode reads one results file's JSON from r. It rejects a file of a newer
// format than FormatVersion (ErrNewerFormat) and input that is not a results
// file (ErrInvalid): not one JSON object, no format, or a latency
// histogram that is null or not in nanoseconds.
func Decode(r io.Reader) (*Run, error) {
	raw, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("results: read: %w", err)
	}
	return decode(raw, "results file")
}

// ReadFile reads and decodes the results file at path. Its errors name the
// file and wrap ErrNewerFormat, ErrInvalid or the os error
// (errors.Is(err, fs.ErrNotExist) for a missing file).
func ReadFile(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	} else if st.IsDir() {
		return nil, fmt.Errorf("%w: %s is a directory", ErrInvalid, path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("results: read %s: %w", path, err)
	}
	return decode(raw, "results file "+path)
}

func decode(raw []byte, name string) (*Run, error) {
	if len(raw) > maxFileSize {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrInvalid, name, maxFileSize)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrInvalid, name)
	}
	// Read the format first, so that a newer file fails with the upgrade
	// message rather than with whatever field the newer format changed.
	var head struct {
		Format *int `json:"format"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalid, name, jsonProblem(err))
	}
	if head.Format == nil {
		return nil, fmt.Errorf("%w: %s has no \"format\" field", ErrInvalid, name)
	}
	if f := *head.Format; f > FormatVersion {
		return nil, fmt.Errorf("%w: %s is format %d; this zkbench reads up to %d: upgrade zkbench", ErrNewerFormat, name, f, FormatVersion)
	} else if f < 1 {
		return nil, fmt.Errorf("%w: %s has format %d", ErrInvalid, name, f)
	}
	var run Run
	if err := json.Unmarshal(raw, &run); err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalid, name, jsonProblem(err))
	}
	for i, res := range run.Results {
		if res.Clients < 0 {
			return nil, fmt.Errorf("%w: %s: result %d has %d clients", ErrInvalid, name, i, res.Clients)
		}
		upgrade(&run.Results[i])
		for hn, h := range res.Latency {
			if h == nil {
				return nil, fmt.Errorf("%w: %s: result %d: latency %q is null", ErrInvalid, name, i, hn)
			}
			if h.Unit != "ns" {
				return nil, fmt.Errorf("%w: %s: result %d: latency %q has unit %q, want \"ns\"", ErrInvalid, name, i, hn, h.Unit)
			}
		}
	}
	return &run, nil
}

// jsonProblem says what is wrong with a file json could not decode, in a
// reader's words: zkbench writes a results file whole (a temporary file
// renamed over it), so one that is not JSON was cut short or edited.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("not a whole JSON document (%v): zkbench writes its results files whole, so this one was cut short or edited; copy it again or run the case again", err)
	case errors.As(err, &typ) && typ.Field != "":
		want := map[reflect.Kind]string{reflect.Slice: "array", reflect.Array: "array", reflect.Struct: "object", reflect.Map: "object",
			reflect.String: "string", reflect.Bool: "bool"}[typ.Type.Kind()]
		return fmt.Sprintf("field %q holds a JSON %s where a results file has a JSON %s (is this a zkbench results file?)", typ.Field, typ.Value, cmp.Or(want, "number"))
	case errors.As(err, &typ):
		return fmt.Sprintf("a JSON %s where a results file has an object (is this a zkbench results file?)", typ.Value)
	}
	return err.Error()
}

// rawCanonical are the servers' own counters behind the canonical byte and
// log-sync metrics, as older files stored their deltas (raw names are kept
// where they moved). ZooKeeper's bytes sent in such a file are its replies
// only: every file written before zkbench read zk_watch_bytes (a counter it
// took for a gauge until 2026-12-05) lacks the notifications' bytes.
var rawCanonical = map[backends.Kind]map[string]string{
	backends.ZooKeeper: {backends.MetricBytesSent: "zk_response_bytes", backends.MetricBytesReceived: "zk_bytes_received_count",
		backends.MetricLogSyncs: "zk_cnt_fsynctime"},
	backends.Etcd: {backends.MetricBytesSent: "etcd_network_client_grpc_sent_bytes_total",
		backends.MetricBytesReceived:  "etcd_network_client_grpc_received_bytes_total",
		backends.MetricLogSyncs:       "etcd_disk_wal_fsync_duration_seconds_count",
		backends.MetricLogSyncSeconds: "etcd_disk_wal_fsync_duration_seconds_sum"},
}

// upgrade brings a result of an older format-1 file to the current model:
// operations still waiting at the end, which older files counted as failed
// under Errors[ErrorKindStoppedWaiting], move to Ops.StillWaiting; and the
// servers' byte and log-sync counters, which older files kept under their
// raw names only, are given their canonical names (the same deltas the scrapers now
// name so), unless the server count is partial; a result that does not
// record its unit, class and latency order gets what its names meant
// (upgradeDeclarations).
func upgrade(res *Result) {
	upgradeDeclarations(res)
	if !res.ServerPartial && res.Server != nil {
		for canonical, raw := range rawCanonical[res.Backend] {
			if v, ok := res.Server[raw]; ok {
				if _, has := res.Server[canonical]; !has {
					res.Server[canonical] = v
				}
			}
		}
	}
	if n := res.Errors[ErrorKindStoppedWaiting]; n > 0 && res.Ops.StillWaiting == 0 && res.Ops.Failed >= n {
		res.Ops.Failed -= n
		res.Ops.StillWaiting = n
		delete(res.Errors, ErrorKindStoppedWaiting)
		if len(res.Errors) == 0 {
			res.Errors = nil
		}
		for i, n := range res.Notes {
			res.Notes[i] = strings.Replace(n, "counted as failed (stopped_waiting)", "counted as still waiting at the end", 1)
		}
	}
}
