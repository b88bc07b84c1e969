package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/zkbench/zkbench/internal/atomicfile"
	"github.com/zkbench/zkbench/results"
)

// PlotsDir is the folder, next to report.md, that holds the Markdown
// twin's images.
const PlotsDir = "plots"

// Markdown writes d as GitHub-flavoured Markdown. Images are referenced as
// PlotsDir/<name>.png (Write puts them there).
func (d *Document) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", d.Title)
	for _, bl := range d.Blocks {
		switch x := bl.(type) {
		case Heading:
			fmt.Fprintf(&b, "%s %s\n\n", strings.Repeat("#", x.Level), x.Text)
		case Para:
			if x.Warning {
				fmt.Fprintf(&b, "> **%s**\n\n", mdText(x.Text))
			} else {
				fmt.Fprintf(&b, "%s\n\n", mdText(x.Text))
			}
		case List:
			for _, it := range x.Items {
				fmt.Fprintf(&b, "- %s\n", mdText(it))
			}
			b.WriteString("\n")
		case Table:
			if x.Caption != "" {
				fmt.Fprintf(&b, "%s\n\n", mdText(x.Caption))
			}
			b.WriteString(mdRow(x.Header))
			sep := make([]string, len(x.Header))
			for i := range sep {
				sep[i] = "---"
			}
			b.WriteString("|" + strings.Join(sep, "|") + "|\n")
			for _, r := range x.Rows {
				b.WriteString(mdRow(r))
			}
			b.WriteString("\n")
		case Image:
			fmt.Fprintf(&b, "### %s\n\n![%s](%s/%s.png)\n\n%s\n\n", x.Title, x.Title, PlotsDir, x.Name, mdText(x.Caption))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdText(s string) string { return strings.ReplaceAll(s, "\n", " ") }

func mdRow(cells []string) string {
	esc := make([]string, len(cells))
	for i, c := range cells {
		esc[i] = strings.ReplaceAll(mdText(c), "|", `\|`)
	}
	return "| " + strings.Join(esc, " | ") + " |\n"
}

const css = `body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1280px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #ddd}h2{border-bottom:1px solid #eee;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3}tr:nth-child(even) td{background:#fafafa}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.caption{color:#555;font-size:13px;margin-bottom:.2em}
.warning{background:#fdecea;border-left:4px solid #c00;padding:.5em 1em;font-weight:bold}
figure{margin:1em 0 2em}figure img{max-width:100%;border:1px solid #eee}figcaption{color:#555;font-size:13px}`

// HTML writes d as one self-contained HTML page: styles inline, plots
// inlined as base64 PNG (drawn now if they were not yet).
func (d *Document) HTML(w io.Writer) error {
	if err := d.RenderImages(); err != nil {
		return err
	}
	var b strings.Builder
	e := html.EscapeString
	fmt.Fprintf(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n<style>%s</style></head>\n<body>\n<h1>%s</h1>\n",
		e(d.Title), css, e(d.Title))
	for _, bl := range d.Blocks {
		switch x := bl.(type) {
		case Heading:
			fmt.Fprintf(&b, "<h%d>%s</h%d>\n", x.Level, e(x.Text), x.Level)
		case Para:
			if x.Warning {
				fmt.Fprintf(&b, "<p class=\"warning\">%s</p>\n", e(x.Text))
			} else {
				fmt.Fprintf(&b, "<p>%s</p>\n", e(x.Text))
			}
		case List:
			b.WriteString("<ul>\n")
			for _, it := range x.Items {
				fmt.Fprintf(&b, "<li>%s</li>\n", e(it))
			}
			b.WriteString("</ul>\n")
		case Table:
			if x.Caption != "" {
				fmt.Fprintf(&b, "<p class=\"caption\">%s</p>\n", e(x.Caption))
			}
			b.WriteString("<table>\n<tr>")
			for _, h := range x.Header {
				fmt.Fprintf(&b, "<th>%s</th>", e(h))
			}
			b.WriteString("</tr>\n")
			for _, r := range x.Rows {
				b.WriteString("<tr>")
				for _, c := range r {
					class := ""
					if isNumber(c) {
						class = ` class="n"`
					}
					fmt.Fprintf(&b, "<td%s>%s</td>", class, e(c))
				}
				b.WriteString("</tr>\n")
			}
			b.WriteString("</table>\n")
		case Image:
			fmt.Fprintf(&b, "<figure id=\"%s\"><h3>%s</h3><img alt=\"%s\" src=\"data:image/png;base64,%s\"><figcaption>%s</figcaption></figure>\n",
				e(x.Name), e(x.Title), e(x.Title), base64.StdEncoding.EncodeToString(x.PNG), e(x.Caption))
		}
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func isNumber(s string) bool {
	s = strings.TrimSuffix(s, "%")
	if s == "" {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789.-e+", r) {
			return false
		}
	}
	return true
}

// Files written by Write.
const (
	HTMLFile     = "report.html"
	MarkdownFile = "report.md"
)

// Write builds the report of runs and writes into dir (created if needed)
// report.html (self-contained), report.md and the Markdown's images under
// PlotsDir. It returns the paths written.
func Write(runs []*results.Run, dir string, opts Options) ([]string, error) {
	d, err := Build(runs, opts)
	if err != nil {
		return nil, err
	}
	if err := results.CheckWritable(dir); err != nil {
		return nil, fmt.Errorf("report: -o %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, PlotsDir), 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if err := d.RenderImages(); err != nil {
		return nil, err
	}
	var paths []string
	for _, bl := range d.Blocks {
		if img, ok := bl.(Image); ok {
			p := filepath.Join(dir, PlotsDir, img.Name+".png")
			if err := writeFile(p, img.PNG); err != nil {
				return paths, err
			}
			paths = append(paths, p)
		}
	}
	for _, out := range []struct {
		name  string
		write func(io.Writer) error
	}{{MarkdownFile, d.Markdown}, {HTMLFile, d.HTML}} {
		var buf bytes.Buffer
		if err := out.write(&buf); err != nil {
			return paths, err
		}
		p := filepath.Join(dir, out.name)
		if err := writeFile(p, buf.Bytes()); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// writeFile writes data to path atomically (atomicfile.Write).
func writeFile(path string, data []byte) error {
	if err := atomicfile.Write(path, data); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
