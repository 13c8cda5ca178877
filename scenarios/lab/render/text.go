package render

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fatih/color"

	"github.com/zudojs/bank/scenarios/lab"
)

// Package render draws a run from its events (lab.Event), and from
// nothing else: the transcript, JSON lines, the sequence diagram, and the
// pictures of a page (SVG, HTML). Each is a lab.Sink, fed live while the
// run happens, or afterwards from a Recording (Replay): the same events
// give the same drawing either way.

// Width is the columns a transcript and a diagram fit by default: a
// terminal's, and a projector's at a size the back row can read.
const Width = 80

// columns is a width asked for: Width for 0, no limit below 0.
func columns(n int) int {
	switch {
	case n == 0:
		return Width
	case n < 0:
		return 1 << 30
	}
	return n
}

// Options choose how a transcript is shown.
type Options struct {
	Explain bool // print the story's About under its title, and each step's note before it
	Color   bool
	// Width is the columns every line fits: Width when 0, no limit when
	// below 0 (as the quiz reads a run). Lines are broken at spaces, never
	// inside a word, an amount or a key; a line the lesson itself prints
	// (lab.Lab.SayVerbatim) is never broken.
	Width int
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
func Diagram(w io.Writer, color bool, width int) lab.Sink {
	return &textPrinter{w: w, o: Options{Width: width}, palette: newPalette(color), diagram: &Recorder{}}
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
	// wideSaid: this story has said that a line wider than the width is
	// the lesson's own, kept whole (once per story).
	wideSaid bool
}

func (p *textPrinter) Event(e lab.Event) {
	if p.diagram != nil {
		p.diagram.Event(e)
	}
	switch e.Kind {
	case "scenario":
		p.sc, p.wideSaid = e.Scenario, false
		p.print(fmt.Sprintf("== %s: %s", p.sc.Name, p.sc.Summary), "   ", p.title)
		if p.o.Explain && p.sc.About != "" {
			for _, l := range strings.Split(strings.TrimRight(p.sc.About, "\n"), "\n") {
				p.print("   "+l, "     ", p.dim)
			}
		}
		fmt.Fprintln(p.w)
	case "verdict":
		if p.diagram != nil {
			drawDiagram(p.w, p.diagram.Last(), p.palette, columns(p.o.Width))
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
		p.line(e.Text, e.Verbatim)
	case "balances":
		p.print(e.Text, "  ", nil)
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
			p.print("» "+title, "  ", p.title)
		}
		return
	}
	p.print("» "+title, "  ", p.title)
	if note := p.sc.Explain[title]; note != "" {
		lines := strings.Split(strings.TrimRight(note, "\n"), "\n")
		widest := 0
		for _, l := range lines {
			if strings.HasPrefix(l, " ") {
				widest = max(widest, utf8.RuneCountInString("  "+l))
			}
		}
		for i, l := range lines {
			if l == "" { // a blank line stays blank, with no indent
				fmt.Fprintln(p.w)
				continue
			}
			if strings.HasPrefix(l, " ") { // a drawing: as it is
				if i == 0 || !strings.HasPrefix(lines[i-1], " ") {
					p.sayWide(widest, "  (the lesson's figure, kept whole: %d columns)")
				}
				fmt.Fprintln(p.w, p.dim.Sprint("  "+l))
				continue
			}
			p.print("  "+l, "  ", p.dim)
		}
	}
}

// sayWide says, once in a story, before the first line of the lesson's
// own that is wider than the width (wide columns), that it is the
// lesson's, kept whole, as what (with %d for wide) says.
func (p *textPrinter) sayWide(wide int, what string) {
	if p.wideSaid || wide <= columns(p.o.Width) {
		return
	}
	p.wideSaid = true
	p.print(fmt.Sprintf(what, wide), "  ", p.dim)
}

func (p *textPrinter) line(text string, verbatim bool) {
	for _, l := range strings.Split(text, "\n") {
		if verbatim {
			p.sayWide(utf8.RuneCountInString(l), "(the next line is the lesson's own, word for word, kept whole: %d columns)")
			fmt.Fprintln(p.w, l)
		} else {
			indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
			p.print(l, indent+"  ", nil)
		}
		p.mark(l)
	}
}

// print prints s folded to the width, its continuation lines starting
// with cont; in colour c, if not nil.
func (p *textPrinter) print(s, cont string, c *color.Color) {
	for _, l := range fold(s, columns(p.o.Width), cont) {
		if c != nil {
			l = c.Sprint(l)
		}
		fmt.Fprintln(p.w, l)
	}
}

// printHead prints s folded, as print does, with its first len(head)
// bytes (which must be head) in colour c.
func (p *textPrinter) printHead(head string, c *color.Color, s, cont string) {
	for i, l := range fold(s, columns(p.o.Width), cont) {
		if i == 0 && strings.HasPrefix(l, head) {
			l = c.Sprint(head) + l[len(head):]
		}
		fmt.Fprintln(p.w, l)
	}
}

// Fold breaks s at spaces into lines of at most width runes (Width when
// 0), every line after the first starting with cont, as a transcript's
// lines are: for the tables that list the stories.
func Fold(s string, width int, cont string) []string { return fold(s, columns(width), cont) }

// fold breaks s at spaces into lines of at most width runes, every line
// after the first starting with cont. A word is never cut: one longer
// than a line stands on a line of its own.
func fold(s string, width int, cont string) []string {
	var out []string
	for first := true; ; first = false {
		r := []rune(s)
		if len(r) <= width {
			return append(out, s)
		}
		// The last space at or before the width, past the indentation:
		// the line breaks there (its spacing before it kept as it is).
		lead := len(r) - len([]rune(strings.TrimLeft(s, " ")))
		cut := -1
		for i := width; i > lead; i-- {
			if r[i] == ' ' && !unitAfter(r, i) {
				cut = i
				break
			}
		}
		if cut < 0 { // a word longer than the line: it stands alone
			cut = strings.IndexByte(string(r[lead:]), ' ')
			if cut < 0 {
				return append(out, s)
			}
			cut = len([]rune(string(r[lead:])[:cut])) + lead
		}
		out = append(out, strings.TrimRight(string(r[:cut]), " "))
		rest := strings.TrimLeft(string(r[cut:]), " ")
		if rest == "" {
			return out
		}
		s = cont + rest
		if !first && utf8.RuneCountInString(cont) >= width {
			return append(out, s) // no room past the indentation
		}
	}
}

// unitAfter says whether the space at i sits between a number and its
// unit ("30 s", "24 h", "3 days"), or between a thing and its number
// ("transfer 1", "attempt 2"), which a line must not part.
func unitAfter(r []rune, i int) bool {
	if i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9' {
		before := string(r[:i])
		for _, w := range []string{"transfer", "attempt", "id", "message", "order", "case", "worker"} {
			if strings.HasSuffix(before, " "+w) || before == w {
				return true
			}
		}
	}
	if i == 0 || r[i-1] < '0' || r[i-1] > '9' {
		return false
	}
	word := r[i+1:]
	if j := strings.IndexFunc(string(word), func(c rune) bool { return !unicode.IsLetter(c) }); j >= 0 {
		word = []rune(string(word)[:j])
	}
	switch string(word) {
	case "s", "ms", "h", "days":
		return true
	}
	return false
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
			p.print(fmt.Sprintf("   ↳ you predicted %q: right", pr.Chosen), "     ", p.good)
		} else {
			p.print(fmt.Sprintf("   ↳ you predicted %q; the lab printed %q. %s", pr.Chosen, got, pr.Why), "     ", p.bad)
		}
	}
}
