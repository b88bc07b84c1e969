package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ToolRun is one run of etcd's `benchmark watch-latency` as bench-watch
// keeps it: a header line "# benchmark <arguments>" naming the command,
// then the tool's standard output, which holds two reports of etcd's
// pkg/report: "Put summary" (the writer's puts, each from its start to its
// reply) and "Watch events summary" (every watcher's event of every put,
// counted from that put's reply; an event that beat the reply counts 0).
type ToolRun struct {
	// Args are the command line's flags, "--conns" -> "100".
	Args  map[string]string
	Put   Summary
	Watch Summary
}

// Summary is one report of etcd's pkg/report.
type Summary struct {
	// Count is the number of results, the sum of the histogram's buckets.
	Count                     int64
	Fastest, Slowest, Average time.Duration
	// Total is the report's span: from its start to its last result. For
	// the puts, which the tool makes one after another, the time they took.
	Total time.Duration
	// Percentiles by the label the tool prints ("50", "99", "99.9"). The
	// tool prints no line for a percentile whose value is 0, nor for one
	// that too few results reach; Percentile tells the two apart.
	Percentiles map[string]time.Duration
	// Errors is the report's error distribution, by message.
	Errors map[string]int64
}

// The percentiles pkg/report prints, in its order.
var toolPercentiles = []string{"10", "25", "50", "75", "90", "95", "99", "99.9"}

// ErrTooFew: the report has too few results to reach that percentile.
var ErrTooFew = errors.New("watchcompare: too few results for the percentile")

// Percentile is the value at label p ("50", "99"): the tool's printed
// value, or 0 where it printed none because the value was 0 (latencies
// clamped at the put's reply). pkg/report takes the k-th of n sorted
// results, the first whose k*100/n reaches p, so a percentile that no k
// below n reaches is missing for want of results: ErrTooFew.
func (s Summary) Percentile(p string) (time.Duration, error) {
	q, err := strconv.ParseFloat(p, 64)
	if err != nil || !knownPercentile(p) {
		return 0, fmt.Errorf("watchcompare: etcd's report prints no %s%% (it prints %s)", p, strings.Join(toolPercentiles, ", "))
	}
	if d, ok := s.Percentiles[p]; ok {
		return d, nil
	}
	if s.Count == 0 || float64(s.Count-1)*100/float64(s.Count) < q {
		return 0, fmt.Errorf("%w: %s%% of %d results", ErrTooFew, p, s.Count)
	}
	return 0, nil
}

func knownPercentile(p string) bool {
	for _, q := range toolPercentiles {
		if q == p {
			return true
		}
	}
	return false
}

// PutRate is the puts a second the tool made: its rate limiter's target
// unless a put took longer than the gap between two.
func (t *ToolRun) PutRate() float64 {
	if t.Put.Total <= 0 {
		return 0
	}
	return float64(t.Put.Count) / t.Put.Total.Seconds()
}

// Watchers is the number of watches the run opened: --streams times
// --watchers-per-stream (the tool's defaults, 10 and 10, where absent).
func (t *ToolRun) Watchers() (int, error) {
	s, err := t.intArg("streams", 10)
	if err != nil {
		return 0, err
	}
	w, err := t.intArg("watchers-per-stream", 10)
	return s * w, err
}

// Layout says how the watches shared connections, in the words of the
// comparison table: "100 conns, 100 streams".
func (t *ToolRun) Layout() string {
	conns, _ := t.intArg("conns", 1)
	streams, _ := t.intArg("streams", 10)
	return fmt.Sprintf("%d conn%s, %d stream%s", conns, plural(conns), streams, plural(streams))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (t *ToolRun) intArg(name string, def int) (int, error) {
	v, ok := t.Args["--"+name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("watchcompare: --%s %q in the header: %w", name, v, err)
	}
	return n, nil
}

var (
	histogramLine  = regexp.MustCompile(`^\s+\S+ \[(\d+)\]\t\|`)
	percentileLine = regexp.MustCompile(`^\s+([0-9.]+)% in (\S+) secs\.$`)
	statLine       = regexp.MustCompile(`^\s+(Total|Fastest|Slowest|Average):\t(\S+) secs\.$`)
	errorLine      = regexp.MustCompile(`^\s+\[(\d+)\]\t(.*)$`)
)

// ErrNoReport: the output holds no report of that name (the tool failed
// before it printed one, or the file is not its output).
var ErrNoReport = errors.New("watchcompare: no report")

// ParseToolRun reads a kept run of `benchmark watch-latency`.
func ParseToolRun(r io.Reader) (*ToolRun, error) {
	t := &ToolRun{Args: map[string]string{}}
	var cur *Summary
	var seen []string
	inErrors := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# benchmark "):
			t.Args = flagsOf(strings.Fields(strings.TrimPrefix(line, "# benchmark ")))
			continue
		case line == "Put summary:":
			cur, inErrors = &t.Put, false
			seen = append(seen, "put")
			continue
		case line == "Watch events summary:":
			cur, inErrors = &t.Watch, false
			seen = append(seen, "watch")
			continue
		case line == "Error distribution:":
			inErrors = true
			continue
		}
		if cur == nil {
			continue
		}
		if cur.Percentiles == nil {
			cur.Percentiles = map[string]time.Duration{}
		}
		if inErrors {
			if m := errorLine.FindStringSubmatch(line); m != nil {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				if cur.Errors == nil {
					cur.Errors = map[string]int64{}
				}
				cur.Errors[m[2]] += n
			}
			continue
		}
		if m := histogramLine.FindStringSubmatch(line); m != nil {
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("watchcompare: histogram line %q: %w", line, err)
			}
			cur.Count += n
			continue
		}
		if m := percentileLine.FindStringSubmatch(line); m != nil {
			d, err := seconds(m[2])
			if err != nil {
				return nil, fmt.Errorf("watchcompare: line %q: %w", line, err)
			}
			cur.Percentiles[m[1]] = d
			continue
		}
		if m := statLine.FindStringSubmatch(line); m != nil {
			d, err := seconds(m[2])
			if err != nil {
				return nil, fmt.Errorf("watchcompare: line %q: %w", line, err)
			}
			switch m[1] {
			case "Total":
				cur.Total = d
			case "Fastest":
				cur.Fastest = d
			case "Slowest":
				cur.Slowest = d
			case "Average":
				cur.Average = d
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.Args) == 0 {
		return nil, errors.New("watchcompare: no \"# benchmark <arguments>\" header: the comparison needs the command line that made the output")
	}
	if t.Watch.Count == 0 {
		return nil, fmt.Errorf("%w \"Watch events summary\" with results (reports seen: %v)", ErrNoReport, seen)
	}
	return t, nil
}

// seconds reads the tool's "%4.4f" or, with --precise, "%g" seconds.
func seconds(s string) (time.Duration, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(math.Round(f * float64(time.Second))), nil
}

// flagsOf reads "--name value" and "--name=value" pairs; a flag followed
// by another flag (or by nothing) is a boolean set to "true". Words that
// are not flags (the subcommand) are skipped.
func flagsOf(words []string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "--") {
			continue
		}
		if k, v, ok := strings.Cut(w, "="); ok {
			m[k] = v
			continue
		}
		if i+1 < len(words) && !strings.HasPrefix(words[i+1], "--") && !isSubcommand(words[i+1]) {
			m[w] = words[i+1]
			i++
			continue
		}
		m[w] = "true"
	}
	return m
}

// isSubcommand: the tool's subcommand, which follows its boolean flags.
func isSubcommand(w string) bool { return w == "watch-latency" }
