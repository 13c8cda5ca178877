package scenarios_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/pgserver/pgtest"
	"github.com/zudojs/bank/scenarios/lab/render"
)

var update = flag.Bool("update", false, "rewrite the golden files from real runs")

// bankBinary is built once: the memory-keys mistake starts bank serve
// processes of its own.
var bankBinary string

func TestMain(m *testing.M) {
	var remove func()
	var err error
	if bankBinary, remove, err = pgtest.BuildBank("../cmd/bank"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	code := pgtest.Run(m, pgserver.Template{Prefix: "bank", Schema: api.SchemaText(), Setup: api.Setup})
	remove()
	os.Exit(code)
}

const goldenDir = "../testdata/scenarios"

// run runs a scenario with its transcript printed live, and recorded
// (with the states the pictures show).
func run(t *testing.T, sc *lab.Scenario) (string, lab.Verdict, *render.Recorder) {
	t.Helper()
	var out bytes.Buffer
	rec := &render.Recorder{}
	v, err := lab.Run(context.Background(), pgtest.Clones(), sc, lab.Options{Sink: lab.Tee{render.Text(&out, render.Options{}), rec}, States: true})
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), v, rec
}

// drawn draws each recorded run, under its name.
func drawn(rec *render.Recorder) string {
	var b bytes.Buffer
	for _, r := range rec.Runs {
		fmt.Fprintf(&b, "== %s\n", r.Scenario.Name)
		render.DrawDiagram(&b, r, false, 0)
		b.WriteString("\n")
	}
	return b.String()
}

// replayed is the transcript a recording gives when it is fed to the
// text renderer again: the live one, if both come from the one stream.
func replayed(rec *render.Recorder) string {
	var b bytes.Buffer
	text := render.Text(&b, render.Options{})
	for _, r := range rec.Runs {
		render.Replay(r, text)
	}
	return b.String()
}

// TestGolden runs every scenario twice, requires identical transcripts
// (nondeterminism shows up here first), then compares with the golden file.
func TestGolden(t *testing.T) {
	for _, sc := range scenarios.All {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			first, v, r1 := run(t, sc)
			second, _, r2 := run(t, sc)
			if first != second {
				t.Fatalf("two runs printed different transcripts:\n%s", diff(first, second))
			}
			if drawn(r1) != drawn(r2) {
				t.Fatalf("two runs drew different diagrams:\n%s", diff(drawn(r1), drawn(r2)))
			}
			if again := replayed(r1); again != first {
				t.Fatalf("the recording, replayed, printed another transcript than the run:\n%s", diff(first, again))
			}
			if !v.Reproduced {
				t.Errorf("the lesson did not reproduce: %s", strings.Join(v.Differences(), "; "))
			}
			golden(t, filepath.Join(goldenDir, sc.Name+".golden"), first)
			checkWidth(t, first)
			checkWidth(t, explainedText(r1))
			explained(t, sc.Explain, r1)
			drawnAsTold(t, r1)
			golden(t, filepath.Join("../testdata/diagrams", sc.Name+".golden"), drawn(r1))
			checkWidth(t, drawn(r1))
		})
	}
}

// TestMistakesGolden runs each mistake (both halves) twice and compares
// with testdata/mistakes/NAME.golden.
func TestMistakesGolden(t *testing.T) {
	for _, m := range scenarios.Mistakes {
		t.Run(m.Name, func(t *testing.T) {
			t.Parallel()
			runOnce := func() (string, lab.MistakeVerdict, string) {
				var out bytes.Buffer
				rec := &render.Recorder{}
				v, err := lab.RunMistake(context.Background(), pgtest.Clones(), m, lab.Options{Bank: bankBinary, Sink: lab.Tee{render.Text(&out, render.Options{}), rec}})
				if err != nil {
					t.Fatal(err)
				}
				explained(t, m.Explain, rec)
				checkWidth(t, explainedText(rec))
				drawnAsTold(t, rec)
				mistakeExplained(t, m, rec)
				return out.String(), v, drawn(rec)
			}
			first, v, d1 := runOnce()
			second, _, d2 := runOnce()
			if first != second {
				t.Fatalf("two runs printed different transcripts:\n%s", diff(first, second))
			}
			if d1 != d2 {
				t.Fatalf("two runs drew different diagrams:\n%s", diff(d1, d2))
			}
			golden(t, filepath.Join("../testdata/diagrams/mistakes", m.Name+".golden"), d1)
			checkWidth(t, d1)
			if !v.Reproduced() {
				t.Errorf("the mistake did not reproduce:\n%s", first)
			}
			golden(t, filepath.Join("../testdata/mistakes", m.Name+".golden"), first)
			checkWidth(t, first)
		})
	}
	files, _ := filepath.Glob("../testdata/mistakes/*.golden")
	for _, f := range files {
		if _, ok := scenarios.LookupMistake(strings.TrimSuffix(filepath.Base(f), ".golden")); !ok {
			t.Errorf("%s has no mistake", f)
		}
	}
}

// explained: every note of --explain is keyed by the title of a step the
// story really takes (a note under a misspelt title is never shown).
func explained(t *testing.T, notes map[string]string, rec *render.Recorder) {
	t.Helper()
	taken := map[string]bool{}
	for _, r := range rec.Runs {
		for _, e := range r.Events {
			if e.Kind == "step" {
				taken[e.Text] = true
			}
		}
	}
	for title := range notes {
		if !taken[title] {
			t.Errorf("an --explain note is keyed %q, but no step has that title", title)
		}
	}
}

// drawnAsTold: a diagram draws what the transcript tells, no more and no
// less. One fencing is one fenced arrow (the store refusing the answer),
// however many lines report it; a timeout the phone sees follows an arrow
// lost on the way (a request dropped, or an answer lost), never an answer
// that reached the app; and a claim is never locked "until 0 s" (a request
// sent without the story's clock).
func drawnAsTold(t *testing.T, rec *render.Recorder) {
	t.Helper()
	for _, r := range rec.Runs {
		fenced, fencings := 0, 0
		var atApp *lab.Event // the last arrow to or from the app
		for _, e := range r.Events {
			switch e.Kind {
			case "message":
				if e.Mark == "fenced" {
					fenced++
				}
				if strings.Contains(e.Text, "ends at 0 s") {
					t.Errorf("%s: %q: a claim locked until the clock's start (a call without Now)", r.Scenario.Name, e.Text)
				}
				if e.To == lab.ActorApp || e.From == lab.ActorApp {
					atApp = &e
				}
			case "line", "response":
				if strings.Contains(e.Text, idem.ErrLockLost.Error()) {
					fencings++
				}
				if strings.Contains(e.Text, lab.ErrLostResponse.Error()) && (atApp == nil || atApp.Mark != "lost") {
					got := "no arrow"
					if atApp != nil {
						got = fmt.Sprintf("%q", atApp.Text)
					}
					t.Errorf("%s: the phone sees %q, but the diagram's last arrow at the app is %s, not one lost on the way", r.Scenario.Name, e.Text, got)
				}
			}
		}
		if fenced != fencings {
			t.Errorf("%s: %d fencings told, %d fenced arrows drawn", r.Scenario.Name, fencings, fenced)
		}
	}
}

// mistakeExplained: --explain says, under each half's title, why the
// mistake does its damage and what the fix is (the broken half), and why
// the fix holds (the fixed half).
func mistakeExplained(t *testing.T, m *lab.Mistake, rec *render.Recorder) {
	t.Helper()
	if m.Why == "" || m.Holds == "" || m.Fix == "" {
		t.Fatalf("%s: a mistake needs Why, Fix and Holds, for --explain", m.Name)
	}
	var b bytes.Buffer
	text := render.Text(&b, render.Options{Explain: true, Width: -1})
	for _, r := range rec.Runs {
		render.Replay(r, text)
	}
	for _, want := range []string{"why it goes wrong: " + m.Why, "the fix, in the second half: " + m.Fix, "why it holds: " + m.Holds} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s --explain does not say %q", m.Name, want)
		}
	}
}

// TestNotesAreWholeSentences: each line of a step's note is whole
// sentences (a line is folded to the terminal on its own, so a sentence
// cut in two reads as two broken lines), or part of a drawing.
func TestNotesAreWholeSentences(t *testing.T) {
	notes := map[string]map[string]string{}
	for _, sc := range scenarios.All {
		notes[sc.Name] = sc.Explain
	}
	for _, m := range scenarios.Mistakes {
		notes[m.Name] = m.Explain
	}
	for name, byStep := range notes {
		for step, note := range byStep {
			for _, l := range strings.Split(note, "\n") {
				if l == "" || strings.HasPrefix(l, " ") {
					continue
				}
				if !strings.HasSuffix(l, ".") && !strings.HasSuffix(l, ":") {
					t.Errorf("%s, step %q: a note's line does not end a sentence: %q", name, step, l)
				}
			}
		}
	}
}

// explainedText is the transcript --explain prints, from a recording.
func explainedText(rec *render.Recorder) string {
	var b bytes.Buffer
	text := render.Text(&b, render.Options{Explain: true})
	for _, r := range rec.Runs {
		render.Replay(r, text)
	}
	return b.String()
}

// checkWidth: every line of a transcript or a drawing fits 80 columns
// (render.Width), but a line the lesson itself prints wider, word for
// word (indented, in a diagram), and the lines of the lesson's own figure, which lost-response's
// note keeps whole (and says so).
func checkWidth(t *testing.T, text string) {
	t.Helper()
	own := map[string]bool{}
	for _, lines := range lessonLines {
		for _, l := range lines {
			own[l] = true
		}
	}
	for _, l := range strings.Split(scenarios.LostResponse.Explain["retry after a lost response"], "\n") {
		if strings.HasPrefix(l, " ") {
			own["  "+l] = true // a note's drawing is printed two columns in
		}
	}
	for _, l := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(l); n > render.Width && !own[l] && !own[strings.TrimLeft(l, " ")] {
			t.Errorf("a line is %d columns wide, more than %d: %q", n, render.Width, l)
		}
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no golden file: run go test ./scenarios -update and read %s", path)
	}
	if string(want) != got {
		t.Errorf("transcript differs from %s (rerun with go test ./scenarios -update if the change is intended):\n%s", path, diff(string(want), got))
	}
}

// TestEveryGoldenHasAScenario catches a golden file left behind by a
// renamed or removed scenario.
func TestEveryGoldenHasAScenario(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".golden")
		if _, ok := scenarios.Lookup(name); !ok {
			t.Errorf("%s has no scenario", f)
		}
	}
	if len(files) != len(scenarios.All) && !*update {
		t.Errorf("%d golden files for %d scenarios", len(files), len(scenarios.All))
	}
}

// diff shows the first differing lines with a little context.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}

// TestOneRecordingDrawsEverything: the transcript, the JSON lines, the
// diagram, the pictures and the page are all drawn from one recorded
// stream of events, so they cannot disagree: each is made here from the
// same recording of crash, and checked against the others.
func TestOneRecordingDrawsEverything(t *testing.T) {
	live, _, rec := run(t, scenarios.Crash)
	run := rec.Runs[0]

	if text := replayed(rec); text != live {
		t.Fatalf("the replayed transcript differs from the live one:\n%s", diff(live, text))
	}
	want, err := os.ReadFile(filepath.Join("../testdata/diagrams", "crash.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if got := drawn(rec); got != string(want) {
		t.Errorf("the diagram drawn from the recording differs from its golden file:\n%s", diff(string(want), got))
	}

	var js bytes.Buffer
	render.Replay(run, render.JSON(&js))
	var said, steps []string
	kinds := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(js.String()), "\n") {
		var e struct{ Scenario, Kind, Step, Text string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("a JSON line does not parse (%v): %s", err, l)
		}
		if e.Scenario != "crash" {
			t.Errorf("a JSON line names scenario %q: %s", e.Scenario, l)
		}
		kinds[e.Kind]++
		switch e.Kind {
		case "line", "response", "balances":
			said = append(said, e.Text)
		case "step":
			steps = append(steps, e.Step)
		}
	}
	// Every line of the transcript between its title and its invariants
	// is a line, response or balances event, in the same order.
	// (Compared unfolded: the JSON carries each line whole.)
	var whole bytes.Buffer
	render.Replay(run, render.Text(&whole, render.Options{Width: -1}))
	body := strings.SplitN(strings.SplitN(whole.String(), "\n\ninvariants:", 2)[0], "\n\n", 2)[1]
	if got := strings.Join(said, "\n"); got != body {
		t.Errorf("the JSON lines say another story than the transcript:\n%s", diff(body, got))
	}
	if kinds["scenario"] != 1 || kinds["verdict"] != 1 || kinds["message"] == 0 || kinds["state"] != 0 {
		t.Errorf("JSON kinds %v: want one scenario, one verdict, messages and no states", kinds)
	}

	views := render.Steps(run)
	if len(views) != len(steps) {
		t.Errorf("the page has %d steps, the JSON %d", len(views), len(steps))
	}
	var page bytes.Buffer
	if err := render.WriteHTML(&page, rec.Runs); err != nil {
		t.Fatal(err)
	}
	for i, v := range views {
		if i < len(steps) && v.Title != steps[i] {
			t.Errorf("step %d is %q on the page, %q in the JSON", i, v.Title, steps[i])
		}
		if v.Balances == "" {
			t.Errorf("step %q has no balances on the page", v.Title)
		}
		if svg := render.SVG(run, i); !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, html.EscapeString("» "+v.Title)) {
			t.Errorf("the picture of step %d does not draw its title %q", i, v.Title)
		}
		if !strings.Contains(page.String(), html.EscapeString(v.Title)) {
			t.Errorf("the page does not name step %q", v.Title)
		}
	}
}
