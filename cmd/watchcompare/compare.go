package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/zkbench/zkbench/backends"
	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// Row is one point of the comparison: one run of etcd's tool beside the
// zkbench case of the same watcher count, read through one of zkbench's
// latency names.
type Row struct {
	Watchers int
	Layout   string // how the tool's watches shared connections
	ToolFile string
	ToolP50  time.Duration
	ToolP99  time.Duration
	ToolPut  time.Duration // p99 of the tool's puts, start to reply; -1 if too few puts
	// View is the zkbench figure: a latency name of the results file, or
	// ToolDefinition.
	View string
	// Missing: the zkbench case lacks the histograms of View (a results
	// file from before they were recorded); the figures below are zero.
	Missing bool
	ZkP50   time.Duration
	ZkP99   time.Duration
	// Ratio is zkbench's p99 over the tool's; NaN where either is 0 or
	// Missing.
	Ratio float64
	// Bound is the zkbench case's client-bound verdict, "" if it was not.
	Bound string
}

// Within says whether the ratio is inside [1/tol, tol]: "yes", or which
// side it fell out on, or "-" where there is no ratio.
func (r Row) Within(tol float64) string {
	switch {
	case math.IsNaN(r.Ratio):
		return "-"
	case r.Ratio > tol:
		return "no (zkbench slower)"
	case r.Ratio < 1/tol:
		return "no (zkbench faster)"
	}
	return "yes"
}

// Compare pairs every tool run with the config workload's persistent etcd
// case of the same watcher count in run, once per view (a latency name of
// the results file, or ToolDefinition). Mismatched
// settings (rate, size) are returned as warnings: the points are then not
// the same point.
func Compare(tools map[string]*ToolRun, run *results.Run, views []string) ([]Row, []string, error) {
	var rows []Row
	var warnings []string
	if run.Config.Workload != "config" {
		return nil, nil, fmt.Errorf("watchcompare: the zkbench run is of workload %q, not config", run.Config.Workload)
	}
	files := make([]string, 0, len(tools))
	for f := range tools {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		t := tools[f]
		n, err := t.Watchers()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f, err)
		}
		warnings = append(warnings, settingsDiffer(f, t, run)...)
		res := findCase(run, n)
		if res == nil {
			return nil, nil, fmt.Errorf("watchcompare: %s has %d watchers; the zkbench run has no persistent etcd case at %d clients", f, n, n)
		}
		warnings = append(warnings, ratesFell(f, t, res, run.Config.Rate)...)
		tp50, err := t.Watch.Percentile("50")
		if err != nil {
			return nil, nil, fmt.Errorf("%s: watch events: %w", f, err)
		}
		tp99, err := t.Watch.Percentile("99")
		if err != nil {
			return nil, nil, fmt.Errorf("%s: watch events: %w", f, err)
		}
		put, err := t.Put.Percentile("99")
		if err != nil {
			put = -1 // fewer than 100 puts: no p99
		}
		bound := ""
		if b := res.Load.Bound(); b != nil {
			bound = b.String()
		}
		for _, v := range views {
			row := Row{Watchers: n, Layout: t.Layout(), ToolFile: filepath.Base(f), ToolP50: tp50, ToolP99: tp99, ToolPut: put, View: v, Ratio: math.NaN(), Bound: bound}
			h, err := zkHistogram(res, v)
			if err != nil {
				return nil, nil, fmt.Errorf("watchcompare: the zkbench case at %d clients, %s: %w", n, v, err)
			}
			if h == nil {
				row.Missing = true
			} else {
				row.ZkP50, row.ZkP99 = time.Duration(h.ValueAtQuantile(50)), time.Duration(h.ValueAtQuantile(99))
				if tp99 > 0 && row.ZkP99 > 0 {
					row.Ratio = float64(row.ZkP99) / float64(tp99)
				}
			}
			rows = append(rows, row)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Watchers < rows[j].Watchers })
	return rows, warnings, nil
}

// ToolDefinition is the view of zkbench's reloads that counts them as etcd's
// watch-latency counts its events: from the put's reply, an event that beat
// the reply as 0 (tools/benchmark/cmd/watch_latency.go: putTimes[i] = end,
// and start = end where the event came first). zkbench keeps the same
// reloads as propagate (from the reply, those after it) and propagate_start
// (from the start, all of them); the ones that beat the reply are the
// difference of their counts, and go in at the histogram's floor.
const ToolDefinition = "propagate_clamped"

// zkHistogram is the distribution of view in res; nil if res lacks what
// it is made of.
func zkHistogram(res *results.Result, view string) (*hdrhistogram.Histogram, error) {
	if view != ToolDefinition {
		h := res.Latency[figures.Latency(view)]
		if h == nil {
			return nil, nil
		}
		return h.Decode()
	}
	fromStart, fromReply := res.Latency[figures.LatencyPropagateStart], res.Latency[figures.LatencyPropagate]
	if fromStart == nil || fromReply == nil {
		return nil, nil
	}
	h, err := fromReply.Decode()
	if err != nil {
		return nil, err
	}
	early := fromStart.Count - h.TotalCount()
	if early < 0 {
		return nil, fmt.Errorf("%d reloads from the reply but %d in all (propagate_start)", h.TotalCount(), fromStart.Count)
	}
	if err := h.RecordValues(h.LowestTrackableValue(), early); err != nil {
		return nil, err
	}
	return h, nil
}

func findCase(run *results.Run, clients int) *results.Result {
	for i := range run.Results {
		r := &run.Results[i]
		if r.Workload == "config" && r.Variant == "persistent" && r.Backend == backends.Etcd && r.Clients == clients {
			return r
		}
	}
	return nil
}

// settingsDiffer names what makes a tool run and the zkbench run not the
// same point: the rate of puts and the value's size.
func settingsDiffer(file string, t *ToolRun, run *results.Run) []string {
	var w []string
	if v, ok := t.Args["--put-rate"]; ok {
		if r, err := strconv.ParseFloat(v, 64); err == nil && r != run.Config.Rate {
			w = append(w, fmt.Sprintf("%s: the tool put %g a second, zkbench's writer %g", filepath.Base(file), r, run.Config.Rate))
		}
	}
	if v, ok := t.Args["--val-size"]; ok {
		size := run.Config.Params["size"]
		if size != v && !(v == "1024" && strings.EqualFold(size, "1KB")) {
			w = append(w, fmt.Sprintf("%s: the tool's values are %s bytes, zkbench's config %s", filepath.Base(file), v, size))
		}
	}
	return w
}

// keptUp is the share of the target rate a side must reach to be at the
// point: a writer whose puts take longer than the gap between two falls
// behind it, and fewer updates a second is a lighter load.
const keptUp = 0.9

// ratesFell names a side that made fewer updates a second than the point
// asks (under keptUp of the zkbench run's --rate).
func ratesFell(file string, t *ToolRun, res *results.Result, rate float64) []string {
	if rate <= 0 {
		return nil
	}
	var w []string
	name := filepath.Base(file)
	if r := t.PutRate(); r > 0 && r < keptUp*rate {
		w = append(w, fmt.Sprintf("%s: the tool made %.1f puts a second, not %g (a put took longer than the gap between two)", name, r, rate))
	}
	if res.Throughput < keptUp*rate {
		w = append(w, fmt.Sprintf("zkbench at %d clients: the writer made %.1f updates a second, not %g", res.Clients, res.Throughput, rate))
	}
	return w
}

// WriteTable prints rows as the comparison table, then what each column
// counts.
func WriteTable(out io.Writer, rows []Row, tol float64) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "watchers\tetcd tool\ttool p50\ttool p99\ttool put p99\tzkbench figure\tzkbench p50\tzkbench p99\tzkbench/tool p99\twithin "+strconv.FormatFloat(tol, 'g', -1, 64)+"x\tzkbench client-bound")
	for _, r := range rows {
		zk50, zk99, ratio := ms(r.ZkP50), ms(r.ZkP99), "-"
		if r.Missing {
			zk50, zk99 = "absent", "absent"
		}
		if !math.IsNaN(r.Ratio) {
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		bound := "no"
		if r.Bound != "" {
			bound = r.Bound
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Watchers, r.Layout, ms(r.ToolP50), ms(r.ToolP99), ms(r.ToolPut), r.View, zk50, zk99, ratio, r.Within(tol), bound)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprint(out, `
etcd tool: benchmark watch-latency's "Watch events summary": each watcher's event of each
  put, from that put's reply (the writer's Put returned); an event that beat the reply counts
  0. "put p99": the tool's puts, start to reply. Watches: one gRPC connection per watcher
  ("N conns, N streams", as zkbench's clients each have their own), or streams sharing one.
zkbench, the config workload's persistent variant (one session, so one connection, a client):
  propagate_start        each client's reload, from the start of the writer's Set
  propagate              from the Set's reply, the reloads after it only
  propagate_clamped      from the reply, a reload that beat it as 0: the tool's definition,
                         so the row to hold to the tolerance
`)
	return err
}

func ms(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + " ms"
}

// readTools reads the tool's kept outputs, by file name.
func readTools(files []string) (map[string]*ToolRun, error) {
	m := make(map[string]*ToolRun, len(files))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		t, err := ParseToolRun(fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if len(t.Watch.Errors)+len(t.Put.Errors) > 0 {
			return nil, fmt.Errorf("%s: the tool reported errors (put %v, watch %v)", f, t.Put.Errors, t.Watch.Errors)
		}
		m[f] = t
	}
	if len(m) == 0 {
		return nil, errors.New("watchcompare: no tool output given")
	}
	return m, nil
}
