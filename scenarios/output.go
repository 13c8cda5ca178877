package scenarios

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/fatih/color"

	"github.com/zudojs/bank/bank"
)

// printerTarget is where a transcript goes.
type printerTarget = io.Writer

type response struct {
	Status   int             `json:"status"`
	Replayed bool            `json:"replayed"`
	Body     json.RawMessage `json:"body,omitempty"`
}

type printer interface {
	sideBySide(v MistakeVerdict)
	begin()
	step(title string, part bool)
	line(step, text string, r *response)
	balances(step, label string, s bank.Snapshot)
	message(step string, e Event) // an arrow of the sequence diagram
	state(step string, e Event)   // the bank and keys after a step (pictures only)
	verdict(v Verdict)
}

func newPrinter(w io.Writer, sc *Scenario, o Options) printer {
	if o.JSON {
		return &jsonPrinter{enc: json.NewEncoder(w), sc: sc}
	}
	p := &textPrinter{w: w, sc: sc, o: o, palette: newPalette(o.Color)}
	for _, pr := range o.Predictions {
		p.pending = append(p.pending, &pending{Prediction: pr})
	}
	return p
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
	sc      *Scenario
	o       Options
	palette
}

func (p *textPrinter) begin() {
	fmt.Fprintf(p.w, "%s\n\n", p.title.Sprintf("== %s: %s", p.sc.Name, p.sc.Summary))
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

func (p *textPrinter) line(_, text string, _ *response) {
	fmt.Fprintln(p.w, text)
	for _, l := range strings.Split(text, "\n") {
		p.mark(l)
	}
}

// mark says, under the line that answers a prediction, whether it was right.
func (p *textPrinter) mark(line string) {
	for _, pr := range p.pending {
		if pr.done || !strings.HasPrefix(line, pr.Q.Line) {
			continue
		}
		if pr.seen++; pr.seen <= pr.Q.Nth {
			continue
		}
		q := pr.Q
		q.Nth = 0
		got, err := q.read(line)
		if err != nil {
			continue
		}
		pr.done, pr.right = true, got == pr.Chosen
		if pr.right {
			fmt.Fprintf(p.w, "%s\n", p.good.Sprintf("   ↳ you predicted %q: right", pr.Chosen))
		} else {
			fmt.Fprintf(p.w, "%s\n", p.bad.Sprintf("   ↳ you predicted %q; the lab printed %q. %s", pr.Chosen, got, q.Why))
		}
	}
}

// The transcript shows what each side printed; arrows are for pictures.
func (p *textPrinter) message(string, Event) {}
func (p *textPrinter) state(string, Event)   {}

func (p *textPrinter) balances(_, label string, s bank.Snapshot) {
	if label != "" {
		label += " "
	}
	fmt.Fprintln(p.w, label+s.Line())
}

func (p *textPrinter) verdict(v Verdict) {
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

func (p *textPrinter) sideBySide(v MistakeVerdict) {
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

func (p *textPrinter) verdictLine(v Verdict) string {
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

func broken(v Verdict) int {
	n := 0
	for _, r := range v.Results {
		if !r.Holds {
			n++
		}
	}
	return n
}

type jsonPrinter struct {
	enc *json.Encoder
	sc  *Scenario
}

type event struct {
	Scenario   string           `json:"scenario"`
	Type       string           `json:"type"`
	Step       string           `json:"step,omitempty"`
	Text       string           `json:"text,omitempty"`
	Response   *response        `json:"response,omitempty"`
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

type jsonCheck struct {
	Check    string `json:"check"`
	Holds    bool   `json:"holds"`
	Expected bool   `json:"expectedToHold"`
	Detail   string `json:"detail,omitempty"`
}

func (p *jsonPrinter) emit(e event) {
	e.Scenario = p.sc.Name
	_ = p.enc.Encode(e)
}

func (p *jsonPrinter) sideBySide(v MistakeVerdict) {
	r := v.Reproduced()
	p.emit(event{Type: "mistake", Text: v.Mistake, Reproduced: &r})
}

func (p *jsonPrinter) begin() { p.emit(event{Type: "scenario", Text: p.sc.Summary}) }

func (p *jsonPrinter) step(title string, _ bool) { p.emit(event{Type: "step", Step: title}) }

func (p *jsonPrinter) line(step, text string, r *response) {
	t := "line"
	if r != nil {
		t = "response"
		if !json.Valid(r.Body) {
			r.Body = nil
		}
	}
	p.emit(event{Type: t, Step: step, Text: text, Response: r})
}

func (p *jsonPrinter) balances(step, label string, s bank.Snapshot) {
	m := map[string]int64{}
	for i, h := range s.Holders {
		m[h] = s.Balances[i]
	}
	total, n := s.Total, s.Transfers
	text := strings.TrimSpace(label + " " + s.Line())
	p.emit(event{Type: "balances", Step: step, Text: text, Balances: m, TotalKobo: &total, Transfers: &n})
}

func (p *jsonPrinter) message(step string, e Event) {
	p.emit(event{Type: "message", Step: step, Text: e.Text, From: e.From, To: e.To, Mark: e.Mark, Clock: e.Clock})
}

func (p *jsonPrinter) state(string, Event) {}

func (p *jsonPrinter) verdict(v Verdict) {
	var checks []jsonCheck
	for _, r := range v.Results {
		checks = append(checks, jsonCheck{r.Name, r.Holds, r.Expected, r.Detail})
	}
	reproduced := v.Reproduced
	p.emit(event{Type: "verdict", Reproduced: &reproduced, Checks: checks})
}
