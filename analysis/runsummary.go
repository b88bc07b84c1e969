package analysis

// The summary of one run, printed at the end of `zkbench run` and by
// `zkbench summary`: its verdict in words first (the herd, verdict.go, and
// whether anything went wrong), then a row a result (repeats apart) with
// the per-operation figures read as the cases read them (ResultPerOp),
// then the findings and the notes, grouped (summarynotes.go). The columns
// are declared once (summarycolumns.go) for every format
// (summaryformat.go).

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/zkbench/zkbench/results"
)

// SummaryWidth is the terminal width the default summary is made for:
// its table has the columns a reader compares first, and its words are
// wrapped to it.
const SummaryWidth = 120

// SummaryOptions say how WriteSummary prints. The zero value is the
// default: text, the narrow table.
type SummaryOptions struct {
	// Format is text (the zero value), csv, json or markdown.
	Format SummaryFormat
	// Wide: the text table shows every column, as csv, json and markdown
	// always do.
	Wide bool
}

// WriteSummary prints run's summary in opts.Format. In text: the verdict
// (a line a naive and herd-free pair: notifications and server requests
// per operation at each client count, and the ratio; then whether there
// are findings), the table of cases, a safety table for a run with faults
// or a fenced register (WriteSafety), the findings (errors, sessions lost,
// safety violations, client|server disagreements with no documented
// cause), the notes (a documented cause, or a note several cases share,
// once with its cases), leftovers and the run's status if not complete.
//
// The narrow table has variant, clients, operations per second, the
// primary latency's p50 and p99, notifications and requests per operation
// client | server, sessions lost and flags (client-bound, UNSAFE, errors,
// a case ended early, server counts partial); the wide one every column:
// also succeeded operations, p99.9, wasted wake-ups per operation, payload
// bytes the clients received beside message bytes the servers sent, FIFO
// inversions, Jain's index ("-" where not every client could get a turn:
// JainUnmeaningful, with a note), safety violations, errors, operations
// still waiting at the end (not errors: results.Ops.StillWaiting), the
// load generator's CPU over its cores, the client-bound reasons
// (results.Load.Bound) and why the case stopped. A figure that was not
// measured prints as "-".
func WriteSummary(w io.Writer, run *results.Run, opts SummaryOptions) error {
	var err error
	switch opts.Format {
	case SummaryText, "":
		err = writeText(w, run, opts.Wide)
	case SummaryCSV:
		err = writeCSV(w, run)
	case SummaryJSON:
		err = writeJSON(w, run)
	case SummaryMarkdown:
		err = writeMarkdown(w, run)
	default:
		_, err = ParseSummaryFormat(string(opts.Format))
	}
	if err != nil {
		return fmt.Errorf("analysis: write summary: %w", err)
	}
	return nil
}

// summary is what every format prints of a run.
type summary struct {
	verdict         []string
	findings, notes []NoteGroup
	columns         []column
}

func summarize(run *results.Run) summary {
	s := summary{verdict: HerdVerdict(Cases([]*results.Run{run})), columns: summaryColumns(run)}
	s.findings, s.notes = RunNotes(run)
	if len(run.Results) == 0 {
		// zkbench writes no file for a run that measured nothing: this one
		// was made otherwise, and "findings: none" would read as a pass.
		s.verdict = append(s.verdict, fmt.Sprintf("no case: run %s (%s) holds no measured case, so it answers nothing", run.ID, run.Status))
	}
	s.verdict = append(s.verdict, findingsLine(s.findings))
	return s
}

// findingsLine says whether the run found anything a reader must look at:
// "findings: errors (1 case), sessions lost (2 cases); listed under the
// table", or "findings: none ...".
func findingsLine(findings []NoteGroup) string {
	if len(findings) == 0 {
		return "findings: none (no safety violation, error, lost session, or client|server disagreement without a documented cause)"
	}
	var kinds []Finding
	cases := map[Finding][]string{}
	for _, g := range findings {
		if !slices.Contains(kinds, g.Finding) {
			kinds = append(kinds, g.Finding)
		}
		for _, c := range g.Cases {
			if !slices.Contains(cases[g.Finding], c.Case) {
				cases[g.Finding] = append(cases[g.Finding], c.Case)
			}
		}
	}
	var parts []string
	for _, k := range kinds {
		n, what := len(cases[k]), "cases"
		if n == 1 {
			what = "case"
		}
		parts = append(parts, fmt.Sprintf("%s (%d %s)", k, n, what))
	}
	return "findings: " + strings.Join(parts, ", ") + "; listed under the table"
}

// writeText prints the text summary: the narrow table, or every column.
func writeText(w io.Writer, run *results.Run, wide bool) error {
	s := summarize(run)
	fmt.Fprintln(w, "verdict:")
	for _, l := range s.verdict {
		printLines(w, wrap(l, "  ", "    ", SummaryWidth))
	}
	fmt.Fprintln(w)
	var cols []column
	for _, c := range s.columns {
		if (wide && c.wide) || (!wide && c.narrow) {
			cols = append(cols, c)
		}
	}
	rows := caseRows(run, cols)
	if !wide {
		rows = fitLast(rows, SummaryWidth)
	}
	if err := writeRows(w, rows, tabwriter.AlignRight); err != nil {
		return err
	}
	if needsSafetyTable(run) {
		fmt.Fprintln(w, "\nsafety:")
		if err := writeSafety(w, run, wide); err != nil {
			return err
		}
	}
	if needsHandoffTable(run) {
		fmt.Fprintln(w, "\nhandoff's critical path (lock; docs/figures.md):")
		if err := WriteHandoffPath(w, run); err != nil {
			return err
		}
	}
	if needsWorkTable(run) {
		fmt.Fprintln(w, "\ncritical-section work (ledger; docs/faults.md):")
		if err := WriteWork(w, run); err != nil {
			return err
		}
	}
	for _, part := range []struct {
		title  string
		groups []NoteGroup
	}{
		{"findings:", s.findings},
		{"notes (each said once, with the cases it applies to):", s.notes},
	} {
		if len(part.groups) == 0 {
			continue
		}
		fmt.Fprintln(w, "\n"+part.title)
		for _, g := range part.groups {
			printLines(w, g.lines(SummaryWidth))
		}
	}
	textEnd.write(w, run)
	return nil
}

// summaryEnd is how a format prints the end of a summary: the namespace's
// leftovers (a heading with their count, then a line each) and how a run
// that did not complete ended.
type summaryEnd struct{ leftovers, leftover, status string }

var (
	textEnd     = summaryEnd{"\nleftovers after cleanup (%d):\n", "  %s\n", "\nrun %s: %s"}
	markdownEnd = summaryEnd{"\n**Leftovers after cleanup** (%d)\n\n", "- `%s`\n", "\nRun %s: %s"}
)

func (e summaryEnd) write(w io.Writer, run *results.Run) {
	if len(run.Leftovers) > 0 {
		fmt.Fprintf(w, e.leftovers, len(run.Leftovers))
		for _, p := range run.Leftovers {
			fmt.Fprintf(w, e.leftover, p)
		}
	}
	if run.Status != results.StatusComplete {
		line := fmt.Sprintf(e.status, run.ID, run.Status)
		if run.StatusDetail != "" {
			line += fmt.Sprintf(" (%s)", run.StatusDetail)
		}
		// A long reason wraps as the notes do (the leading newline of
		// the format stays its own).
		head, rest := "", line
		if strings.HasPrefix(rest, "\n") {
			head, rest = "\n", rest[1:]
		}
		fmt.Fprint(w, head)
		printLines(w, wrap(rest, "", "  ", SummaryWidth))
	}
}

func printLines(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// writeCases prints cols of run's results, a row a result, aligned to the
// right (numbers) or, with align 0, to the left.
func writeCases(w io.Writer, run *results.Run, cols []column, align uint) error {
	return writeRows(w, caseRows(run, cols), align)
}

// caseRows is the header and a row a result of cols.
func caseRows(run *results.Run, cols []column) [][]string {
	row := make([]string, len(cols))
	for i, c := range cols {
		row[i] = c.head
	}
	rows := [][]string{row}
	for i := range run.Results {
		row := make([]string, len(cols))
		for j, c := range cols {
			row[j] = c.cell(&run.Results[i])
		}
		rows = append(rows, row)
	}
	return rows
}

// writeRows prints rows in aligned columns (see writeCases).
func writeRows(w io.Writer, rows [][]string, align uint) error {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', align)
	end := "" // a right-aligned last column ends in a tab too
	if align == tabwriter.AlignRight {
		end = "\t"
	}
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+end)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// An empty last cell (no flags) leaves only padding.
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if l != "" {
			fmt.Fprintln(w, strings.TrimRight(l, " \n"))
		}
	}
	return nil
}

// fitLast keeps right-aligned rows within width by breaking a last cell
// that is too long (a case's flags) after its commas, onto rows of its
// own whose other cells are empty.
func fitLast(rows [][]string, width int) [][]string {
	if len(rows) == 0 || len(rows[0]) == 0 {
		return rows
	}
	last := len(rows[0]) - 1
	used := 0 // each column is padded by 2
	for j := range last {
		n := 0
		for _, r := range rows {
			n = max(n, utf8.RuneCountInString(r[j]))
		}
		used += n + 2
	}
	room := max(width-used-2, utf8.RuneCountInString(rows[0][last]))
	var out [][]string
	for _, r := range rows {
		cell := r[last]
		for utf8.RuneCountInString(cell) > room {
			cut := strings.LastIndex(cell[:room], ",")
			if cut < 0 {
				break // one flag longer than the room: left whole
			}
			head := slices.Clone(r)
			head[last] = cell[:cut+1]
			out = append(out, head)
			r = make([]string, len(r))
			cell = cell[cut+1:]
		}
		r[last] = cell
		out = append(out, r)
	}
	return out
}

func needsSafetyTable(run *results.Run) bool {
	for i := range run.Results {
		res := &run.Results[i]
		if len(res.Faults) > 0 || res.Safety.Prevented > 0 || (res.Safety.Fence != nil && res.Safety.Fence.Fenced) {
			return true
		}
	}
	return false
}

// WriteSafety prints one row per case of what its safety checks found and
// what faults did: grants (or terms, rounds) checked, violations of the
// recipe's promise (exclusion: overlapping holders and fencing tokens that
// did not grow), the lock holders' writes to the shared register (--fence:
// the register's mode, writes, stale writes, and of those the accepted and
// the rejected), the faults started by action, and the session state
// changes the clients saw. "-" marks what was not measured.
func WriteSafety(w io.Writer, run *results.Run) error { return writeSafety(w, run, true) }

// writeSafety prints the safety table; narrow, without the backend of a
// run of one, the fence's columns where no case wrote to a register, and
// with the faults and session changes under the table, a line a case.
func writeSafety(w io.Writer, run *results.Run, wide bool) error {
	var cols []column
	for _, c := range summaryColumns(run)[:3] {
		if wide || c.narrow {
			cols = append(cols, c)
		}
	}
	checks, fence, faults := safetyColumns()
	cols = append(cols, checks...)
	if wide || slices.ContainsFunc(run.Results, func(r results.Result) bool { return r.Safety.Fence != nil }) {
		cols = append(cols, fence...)
	}
	if wide {
		cols, faults = append(cols, faults...), nil
	}
	if err := writeCases(w, run, cols, 0); err != nil {
		return fmt.Errorf("analysis: write safety: %w", err)
	}
	for i := range run.Results {
		res := &run.Results[i]
		if res.Faults == nil || len(faults) == 0 {
			continue
		}
		var said []string
		for _, c := range faults {
			said = append(said, c.head+": "+c.cell(res))
		}
		printLines(w, wrap(caseName(run, res)+": "+strings.Join(said, "; "), "  ", "    ", SummaryWidth))
	}
	return nil
}

// safetyColumns are the safety table's own columns (WriteSafety): what
// the checks found, the fenced register's writes, what fault injection
// did. Csv and json add their fields to every case of a run that has the
// table.
func safetyColumns() (checks, fence, faults []column) {
	register := func(r *results.Result, f func(*results.Fence) any) any {
		if r.Safety.Fence == nil {
			return nil
		}
		return f(r.Safety.Fence)
	}
	fenceCell := func(f func(*results.Fence) any) func(*results.Result) string {
		return func(r *results.Result) string {
			if v := register(r, f); v != nil {
				return fmt.Sprint(v)
			}
			return unmeasured
		}
	}
	fenceField := func(name string, f func(*results.Fence) any) []field {
		return []field{{name, func(r *results.Result) any { return register(r, f) }}}
	}
	mode := func(f *results.Fence) any {
		if f.Fenced {
			return "on"
		}
		return "off"
	}
	writes := func(f *results.Fence) any { return f.Writes }
	stale := func(f *results.Fence) any { return f.Stale }
	accepted := func(f *results.Fence) any { return f.Stale - f.Rejected }
	rejected := func(f *results.Fence) any { return f.Rejected }
	checks = []column{
		{head: "checked", cell: func(r *results.Result) string {
			if r.Safety.Checked == 0 {
				return unmeasured
			}
			return fmt.Sprint(r.Safety.Checked)
		}, fields: []field{{"safety_checked", func(r *results.Result) any {
			if r.Safety.Checked == 0 {
				return nil
			}
			return r.Safety.Checked
		}}}},
		{head: "violations", cell: func(r *results.Result) string {
			if r.Safety.Fence != nil && r.Safety.Checked > 0 {
				return fmt.Sprintf("%d (exclusion %d)", r.Safety.Violations, exclusion(r))
			}
			return violations(r)
		}, fields: []field{{"exclusion_violations", func(r *results.Result) any {
			if r.Safety.Checked == 0 {
				return nil
			}
			return exclusion(r)
		}}}},
	}
	fence = []column{
		{head: "fence", cell: fenceCell(mode), fields: fenceField("fence", mode)},
		{head: "writes", cell: fenceCell(writes), fields: fenceField("fence_writes", writes)},
		{head: "stale", cell: fenceCell(stale), fields: fenceField("stale_writes", stale)},
		{head: "accepted", cell: fenceCell(accepted), fields: fenceField("stale_writes_accepted", accepted)},
		{head: "rejected", cell: fenceCell(rejected), fields: fenceField("stale_writes_rejected", rejected)},
	}
	faults = []column{
		{head: "faults", cell: func(r *results.Result) string { return faultsCell(r, false) },
			fields: []field{{"faults", func(r *results.Result) any { return faultsValue(r, false) }}}},
		{head: "sessions", cell: func(r *results.Result) string { return faultsCell(r, true) },
			fields: []field{{"session_changes", func(r *results.Result) any { return faultsValue(r, true) }}}},
	}
	return checks, fence, faults
}

// exclusion are r's violations but the fenced register's accepted stale
// writes.
func exclusion(r *results.Result) int64 {
	v := r.Safety.Violations
	if f := r.Safety.Fence; f != nil {
		v -= f.Stale - f.Rejected
	}
	return v
}

// faultsCell lists what fault injection did in r: the faults started by
// action, or (sessions) the session state changes the clients saw; "none",
// or "-" without fault injection.
func faultsCell(r *results.Result, sessions bool) string {
	if v := faultsValue(r, sessions); v != nil {
		if s := v.(string); s != "" {
			return s
		}
		return "none"
	}
	return unmeasured
}

func faultsValue(r *results.Result, sessions bool) any {
	if r.Faults == nil {
		return nil
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(r.Faults)) {
		what, session := strings.CutPrefix(k, "session.")
		if session == sessions {
			out = append(out, fmt.Sprintf("%s %d", what, r.Faults[k]))
		}
	}
	return strings.Join(out, ", ")
}
