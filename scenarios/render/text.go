package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/fatih/color"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/scenarios/lab"
)

// Package render draws a run from its events (lab.Event), and from
// nothing else: the transcript, JSON lines, the sequence diagram, and the
// pictures of a page (SVG, HTML). Each is a lab.Sink, fed live while the
// run happens, or afterwards from a Recording (Replay): the same events
// give the same drawing either way.

// Options choose how a transcript is shown.
type Options struct {
	Explain bool // print each step's note before it
	Color   bool
	// Pause, if set, waits for the learner before each step (--step); it
	// is told the step that comes next.
	Pause func(next string)
	// Predictions are the learner's answers to questions about the run
	// (--predict): each is marked under the line that answers it.
	Predictions []Prediction
}

// Prediction is a learner's answer to a question, before the run.
type Prediction struct {
	Line   string // the line that answers it starts with this
	Nth    int    // which such line (0 for the first)
	Chosen string // the learner's answer
	Why    string // said when the answer was wrong
	// Read is what a line that answers the question says, among the
	// question's options.
	Read func(line string) (string, error)
}

// Text is a sink that prints the transcript: each step's title when it is
// a part (all of them with Explain), every line and balance as it comes,
// then the invariants and the verdict.
func Text(w io.Writer, o Options) lab.Sink {
	p := &textPrinter{w: w, o: o, palette: newPalette(o.Color)}
	for _, pr := range o.Predictions {
		p.pending = append(p.pending, &pending{Prediction: pr})
	}
	return p
}

// Diagram is a sink that draws each run as a sequence diagram once it is
// over, in place of its transcript's lines; its title, invariants and
// verdict are printed as Text prints them.
func Diagram(w io.Writer, color bool) lab.Sink {
	return &textPrinter{w: w, palette: newPalette(color), diagram: &Recorder{}}
}

// pending is a prediction waiting for its line.
type pending struct {
	Prediction
	seen        int // lines with the question's prefix so far
	done, right bool
}

// palette holds colours decided for one writer (fatih/color's global
// switch looks at os.Stdout, which is wrong for any other writer).
type palette struct{ title, dim, good, bad, expected *color.Color }

func newPalette(on bool) palette {
	p := palette{
		title:    color.New(color.Bold),
		dim:      color.New(color.Faint),
		good:     color.New(color.FgGreen, color.Bold),
		bad:      color.New(color.FgRed, color.Bold),
		expected: color.New(color.FgYellow, color.Bold),
	}
	for _, c := range []*color.Color{p.title, p.dim, p.good, p.bad, p.expected} {
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
	}
	return p
}

type textPrinter struct {
	pending []*pending
	w       io.Writer
	sc      *lab.Scenario
	o       Options
	palette
	diagram *Recorder // the run so far, to be drawn at its end (Diagram)
}

func (p *textPrinter) Event(e lab.Event) {
	if p.diagram != nil {
		p.diagram.Event(e)
	}
	switch e.Kind {
	case "scenario":
		p.sc = e.Scenario
		fmt.Fprintf(p.w, "%s\n\n", p.title.Sprintf("== %s: %s", p.sc.Name, p.sc.Summary))
	case "verdict":
		if p.diagram != nil {
			drawDiagram(p.w, p.diagram.Last(), p.palette)
		}
		p.verdict(*e.Verdict)
	case "mistake":
		p.sideBySide(*e.Mistake)
	}
	if p.diagram != nil {
		return // the diagram replaces the run's lines
	}
	switch e.Kind {
	case "step":
		p.step(e.Text, e.Part)
	case "line", "response":
		p.line(e.Text)
	case "balances":
		fmt.Fprintln(p.w, e.Text)
	}
	// The transcript shows what each side printed; arrows and states are
	// for the pictures.
}

func (p *textPrinter) step(title string, part bool) {
	if p.o.Pause != nil {
		p.o.Pause(title)
	}
	if !p.o.Explain {
		// A lesson in parts names each part, so that a reader can tell,
		// say, the broken way from the safe one.
		if part {
			fmt.Fprintf(p.w, "%s\n", p.title.Sprint("» "+title))
		}
		return
	}
	fmt.Fprintf(p.w, "%s\n", p.title.Sprint("» "+title))
	if note := p.sc.Explain[title]; note != "" {
		for _, l := range strings.Split(strings.TrimRight(note, "\n"), "\n") {
			fmt.Fprintf(p.w, "%s\n", p.dim.Sprint("  "+l))
		}
	}
}

func (p *textPrinter) line(text string) {
	fmt.Fprintln(p.w, text)
	for _, l := range strings.Split(text, "\n") {
		p.mark(l)
	}
}

// mark says, under the line that answers a prediction, whether it was right.
func (p *textPrinter) mark(line string) {
	for _, pr := range p.pending {
		if pr.done || !strings.HasPrefix(line, pr.Line) {
			continue
		}
		if pr.seen++; pr.seen <= pr.Nth {
			continue
		}
		got, err := pr.Read(line)
		if err != nil {
			continue
		}
		pr.done, pr.right = true, got == pr.Chosen
		if pr.right {
			fmt.Fprintf(p.w, "%s\n", p.good.Sprintf("   ↳ you predicted %q: right", pr.Chosen))
		} else {
			fmt.Fprintf(p.w, "%s\n", p.bad.Sprintf("   ↳ you predicted %q; the lab printed %q. %s", pr.Chosen, got, pr.Why))
		}
	}
}

func (p *textPrinter) verdict(v lab.Verdict) {
	fmt.Fprintln(p.w)
	fmt.Fprintln(p.w, "invariants:")
	for _, r := range v.Results {
		mark := p.good.Sprint("holds ")
		if !r.Holds {
			mark = p.bad.Sprint("BROKEN")
		}
		name := r.Name
		line := fmt.Sprintf("  %s  %s%s", mark, name, strings.Repeat(" ", max(0, 30-utf8.RuneCountInString(name))))
		if r.Detail != "" {
			line += "  " + r.Detail
		}
		if blind := p.sc.Blind[r.Check]; r.Holds && blind != "" && v.ShowsBreak {
			line += "  " + p.dim.Sprint("(blind to this failure: "+blind+")")
		}
		fmt.Fprintln(p.w, strings.TrimRight(line, " "))
	}
	fmt.Fprintln(p.w, p.verdictLine(v))
	if len(p.pending) > 0 {
		right := 0
		for _, pr := range p.pending {
			if pr.right {
				right++
			}
		}
		fmt.Fprintf(p.w, "your predictions: %d of %d right\n", right, len(p.pending))
	}
	fmt.Fprintln(p.w)
}

func (p *textPrinter) sideBySide(v lab.MistakeVerdict) {
	fmt.Fprintf(p.w, "%s\n", p.title.Sprintf("side by side: %s", v.Mistake))
	fmt.Fprintf(p.w, "  %-30s  %-7s %s\n", "", "broken", "fixed")
	for i, r := range v.Broken.Results {
		mark := func(holds bool) string {
			if holds {
				return p.good.Sprint("holds ")
			}
			return p.bad.Sprint("BROKEN")
		}
		name := r.Name
		line := fmt.Sprintf("  %s%s  %s  %s", name, strings.Repeat(" ", max(0, 30-utf8.RuneCountInString(name))), mark(r.Holds), mark(v.Fixed.Results[i].Holds))
		fmt.Fprintln(p.w, strings.TrimRight(line, " "))
	}
	if v.Reproduced() {
		fmt.Fprintln(p.w, p.expected.Sprint("mistake reproduced")+": the broken version did the damage the lesson describes, and the fix held")
	} else {
		fmt.Fprintln(p.w, p.bad.Sprint("mistake NOT reproduced")+": see the verdicts above")
	}
	fmt.Fprintln(p.w)
}

func (p *textPrinter) verdictLine(v lab.Verdict) string {
	switch {
	case !v.Reproduced:
		return p.bad.Sprint("verdict: NOT reproduced: ") + strings.Join(v.Differences(), "; ")
	case v.ShowsBreak:
		what := "the break above is"
		if broken(v) > 1 {
			what = "the breaks above are"
		}
		line := p.expected.Sprint("verdict: failure reproduced") + " - " + what + " the failure this lesson demonstrates"
		if p.sc.Fix != "" {
			line += "; the fix: " + p.sc.Fix
		}
		return line
	default:
		line := p.good.Sprint("verdict: fix held") + " - every invariant held, as the lesson teaches"
		if p.sc.Prevents != "" {
			line += "; it prevents " + p.sc.Prevents
		}
		return line
	}
}

func broken(v lab.Verdict) int {
	n := 0
	for _, r := range v.Results {
		if !r.Holds {
			n++
		}
	}
	return n
}

// JSON is a sink that prints one JSON object per line for each event of
// the transcript, the diagram's messages, each verdict and each mistake's
// side by side (the states, drawn only in pictures, are left out).
func JSON(w io.Writer) lab.Sink { return &jsonPrinter{enc: json.NewEncoder(w)} }

type jsonPrinter struct {
	enc      *json.Encoder
	scenario string
}

// jsonEvent is an event as --json prints it: Kind as lab.Event has it.
type jsonEvent struct {
	Scenario   string           `json:"scenario"`
	Kind       string           `json:"kind"`
	Step       string           `json:"step,omitempty"`
	Text       string           `json:"text,omitempty"`
	Response   *jsonResponse    `json:"response,omitempty"`
	Balances   map[string]int64 `json:"balancesKobo,omitempty"`
	TotalKobo  *int64           `json:"totalKobo,omitempty"`
	Transfers  *int             `json:"transfers,omitempty"`
	Reproduced *bool            `json:"reproduced,omitempty"`
	Checks     []jsonCheck      `json:"checks,omitempty"`
	From       string           `json:"from,omitempty"`
	To         string           `json:"to,omitempty"`
	Mark       string           `json:"mark,omitempty"`
	Clock      string           `json:"clock,omitempty"`
}

type jsonResponse struct {
	Status   int             `json:"status"`
	Replayed bool            `json:"replayed"`
	Body     json.RawMessage `json:"body,omitempty"`
}

type jsonCheck struct {
	Check    string `json:"check"`
	Holds    bool   `json:"holds"`
	Expected bool   `json:"expectedToHold"`
	Detail   string `json:"detail,omitempty"`
}

func (p *jsonPrinter) Event(e lab.Event) {
	if e.Scenario != nil {
		p.scenario = e.Scenario.Name
	}
	out := jsonEvent{Scenario: p.scenario, Kind: e.Kind, Step: e.Step, Text: e.Text}
	switch e.Kind {
	case "state":
		return
	case "scenario":
		out.Text = e.Scenario.Summary
	case "step":
		out.Text = ""
	case "response":
		r := e.Response
		out.Response = &jsonResponse{Status: r.Status, Replayed: r.Replayed}
		if json.Valid(r.Body) {
			out.Response.Body = r.Body
		}
	case "balances":
		out.Balances, out.TotalKobo, out.Transfers = kobo(*e.Balances)
	case "message":
		out.From, out.To, out.Mark, out.Clock = e.From, e.To, e.Mark, e.Clock
	case "verdict":
		out.Step = ""
		reproduced := e.Verdict.Reproduced
		out.Reproduced = &reproduced
		for _, r := range e.Verdict.Results {
			out.Checks = append(out.Checks, jsonCheck{r.Name, r.Holds, r.Expected, r.Detail})
		}
	case "mistake":
		out.Step, out.Text = "", e.Mistake.Mistake
		r := e.Mistake.Reproduced()
		out.Reproduced = &r
	}
	_ = p.enc.Encode(out)
}

func kobo(s bank.Snapshot) (map[string]int64, *int64, *int) {
	m := map[string]int64{}
	for i, h := range s.Holders {
		m[h] = s.Balances[i]
	}
	total, n := s.Total, s.Transfers
	return m, &total, &n
}
