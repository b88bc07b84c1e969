package report

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkbench/zkbench/internal/spawn"
)

// A headless Chromium driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: JSON messages, each ended by a NUL byte, read
// from the browser's fd 3 and written to its fd 4), so that a test reads
// the console and the laid-out page without a new dependency or a port.

// chromiumNames are the executables looked for, Debian's first.
var chromiumNames = []string{"chromium", "chromium-browser"}

// requireChromium returns the path of Chromium. Without it the test skips
// saying why, or, with CI=true (where `make deps` installed it), fails.
func requireChromium(t *testing.T) string {
	t.Helper()
	for _, name := range chromiumNames {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	msg := fmt.Sprintf("no Chromium (%s) on PATH: `make deps` installs Debian's chromium", strings.Join(chromiumNames, ", "))
	if os.Getenv("CI") == "true" {
		t.Fatalf("the browser test needs Chromium, and CI=true: %s", msg)
	}
	t.Skipf("browser test skipped: %s (with CI=true this fails)", msg)
	return ""
}

// cdpMessage is a DevTools protocol message: a command's reply (ID) or an
// event (Method).
type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// browser is one headless Chromium process and its protocol pipe.
type browser struct {
	proc   *spawn.Proc
	stderr string // its log file
	w      *os.File

	writeMu sync.Mutex
	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpMessage
	events  []cdpMessage
	notify  chan struct{} // a send after each event
	closed  chan struct{} // the pipe from the browser ended
}

// startBrowser starts Chromium headless with a 1280 px wide window and its
// profile in a temporary folder. The test's cleanup kills its whole process
// group (the browser's renderer and GPU processes too), also on failure.
func startBrowser(t *testing.T, path string) *browser {
	t.Helper()
	dir := t.TempDir()
	toR, toW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "chromium.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path,
		"--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1280,800", "--hide-scrollbars",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
		"--disable-sync", "--mute-audio", "about:blank")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{toR, fromW} // the browser's fd 3 and 4
	if err := spawn.Start(cmd); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	toR.Close()
	fromW.Close()
	b := &browser{
		proc: spawn.WatchGroup(cmd, func() { logf.Close() }), stderr: logf.Name(), w: toW,
		pending: map[int]chan cdpMessage{}, notify: make(chan struct{}, 1), closed: make(chan struct{}),
	}
	// Cleanups run last-in first-out: the browser is gone before its
	// profile folder is removed.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.call(ctx, "", "Browser.close", nil, nil)
		b.proc.Terminate(ctx, 3*time.Second)
		toW.Close()
		fromR.Close()
	})
	go b.read(fromR)
	return b
}

// read delivers the browser's messages: replies to their callers, events
// to the list waitEvent scans.
func (b *browser) read(r io.Reader) {
	defer close(b.closed)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if err := json.Unmarshal(raw[:len(raw)-1], &m); err != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.pending[m.ID]; ok {
				delete(b.pending, m.ID)
				ch <- m
			}
		} else {
			b.events = append(b.events, m)
		}
		b.mu.Unlock()
		select {
		case b.notify <- struct{}{}:
		default:
		}
	}
}

// call sends method with params (to the page of session, or to the
// browser when session is "") and decodes the reply's result into result
// (if not nil). It returns when the reply comes, ctx ends or the browser
// goes.
func (b *browser) call(ctx context.Context, session, method string, params, result any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	if params == nil {
		raw = []byte("{}")
	}
	reply := make(chan cdpMessage, 1)
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	b.pending[id] = reply
	b.mu.Unlock()
	msg, err := json.Marshal(cdpMessage{ID: id, Method: method, SessionID: session, Params: raw})
	if err != nil {
		return err
	}
	b.writeMu.Lock()
	_, err = b.w.Write(append(msg, 0))
	b.writeMu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-reply:
		if m.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	case <-b.closed:
		return fmt.Errorf("%s: the browser closed its pipe", method)
	}
}

// waitEvent waits for event method of session, from the from-th event on,
// and returns the index after it.
func (b *browser) waitEvent(ctx context.Context, session, method string, from int) (int, error) {
	for {
		b.mu.Lock()
		for i := from; i < len(b.events); i++ {
			if e := b.events[i]; e.Method == method && e.SessionID == session {
				b.mu.Unlock()
				return i + 1, nil
			}
		}
		from = len(b.events)
		b.mu.Unlock()
		select {
		case <-b.notify:
		case <-ctx.Done():
			return from, fmt.Errorf("waiting for %s: %w", method, ctx.Err())
		case <-b.closed:
			return from, errors.New("waiting for " + method + ": the browser closed its pipe")
		}
	}
}

// eventsSince returns a copy of the events from the from-th on.
func (b *browser) eventsSince(from int) []cdpMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]cdpMessage(nil), b.events[min(from, len(b.events)):]...)
}

// log is the browser's own output, for a failure message.
func (b *browser) log() string {
	raw, err := os.ReadFile(b.stderr)
	if err != nil {
		return err.Error()
	}
	if len(raw) > 4000 {
		raw = raw[len(raw)-4000:]
	}
	return string(raw)
}

// page is one tab of the browser, attached to by a flat session.
type page struct {
	b       *browser
	session string
}

// newPage opens a tab at viewport width x height (CSS pixels) with the
// console, log and page events on.
func (b *browser) newPage(ctx context.Context, width, height int) (*page, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return nil, err
	}
	p := &page{b: b, session: attached.SessionID}
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if err := b.call(ctx, p.session, m, nil, nil); err != nil {
			return nil, err
		}
	}
	err := b.call(ctx, p.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return p, err
}

// consoleProblem is an error the page logged, threw or had logged for it.
type consoleProblem struct {
	source, text string
}

// load navigates to url, waits for its load event, and returns the errors
// the console saw meanwhile: console.error and console.assert calls,
// uncaught exceptions, and the browser's own error entries (a resource
// that failed to load, a blocked request).
func (p *page) load(ctx context.Context, url string) ([]consoleProblem, error) {
	b := p.b
	b.mu.Lock()
	from := len(b.events)
	b.mu.Unlock()
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := b.call(ctx, p.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return nil, err
	}
	if nav.ErrorText != "" {
		return nil, fmt.Errorf("navigate to %s: %s", url, nav.ErrorText)
	}
	if _, err := b.waitEvent(ctx, p.session, "Page.loadEventFired", from); err != nil {
		return nil, err
	}
	// Messages a script logs at load reach us before or with the event;
	// one round trip more lets the last of them arrive.
	if err := b.call(ctx, p.session, "Runtime.evaluate", map[string]any{"expression": "0"}, nil); err != nil {
		return nil, err
	}
	var problems []consoleProblem
	for _, e := range b.eventsSince(from) {
		if e.SessionID != p.session {
			continue
		}
		switch e.Method {
		case "Runtime.consoleAPICalled":
			var c struct {
				Type string `json:"type"`
				Args []struct {
					Value       any    `json:"value"`
					Description string `json:"description"`
				} `json:"args"`
			}
			if json.Unmarshal(e.Params, &c) == nil && (c.Type == "error" || c.Type == "assert") {
				var parts []string
				for _, a := range c.Args {
					if a.Value != nil {
						parts = append(parts, fmt.Sprint(a.Value))
					} else {
						parts = append(parts, a.Description)
					}
				}
				problems = append(problems, consoleProblem{"console." + c.Type, strings.Join(parts, " ")})
			}
		case "Runtime.exceptionThrown":
			var x struct {
				Details struct {
					Text      string `json:"text"`
					Exception struct {
						Description string `json:"description"`
					} `json:"exception"`
				} `json:"exceptionDetails"`
			}
			if json.Unmarshal(e.Params, &x) == nil {
				problems = append(problems, consoleProblem{"exception", x.Details.Text + " " + x.Details.Exception.Description})
			}
		case "Log.entryAdded":
			var l struct {
				Entry struct {
					Source string `json:"source"`
					Level  string `json:"level"`
					Text   string `json:"text"`
					URL    string `json:"url"`
				} `json:"entry"`
			}
			if json.Unmarshal(e.Params, &l) == nil && l.Entry.Level == "error" {
				problems = append(problems, consoleProblem{"log " + l.Entry.Source, l.Entry.Text + " " + l.Entry.URL})
			}
		}
	}
	return problems, nil
}

// evaluate runs a JavaScript expression in the page and decodes its value.
func (p *page) evaluate(ctx context.Context, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := p.b.call(ctx, p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return err
	}
	if r.Exception != nil {
		return fmt.Errorf("evaluate: %s", r.Exception.Text)
	}
	return json.Unmarshal(r.Result.Value, out)
}
