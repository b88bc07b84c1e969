package plots

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zkbench/zkbench/results"
)

// Mark is a stretch or an instant of a panel's x axis in which something
// happened to the case: an injected fault. To == From is an instant.
type Mark struct {
	Label string  `json:"label"`
	From  float64 `json:"from"`
	To    float64 `json:"to"`
}

// markColor draws the fault marks and their legend key.
const markColor = "#d62728"

// instantFaults never have an end event: they act once.
var instantFaults = []string{"restart-server", "reset-conns", "expire-session", "kill-client", "kill-holder"}

// sessionStates are the session changes a timeline counts, in drawing
// order, with their colours.
var sessionStates = []struct{ state, color string }{
	{"disconnected", "#ff7f0e"},
	{"reconnected", "#2ca02c"},
	{"expired", "#d62728"},
	{"lost", "#000000"},
}

// caseEvents are the timeline events of one result's measured interval,
// in seconds from its start.
type caseEvents struct {
	marks    []Mark
	sessions map[string][]int64 // state -> count per series interval
	outside  int                // fault events of the case outside the interval
}

// eventsOf places the fault and session events of run's timeline on the
// measured interval of res (which must have Started): a fault from its
// start event to the "end <fault>" event that undid it (or the end of the
// interval if it was still in force), an instant fault or a failed one at
// its time; session changes counted per series interval by state.
func eventsOf(run *results.Run, res *results.Result) caseEvents {
	ev := caseEvents{sessions: map[string][]int64{}}
	if run == nil || res.Started.IsZero() || res.Elapsed <= 0 {
		return ev
	}
	off := res.Started.Sub(run.StartedAt)
	end := res.Elapsed.Seconds()
	at := func(e results.TimelineEvent) float64 { return (e.At - off).Seconds() }
	in := func(x float64) bool { return x >= 0 && x <= end }

	// The events of this case: from its "start" to its "end" case event
	// around the interval, so that faults of other cases are left out.
	from, to := 0, len(run.Timeline)
	for i, e := range run.Timeline {
		if e.Kind != "case" {
			continue
		}
		switch {
		case strings.HasPrefix(e.What, "start ") && e.At <= off:
			from = i
		case strings.HasPrefix(e.What, "end ") && e.At >= off+res.Elapsed && i < to:
			to = i
		}
	}
	events := run.Timeline[from:to]

	type open struct {
		name, label string
		at          float64
	}
	var started []open
	for _, e := range events {
		if e.Kind != "fault" {
			continue
		}
		x := at(e)
		if rest, ok := strings.CutPrefix(e.What, "end "); ok {
			name, _, _ := strings.Cut(rest, ": ")
			i := slices.IndexFunc(started, func(o open) bool { return o.name == name })
			if i < 0 {
				// "end of run" or an end whose start fell before the case:
				// nothing to close.
				continue
			}
			o := started[i]
			started = slices.Delete(started, i, i+1)
			lo, hi := math.Max(o.at, 0), math.Min(x, end)
			if hi < 0 || lo > end {
				ev.outside++
				continue
			}
			ev.marks = append(ev.marks, Mark{Label: o.label, From: lo, To: hi})
			continue
		}
		name, _, _ := strings.Cut(e.What, ": ")
		action, _, _ := strings.Cut(name, ":")
		switch {
		case strings.Contains(e.What, " failed: "), slices.Contains(instantFaults, action):
			if !in(x) {
				ev.outside++
				continue
			}
			ev.marks = append(ev.marks, Mark{Label: e.What, From: x, To: x})
		default:
			started = append(started, open{name: name, label: e.What, at: x})
		}
	}
	for _, o := range started { // still in force when the events end
		if o.at > end {
			ev.outside++
			continue
		}
		ev.marks = append(ev.marks, Mark{Label: o.label, From: math.Max(o.at, 0), To: end})
	}

	iv := res.Series.Interval.Seconds()
	n := len(res.Series.Counts)
	if iv <= 0 || n == 0 {
		return ev
	}
	for _, e := range events {
		if e.Kind != "session" {
			continue
		}
		state, _, _ := strings.Cut(e.What, " ")
		if !slices.ContainsFunc(sessionStates, func(s struct{ state, color string }) bool { return s.state == state }) {
			continue
		}
		x := at(e)
		if !in(x) {
			continue
		}
		i := min(int(x/iv), n-1)
		if ev.sessions[state] == nil {
			ev.sessions[state] = make([]int64, n)
		}
		ev.sessions[state][i]++
	}
	return ev
}

// addMarks adds marks to p, leaving out one already there (same label,
// within 50 ms: the same fault seen in a repeat).
func addMarks(p *Panel, marks []Mark) {
	for _, m := range marks {
		if !slices.ContainsFunc(p.Marks, func(o Mark) bool {
			return o.Label == m.Label && math.Abs(o.From-m.From) < 0.05 && math.Abs(o.To-m.To) < 0.05
		}) {
			p.Marks = append(p.Marks, m)
		}
	}
}

// sessionLines turns counts per interval (summed over the panel's cases)
// into one scatter per state, a point at each interval with changes.
func sessionLines(counts map[string][]int64, iv time.Duration, backend string) []Line {
	var lines []Line
	for _, s := range sessionStates {
		c := counts[s.state]
		if c == nil {
			continue
		}
		l := Line{Label: "session " + s.state, Backend: backend, Color: s.color, Glyph: "circle", Scatter: true}
		for i, n := range c {
			if n > 0 {
				l.Points = append(l.Points, Point{X: (float64(i) + 0.5) * iv.Seconds(), Y: float64(n)})
			}
		}
		lines = append(lines, l)
	}
	return lines
}

func intervalLabel(iv time.Duration) string {
	return fmt.Sprintf("session events per %v", iv)
}
