package analysis

// A run's notes as its summary prints them: grouped, so that a documented
// cause, or anything several cases share, is said once with the cases it
// applies to; and the findings (what a reader must look at) apart from the
// rest, so that they stand out.

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/zkbench/zkbench/figures"
	"github.com/zkbench/zkbench/results"
)

// Finding is the kind of problem a finding reports.
type Finding string

// Kinds of finding.
const (
	FindingSafety       Finding = "safety violated"
	FindingSessionsLost Finding = "sessions lost"
	FindingErrors       Finding = "errors"
	// FindingDisagreement: client and server counts of the same thing
	// differ for no documented cause (figures.Check).
	FindingDisagreement Finding = "unexplained client|server disagreement"
)

// NoteGroup is one note of a run's summary and every case it applies to.
type NoteGroup struct {
	// Words are what the cases share: the whole note, or the note without
	// each case's own part (Detail).
	Words string `json:"note"`
	// Finding is the problem the note reports, "" for a note that is not
	// a finding (a documented cause, what a case measured and how).
	Finding Finding    `json:"finding,omitempty"`
	Cases   []NoteCase `json:"cases"`
}

// NoteCase is one case a note applies to.
type NoteCase struct {
	// Case names it: "naive/10", with its backend in a run of several and
	// its repeat in a run of several ("naive/10 rep 2").
	Case string `json:"case"`
	// Detail is the case's own part of the note, "" when Words are all of it.
	Detail string `json:"detail,omitempty"`
	// Note is the note as the case carries it.
	Note string `json:"-"`
}

// stillWaitingNote reads the lock workload's note on operations still waiting
// at the end of a case (workloads/lock.go): its count and longest wait are
// the case's own.
var stillWaitingNote = regexp.MustCompile(`^(\d+) (\S+) were still waiting when the case stopped \((the longest had waited [^)]*)\): (.+)$`)

// splitNote parts a note into the words cases may share and the case's own
// detail: a client|server disagreement's counts, a client-bound case's
// numbers, a count of operations still waiting; shared is false for any
// other note, which RunNotes groups with the notes that share its text
// before the first ": " (or all of it).
func splitNote(note string) (words, detail string, shared bool) {
	if d, ok := figures.ReadNote(note); ok {
		words = d.Words
		if d.Cause != "" {
			words += "; known difference (docs/figures.md): " + d.Cause
		}
		return words, d.Counts, true
	}
	if words, detail, ok := results.ReadBoundNote(note); ok {
		return words, detail, true
	}
	if words, detail, ok := results.ReadLoadedNote(note); ok {
		return words, detail, true
	}
	if m := stillWaitingNote.FindStringSubmatch(note); m != nil {
		return m[2] + " were still waiting when a case stopped: " + m[4], m[1] + ", " + m[3], true
	}
	return note, "", false
}

// findingOf is the problem note reports, "" for none.
func findingOf(note string) Finding {
	switch {
	case strings.Contains(note, "VIOLATED") || strings.Contains(note, "STALE WRITES ACCEPTED"):
		return FindingSafety
	case strings.Contains(note, " sessions were lost during the case"):
		return FindingSessionsLost
	case errorNote.MatchString(note) && !strings.HasPrefix(note, "first "+results.ErrorKindStoppedWaiting+" "):
		return FindingErrors
	}
	if d, ok := figures.ReadNote(note); ok && d.Cause == "" {
		return FindingDisagreement
	}
	return ""
}

// errorNote matches the notes that report an error (the workloads' first
// error of each kind, a failure that stopped a case, a fault that failed).
var errorNote = regexp.MustCompile(`^(first \S+ error: |first failure: |stopped by a failure: |case incomplete: |(candidate|participant) \d+: |fault )`)

// RunNotes groups the notes of run's results (Notes, in run order) by the
// words they share, and adds a finding for each result with errors, or
// safety violations that no note reports. Findings come apart, first.
func RunNotes(run *results.Run) (findings, notes []NoteGroup) {
	type note struct {
		kase               NoteCase
		finding            Finding
		words, head, split string
		shared             bool
	}
	var all []note
	heads := map[string]int{}
	for i := range run.Results {
		res := &run.Results[i]
		name := caseName(run, res)
		var own []note
		safetyNoted := false
		for _, n := range Notes(res) {
			words, detail, shared := splitNote(n)
			nt := note{kase: NoteCase{Case: name, Detail: detail, Note: n}, finding: findingOf(n), words: words, shared: shared}
			if !shared {
				nt.head, nt.split, _ = strings.Cut(n, ": ")
				heads[nt.head]++
			}
			safetyNoted = safetyNoted || nt.finding == FindingSafety
			own = append(own, nt)
		}
		// The counts, before the notes that tell of them.
		if v := res.Safety.Violations; v > 0 && !safetyNoted {
			detail := fmt.Sprintf("%d in %d checked", v, res.Safety.Checked)
			all = append(all, note{kase: NoteCase{Case: name, Detail: detail, Note: "safety violations: " + detail},
				finding: FindingSafety, words: "safety violations", shared: true})
		}
		if n := realErrors(res); n > 0 {
			var kinds []string
			for _, k := range slices.Sorted(maps.Keys(res.Errors)) {
				if k != results.ErrorKindStoppedWaiting && res.Errors[k] > 0 {
					kinds = append(kinds, fmt.Sprintf("%s %d", k, res.Errors[k]))
				}
			}
			detail := fmt.Sprintf("%d (%s)", n, strings.Join(kinds, ", "))
			all = append(all, note{kase: NoteCase{Case: name, Detail: detail, Note: "errors: " + detail},
				finding: FindingErrors, words: "errors", shared: true})
		}
		all = append(all, own...)
	}
	type key struct {
		finding Finding
		words   string
	}
	index := map[key]int{}
	var groups []NoteGroup
	for _, n := range all {
		if !n.shared && heads[n.head] > 1 && n.split != "" {
			// Notes of several cases that begin alike: "first session_lost
			// error: ...", "queue (at-least-once): ...".
			n.words, n.kase.Detail = n.head, n.split
		}
		k := key{n.finding, n.words}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, NoteGroup{Words: n.words, Finding: n.finding})
		}
		groups[i].Cases = append(groups[i].Cases, n.kase)
	}
	for _, g := range groups {
		if g.Finding != "" {
			findings = append(findings, g)
		} else {
			notes = append(notes, g)
		}
	}
	slices.SortStableFunc(findings, func(a, b NoteGroup) int { return a.Finding.rank() - b.Finding.rank() })
	return findings, notes
}

// rank orders findings as summaries list them: safety, errors, sessions
// lost, disagreements.
func (f Finding) rank() int {
	return slices.Index([]Finding{FindingSafety, FindingErrors, FindingSessionsLost, FindingDisagreement}, f)
}

// caseName names res in its run's notes: variant/clients, with the
// backend first where the run has several and the repeat after where it
// has several.
func caseName(run *results.Run, res *results.Result) string {
	name := fmt.Sprintf("%s/%d", res.Variant, res.Clients)
	for i := range run.Results {
		if run.Results[i].Backend != res.Backend {
			name = string(res.Backend) + "/" + name
			break
		}
	}
	if run.Config.Repeat > 1 {
		name += fmt.Sprintf(" rep %d", res.Repeat)
	}
	return name
}

// parts are how a summary prints g: a note of one case, or of several
// alike, as one line, cases first ("naive/10: the note", "native/10,
// native/100: the note"), no items; a note whose cases differ in their own
// part as its words, and an item a case with its detail.
func (g NoteGroup) parts() (head string, items []string) {
	var names, details []string
	for _, c := range g.Cases {
		names = append(names, c.Case)
		if !slices.Contains(details, c.Detail) {
			details = append(details, c.Detail)
		}
	}
	switch {
	case len(g.Cases) == 1:
		return g.Cases[0].Case + ": " + g.Cases[0].Note, nil
	case len(details) == 1 && details[0] == "":
		return strings.Join(names, ", ") + ": " + g.Words, nil
	case len(details) == 1:
		return strings.Join(names, ", ") + ": " + g.Words + ": " + details[0], nil
	}
	for _, c := range g.Cases {
		items = append(items, c.Case+": "+c.Detail)
	}
	return g.Words + ":", items
}

// lines are g's parts for a terminal: wrapped to width, items indented.
func (g NoteGroup) lines(width int) []string {
	head, items := g.parts()
	out := wrap(head, "  ", "    ", width)
	for _, it := range items {
		out = append(out, wrap("- "+it, "    ", "      ", width)...)
	}
	return out
}

// wrap breaks text at spaces into lines of at most width characters, the
// first indented by first, the others by rest. A series "2.90 / 14.1 /
// 59.0" stays on one line; a word longer than a line gets a line of its own.
func wrap(text, first, rest string, width int) []string {
	var words []string
	fields := strings.Fields(text)
	for i := 0; i < len(fields); i++ {
		if fields[i] == "/" && len(words) > 0 && i+1 < len(fields) {
			words[len(words)-1] += " / " + fields[i+1]
			i++
			continue
		}
		words = append(words, fields[i])
	}
	var out []string
	line := first
	fresh := true
	for _, word := range words {
		if !fresh && runeLen(line)+1+runeLen(word) > width {
			out = append(out, line)
			line, fresh = rest, true
		}
		if !fresh {
			line += " "
		}
		line += word
		fresh = false
	}
	return append(out, line)
}

func runeLen(s string) int { return len([]rune(s)) }
