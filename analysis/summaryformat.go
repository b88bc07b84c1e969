package analysis

// The summary's formats beside text: csv (the table alone, every column,
// numbers in the unit their heading names), json (everything the text
// says, the table's cells as numbers) and markdown (everything, the table
// as the wide text table).

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/zkbench/zkbench/results"
)

// SummaryFormat is how WriteSummary prints a run's summary.
type SummaryFormat string

// Summary formats.
const (
	SummaryText     SummaryFormat = "text"     // for a terminal: the verdict, a table, findings and notes
	SummaryCSV      SummaryFormat = "csv"      // the table only, every column
	SummaryJSON     SummaryFormat = "json"     // the verdict, every column, findings and notes
	SummaryMarkdown SummaryFormat = "markdown" // as text, the table with every column
)

// SummaryFormats lists every SummaryFormat.
func SummaryFormats() []SummaryFormat {
	return []SummaryFormat{SummaryText, SummaryCSV, SummaryJSON, SummaryMarkdown}
}

// SummaryFormatNames are the summary formats in words, for help texts:
// "text, csv, json or markdown".
func SummaryFormatNames() string {
	var names []string
	for _, f := range SummaryFormats() {
		names = append(names, string(f))
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// String, Set and Type make a *SummaryFormat a command-line flag's value
// (--format): Set refuses an unknown format.
func (f SummaryFormat) String() string { return string(f) }

// Set is ParseSummaryFormat.
func (f *SummaryFormat) Set(s string) error {
	v, err := ParseSummaryFormat(s)
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// Type names the flag's values in help texts.
func (f *SummaryFormat) Type() string { return "format" }

// ErrUnknownFormat is a summary format that is none of SummaryFormats.
var ErrUnknownFormat = errors.New("analysis: unknown summary format")

// ParseSummaryFormat returns the format called s, or an error wrapping
// ErrUnknownFormat that names the formats there are.
func ParseSummaryFormat(s string) (SummaryFormat, error) {
	for _, f := range SummaryFormats() {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("%w %q: want %s", ErrUnknownFormat, s, SummaryFormatNames())
}

// machineFields are the csv columns and json keys of run's cases: every
// column's fields, and the safety table's where the run has one.
func machineFields(run *results.Run, cols []column) []field {
	if needsSafetyTable(run) {
		checks, fence, faults := safetyColumns()
		cols = slices.Concat(cols, checks, fence, faults)
	}
	var out []field
	for _, c := range cols {
		out = append(out, c.fields...)
	}
	return out
}

// writeCSV prints the table: a header of field names, a row a result;
// not measured is an empty cell.
func writeCSV(w io.Writer, run *results.Run) error {
	fields := machineFields(run, summaryColumns(run))
	cw := csv.NewWriter(w)
	row := make([]string, len(fields))
	for i, f := range fields {
		row[i] = f.name
	}
	if err := cw.Write(row); err != nil {
		return err
	}
	for i := range run.Results {
		for j, f := range fields {
			row[j] = csvValue(f.value(&run.Results[i]))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// jsonSummary is the json form of a run's summary.
type jsonSummary struct {
	Run          string         `json:"run"`
	Status       results.Status `json:"status"`
	StatusDetail string         `json:"status_detail,omitempty"`
	Verdict      []string       `json:"verdict"`
	Columns      []string       `json:"columns"`
	Cases        []jsonCase     `json:"cases"`
	Findings     []NoteGroup    `json:"findings"`
	Notes        []NoteGroup    `json:"notes"`
	Leftovers    []string       `json:"leftovers,omitempty"`
}

// jsonCase is a row of the table as an object whose keys keep the
// columns' order.
type jsonCase struct {
	fields []field
	res    *results.Result
}

func (c jsonCase) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range c.fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.name)
		if err != nil {
			return nil, err
		}
		val := f.value(c.res)
		if x, ok := val.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			val = nil
		}
		v, err := json.Marshal(val)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeJSON(w io.Writer, run *results.Run) error {
	s := summarize(run)
	fields := machineFields(run, s.columns)
	out := jsonSummary{Run: run.ID, Status: run.Status, StatusDetail: run.StatusDetail, Verdict: s.verdict,
		Columns: []string{}, Cases: []jsonCase{}, Findings: s.findings, Notes: s.notes, Leftovers: run.Leftovers}
	for _, f := range fields {
		out.Columns = append(out.Columns, f.name)
	}
	for i := range run.Results {
		out.Cases = append(out.Cases, jsonCase{fields, &run.Results[i]})
	}
	if out.Findings == nil {
		out.Findings = []NoteGroup{}
	}
	if out.Notes == nil {
		out.Notes = []NoteGroup{}
	}
	return encodeJSON(w, out)
}

// writeMarkdown prints the summary as text does, its table with every
// column as a Markdown table and its findings and notes as lists.
func writeMarkdown(w io.Writer, run *results.Run) error {
	s := summarize(run)
	fmt.Fprintf(w, "**Verdict** (run %s)\n\n", run.ID)
	for _, l := range s.verdict {
		fmt.Fprintln(w, "- "+l)
	}
	fmt.Fprintln(w)
	var cols []column
	for _, c := range s.columns {
		if c.wide {
			cols = append(cols, c)
		}
	}
	markdownTable(w, run, cols)
	if needsSafetyTable(run) {
		fmt.Fprintln(w, "\n**Safety**")
		fmt.Fprintln(w)
		checks, fence, faults := safetyColumns()
		markdownTable(w, run, slices.Concat(s.columns[:3], checks, fence, faults))
	}
	for _, part := range []struct {
		title  string
		groups []NoteGroup
	}{{"Findings", s.findings}, {"Notes", s.notes}} {
		if len(part.groups) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n**%s**\n\n", part.title)
		for _, g := range part.groups {
			head, items := g.parts()
			fmt.Fprintln(w, "- "+head)
			for _, it := range items {
				fmt.Fprintln(w, "  - "+it)
			}
		}
	}
	markdownEnd.write(w, run)
	return nil
}

// markdownTable prints cols of run's results as a Markdown table.
func markdownTable(w io.Writer, run *results.Run, cols []column) {
	row := make([]string, len(cols))
	line := func() { fmt.Fprintln(w, "| "+strings.Join(row, " | ")+" |") }
	for i, c := range cols {
		row[i] = markdownCell(c.head)
	}
	line()
	for i := range row {
		row[i] = "---"
	}
	line()
	for i := range run.Results {
		for j, c := range cols {
			row[j] = markdownCell(c.cell(&run.Results[i]))
		}
		line()
	}
}

// markdownCell escapes the pipes of a cell ("2.90 | 10.10"); an empty cell
// is a space.
func markdownCell(s string) string {
	if s == "" {
		return " "
	}
	return strings.ReplaceAll(s, "|", `\|`)
}
