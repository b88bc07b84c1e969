package report

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// viewportWidth is the browser window the report must fit, in CSS pixels.
const viewportWidth = 1280

// pageCheck is what checkPageJS finds in a loaded page.
type pageCheck struct {
	Viewport    float64 `json:"viewport"`
	ScrollWidth float64 `json:"scrollWidth"`
	Elements    int     `json:"elements"`
	Rightmost   float64 `json:"rightmost"`
	Images      int     `json:"images"`
	Broken      []struct {
		Alt string `json:"alt"`
		Src string `json:"src"`
	} `json:"broken"`
	Wide []struct {
		Tag   string  `json:"tag"`
		Text  string  `json:"text"`
		Right float64 `json:"right"`
	} `json:"wide"`
}

// checkPageJS lists the images that did not load (not complete, or
// naturalWidth 0) and every element whose box ends right of the viewport
// (or starts left of it), with the page's own width.
const checkPageJS = `(() => {
  const vw = document.documentElement.clientWidth;
  const out = {viewport: vw, scrollWidth: document.documentElement.scrollWidth, elements: 0, images: 0, broken: [], wide: [], rightmost: 0};
  for (const img of document.images) {
    out.images++;
    if (!img.complete || img.naturalWidth === 0) out.broken.push({alt: img.alt, src: img.src.slice(0, 80)});
  }
  for (const el of document.body.querySelectorAll('*')) {
    out.elements++;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    out.rightmost = Math.max(out.rightmost, r.right);
    if (r.right > vw + 0.5 || r.left < -0.5) {
      out.wide.push({tag: el.tagName.toLowerCase(), text: (el.textContent || '').trim().slice(0, 100), right: r.right});
    }
  }
  return out;
})()`

// checkPage loads file in p and fails t on every console error, image that
// did not load, and element outside the viewport's width.
func checkPage(ctx context.Context, t *testing.T, p *page, file string) pageCheck {
	t.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := p.load(ctx, (&url.URL{Scheme: "file", Path: abs}).String())
	if err != nil {
		t.Fatalf("load %s: %v\nchromium's log:\n%s", file, err, p.b.log())
	}
	for _, pr := range problems {
		t.Errorf("%s: console: %s: %s", filepath.Base(file), pr.source, pr.text)
	}
	var c pageCheck
	if err := p.evaluate(ctx, checkPageJS, &c); err != nil {
		t.Fatalf("check %s: %v", file, err)
	}
	if c.Viewport != viewportWidth {
		t.Fatalf("the page is %v px wide, want the %d px window", c.Viewport, viewportWidth)
	}
	for _, img := range c.Broken {
		t.Errorf("%s: image %q (%s...) did not load", filepath.Base(file), img.Alt, img.Src)
	}
	for _, w := range c.Wide {
		t.Errorf("%s: <%s> ends at %.0f px, beyond the %v px window: %q", filepath.Base(file), w.Tag, w.Right, c.Viewport, w.Text)
	}
	t.Logf("%s: %d elements, %d images, the rightmost edge at %.0f px of %v", filepath.Base(file), c.Elements, c.Images, c.Rightmost, c.Viewport)
	if c.ScrollWidth > c.Viewport {
		t.Errorf("%s: the page is %v px wide, beyond the %v px window", filepath.Base(file), c.ScrollWidth, c.Viewport)
	}
	return c
}

// keptReportRun is the kept run whose whole report TestKeptRunReport
// writes: the README's.
const keptReportRun = "lock-zookeeper"

// TestKeptRunReport writes the whole report of a kept run (docs/runs):
// a PNG a figure beside report.md, report.html with every figure inlined.
// Then it opens report.html in headless Chromium at a 1280 px window, and
// fails on console errors, images that did not load and anything beyond
// the window's width; a page broken in each of those ways first shows that
// the checks catch them.
func TestKeptRunReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runs := readRuns(t, filepath.Join("..", "docs", "runs", keptReportRun, "results.json"))
	paths, err := Write(runs, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	images := bytes.Count(md, []byte("]("+PlotsDir+"/"))
	pngs, err := filepath.Glob(filepath.Join(dir, PlotsDir, "*.png"))
	if err != nil {
		t.Fatal(err)
	}
	if images == 0 || len(pngs) != images {
		t.Errorf("%d PNGs written for %d plots: %v", len(pngs), images, paths)
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(html, []byte(`src="data:image/png;base64,`)); n != images {
		t.Errorf("report.html inlines %d images, want %d", n, images)
	}

	t.Run("in chromium", func(t *testing.T) {
		chromium := requireChromium(t)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		b := startBrowser(t, chromium)
		p, err := b.newPage(ctx, viewportWidth, 800)
		if err != nil {
			t.Fatalf("open a page: %v\nchromium's log:\n%s", err, b.log())
		}
		t.Run("a broken page is caught", func(t *testing.T) { checkBrokenPage(ctx, t, p, t.TempDir()) })
		t.Run(keptReportRun, func(t *testing.T) {
			c := checkPage(ctx, t, p, filepath.Join(dir, HTMLFile))
			if c.Images != images {
				t.Errorf("the page shows %d images, the report has %d plots", c.Images, images)
			}
			if c.Elements < 100 {
				t.Errorf("the page has %d elements: not the report", c.Elements)
			}
		})
	})
}

// checkBrokenPage loads a page with a missing image, an element wider
// than the window and a console.error, and fails unless each is found.
func checkBrokenPage(ctx context.Context, t *testing.T, p *page, dir string) {
	broken := filepath.Join(dir, "broken.html")
	html := `<!doctype html><html><body>
<img alt="missing" src="no-such-image.png">
<div style="width:2000px">wider than the window</div>
<script>console.error("an error the check must see")</script>
</body></html>`
	if err := os.WriteFile(broken, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	problems, err := p.load(ctx, (&url.URL{Scheme: "file", Path: broken}).String())
	if err != nil {
		t.Fatal(err)
	}
	consoleErr, failedLoad := false, false
	for _, pr := range problems {
		consoleErr = consoleErr || (pr.source == "console.error" && pr.text == "an error the check must see")
		failedLoad = failedLoad || pr.source == "log network"
	}
	if !consoleErr || !failedLoad {
		t.Errorf("console problems %+v: want the console.error and the image's failed load", problems)
	}
	var c pageCheck
	if err := p.evaluate(ctx, checkPageJS, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Broken) != 1 || c.Broken[0].Alt != "missing" {
		t.Errorf("broken images %+v, want the missing one", c.Broken)
	}
	if len(c.Wide) == 0 || c.ScrollWidth <= c.Viewport {
		t.Errorf("wide elements %+v, page width %v: want the 2000 px div", c.Wide, c.ScrollWidth)
	}
}
