package main

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func parseFile(t *testing.T, name string) *ToolRun {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ParseToolRun(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tr
}

// The testdata are the tool's own output (etcd v3.6.8, --precise) on one
// local member: 10 watchers on 10 connections, 20 puts; 100 watchers in 10
// streams on one connection, 60 puts.
func TestParseToolRun(t *testing.T) {
	for _, tc := range []struct {
		file                 string
		watchers             int
		layout               string
		puts, events         int64
		watchP50, watchP99   time.Duration
		putP50               time.Duration
		putFastest, watchMax time.Duration
		putRate              float64
	}{
		{
			file: "watch-latency-10-conns.txt", watchers: 10, layout: "10 conns, 10 streams",
			puts: 20, events: 200,
			// 155 of the 200 events beat the put's reply: the tool counts them
			// 0 and prints no line for the 10% to 75% they fill.
			watchP50: 0, watchP99: 1626174 * time.Nanosecond,
			putP50: 3766985 * time.Nanosecond, putFastest: 2077039 * time.Nanosecond, watchMax: 3305289 * time.Nanosecond,
			// The limiter lets a burst of --put-rate through at once: 20 puts
			// in 0.201751144 s.
			putRate: 20 / 0.201751144,
		},
		{
			file: "watch-latency-100-shared.txt", watchers: 100, layout: "1 conn, 10 streams",
			puts: 60, events: 6000,
			watchP50: 976222 * time.Nanosecond, watchP99: 10097692 * time.Nanosecond,
			putP50: 4616296 * time.Nanosecond, putFastest: 0, watchMax: 12913803 * time.Nanosecond,
			// 20 at once (the burst), then 40 at 20 a second.
			putRate: 60 / 2.004718413,
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tr := parseFile(t, tc.file)
			n, err := tr.Watchers()
			if err != nil || n != tc.watchers {
				t.Errorf("Watchers() = %d, %v; want %d", n, err, tc.watchers)
			}
			if got := tr.Layout(); got != tc.layout {
				t.Errorf("Layout() = %q, want %q", got, tc.layout)
			}
			if tr.Args["--put-rate"] != "20" || tr.Args["--val-size"] != "1024" || tr.Args["--precise"] != "true" {
				t.Errorf("Args = %v: want --put-rate 20, --val-size 1024, --precise", tr.Args)
			}
			if tr.Put.Count != tc.puts || tr.Watch.Count != tc.events {
				t.Errorf("counts: put %d, watch %d; want %d, %d", tr.Put.Count, tr.Watch.Count, tc.puts, tc.events)
			}
			if got, err := tr.Watch.Percentile("50"); err != nil || got != tc.watchP50 {
				t.Errorf("watch p50 = %v, %v; want %v", got, err, tc.watchP50)
			}
			if got, err := tr.Watch.Percentile("99"); err != nil || got != tc.watchP99 {
				t.Errorf("watch p99 = %v, %v; want %v", got, err, tc.watchP99)
			}
			if got, err := tr.Put.Percentile("50"); err != nil || got != tc.putP50 {
				t.Errorf("put p50 = %v, %v; want %v", got, err, tc.putP50)
			}
			// Fewer than 100 puts reach no 99th percentile: the tool prints
			// none, and that is not a 0.
			if got, err := tr.Put.Percentile("99"); !errors.Is(err, ErrTooFew) {
				t.Errorf("put p99 of %d puts = %v, %v; want ErrTooFew", tc.puts, got, err)
			}
			if tc.putFastest > 0 && tr.Put.Fastest != tc.putFastest {
				t.Errorf("put fastest = %v, want %v", tr.Put.Fastest, tc.putFastest)
			}
			if r := tr.PutRate(); math.Abs(r-tc.putRate) > 0.05 {
				t.Errorf("PutRate() = %v, want %v", r, tc.putRate)
			}
			if tr.Watch.Slowest != tc.watchMax {
				t.Errorf("watch slowest = %v, want %v", tr.Watch.Slowest, tc.watchMax)
			}
			if len(tr.Put.Errors)+len(tr.Watch.Errors) != 0 {
				t.Errorf("errors: %v %v", tr.Put.Errors, tr.Watch.Errors)
			}
		})
	}
}

func TestParseToolRunRefuses(t *testing.T) {
	raw, err := os.ReadFile("testdata/watch-latency-10-conns.txt")
	if err != nil {
		t.Fatal(err)
	}
	full := string(raw)
	headerEnd := strings.Index(full, "\n\nPut summary:")
	watchStart := strings.Index(full, "Watch events summary:")
	for _, tc := range []struct {
		name, text string
		is         error
		want       string
	}{
		{name: "no header", text: full[headerEnd:], want: "no \"# benchmark"},
		{name: "stopped before the watch report", text: full[:watchStart], is: ErrNoReport},
		{name: "empty", text: "", want: "no \"# benchmark"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseToolRun(strings.NewReader(tc.text))
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want %v / %q", err, tc.is, tc.want)
			}
		})
	}
	tr := parseFile(t, "watch-latency-10-conns.txt")
	if _, err := tr.Watch.Percentile("98"); err == nil {
		t.Error("Percentile(98): no error, but the tool prints no 98%")
	}
}

func TestParseToolRunErrors(t *testing.T) {
	text := "# benchmark --conns 1 watch-latency --streams 1 --watchers-per-stream 1\n\nPut summary:\n\nError distribution:\n  [3]\tcontext deadline exceeded\n\nWatch events summary:\n\nSummary:\n  Slowest:\t0.002 secs.\n\nResponse time histogram:\n  0.001 [2]\t|∎∎\n\nLatency distribution:\n  50% in 0.001 secs.\n"
	tr, err := ParseToolRun(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Put.Errors["context deadline exceeded"] != 3 {
		t.Errorf("put errors = %v, want 3 of context deadline exceeded", tr.Put.Errors)
	}
	if tr.Watch.Count != 2 || tr.Watch.Percentiles["50"] != time.Millisecond {
		t.Errorf("watch = %+v", tr.Watch)
	}
}

func FuzzParseToolRun(f *testing.F) {
	for _, name := range []string{"watch-latency-10-conns.txt", "watch-latency-100-shared.txt"} {
		raw, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(raw))
	}
	f.Fuzz(func(t *testing.T, text string) {
		tr, err := ParseToolRun(strings.NewReader(text))
		if err != nil {
			return
		}
		if tr.Watch.Count <= 0 {
			t.Errorf("parsed a run with %d watch results", tr.Watch.Count)
		}
		for _, p := range toolPercentiles {
			if d, err := tr.Watch.Percentile(p); err == nil && d < 0 && !strings.Contains(text, "-") {
				t.Errorf("p%s = %v from text with no minus sign", p, d)
			}
		}
	})
}
