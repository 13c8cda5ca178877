package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
)

// TestDiagramFlag: --diagram draws the crash with its lanes, the takeover
// and the fencing, instead of the transcript's plain lines.
func TestDiagramFlag(t *testing.T) {
	t.Parallel()
	r := cli(t, nil, "scenario", "crash", "--diagram")
	if r.code != exitcode.OK {
		t.Fatalf("%+v", r)
	}
	for _, want := range []string{"app", "server A", "server B", "PostgreSQL", "[TAKEOVER]", "[FENCED]", "  31 s", "verdict: invariants held"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the diagram lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestHTMLFlag: --html writes one whole page, or nothing at all.
func TestHTMLFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	page := filepath.Join(dir, "crash.html")
	if r := cli(t, nil, "scenario", "crash", "--html", page); r.code != exitcode.OK {
		t.Fatalf("%+v", r)
	}
	b, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(b), `<svg xmlns="http://www.w3.org/2000/svg" class="diagram"`) || !strings.HasSuffix(string(b), "</html>\n") {
		t.Fatalf("the page is not whole (%v): %.300s", err, b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".bank-page-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestHTMLLostResponse: on a narrow diagram (two lanes) the balances line
// still fits on one row, and the lesson's own drawing in the step's note
// is kept apart, in monospace, where its columns line up.
func TestHTMLLostResponse(t *testing.T) {
	t.Parallel()
	page := filepath.Join(t.TempDir(), "lost.html")
	if r := cli(t, nil, "scenario", "lost-response", "--html", page); r.code != exitcode.OK {
		t.Fatalf("%+v", r)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if !strings.Contains(html, `text-anchor="start">Ada ₦30,000, Bola ₦25,000, Chidi ₦20,000 | total ₦75,000 | transfers 2</text>`) {
		t.Errorf("the diagram's balances line is not one row of text:\n%s", html)
	}
	before, after, _ := strings.Cut(html, `<pre class="drawing">`)
	drawing, _, _ := strings.Cut(after, "</pre>")
	note := before[max(0, strings.LastIndex(before, `<p class="note">`)):]
	if !strings.Contains(drawing, "lost in tunnel") || strings.Contains(note, "lost in tunnel") {
		t.Errorf("the lesson's drawing is not in its own monospace block:\n%s", html)
	}
}

func TestPictureUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"scenario", "crash", "--diagram", "--json"}, "--diagram and --json each replace the transcript"},
		{[]string{"scenario", "crash", "--diagram", "--step"}, "use bank lab to step through a diagram"},
		{[]string{"mistake", "no-fencing", "--diagram", "--explain"}, "use --html FILE or bank lab"},
		{[]string{"scenario", "crash", "--html", filepath.Join(dir, "no", "such", "dir", "x.html")}, "--html: cannot write in"},
		{[]string{"scenario", "crash", "--html", dir}, "is a directory: name a new file"},
		{[]string{"lab", "--addr", "0.0.0.0:8090"}, "--addr must be a loopback address"},
	} {
		r := cli(t, nil, c.args...)
		if r.code != exitcode.Usage || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused --html left files: %v", entries)
	}
}
