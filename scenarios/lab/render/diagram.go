package render

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fatih/color"
	"github.com/zudojs/bank/scenarios/lab"
)

// Recording is one run's events, as a Recorder kept them.
type Recording struct {
	Scenario *lab.Scenario
	Events   []lab.Event // from the scenario event to the verdict
	Verdict  lab.Verdict
}

// Recorder is a sink that keeps every run it hears, one Recording each
// (a mistake's halves are two runs).
type Recorder struct{ Runs []*Recording }

func (r *Recorder) Event(e lab.Event) {
	switch {
	case e.Kind == "scenario":
		r.Runs = append(r.Runs, &Recording{Scenario: e.Scenario})
	case e.Kind == "mistake" || len(r.Runs) == 0:
		return // the runs' own verdicts are in the runs
	case e.Kind == "verdict":
		r.Last().Verdict = *e.Verdict
	}
	r.Last().Events = append(r.Last().Events, e)
}

// Last is the run heard last.
func (r *Recorder) Last() *Recording { return r.Runs[len(r.Runs)-1] }

// Replay feeds a recorded run's events to a sink, as the run did.
func Replay(rec *Recording, to lab.Sink) {
	for _, e := range rec.Events {
		to.Event(e)
	}
}

// Diagram geometry: the whole drawing fits in its width (Width, unless
// asked otherwise), the clock in its first columns.
const clockWidth = 7 // "  31 s "

// lanes are the actors of a run, in the order a reader expects them: the
// app first, the servers as they appear, PostgreSQL last.
func lanes(rec *Recording) []string {
	var names []string
	hasDB := false
	for _, e := range rec.Events {
		if e.Kind != "message" {
			continue
		}
		for _, a := range []string{e.From, e.To} {
			switch {
			case a == lab.ActorDB:
				hasDB = true
			case !slices.Contains(names, a):
				names = append(names, a)
			}
		}
	}
	if i := slices.Index(names, lab.ActorApp); i > 0 {
		names = append([]string{lab.ActorApp}, slices.Delete(names, i, i+1)...)
	}
	if hasDB {
		names = append(names, lab.ActorDB)
	}
	return names
}

// clocked says whether the story moved the simulated clock.
func clocked(rec *Recording) bool {
	for _, e := range rec.Events {
		if e.Kind == "message" && e.Clock != "0 s" {
			return true
		}
	}
	return false
}

// canvas is one row of the drawing, as runes.
type canvas []rune

func newRow(width int) canvas {
	c := make(canvas, width)
	for i := range c {
		c[i] = ' '
	}
	return c
}

func (c canvas) put(x int, s string) {
	for _, r := range s {
		if x >= 0 && x < len(c) {
			c[x] = r
		}
		x++
	}
}

func (c canvas) String() string { return strings.TrimRight(string(c), " ") }

// markTag is how a diagram names what an answer was.
var markTag = map[string]string{
	"lost": "[LOST]", "replayed": "[REPLAY]", "takeover": "[TAKEOVER]", "fenced": "[FENCED]", "error": "[ERROR]",
}

func (p palette) forMark(mark string) *color.Color {
	switch mark {
	case "lost", "fenced", "error":
		return p.bad
	case "takeover", "in-progress", "refused":
		return p.expected
	case "replayed":
		return p.good
	}
	return p.dim
}

// DrawDiagram draws a recorded run as --diagram does, with colour if on,
// in width columns (Width when width is 0).
func DrawDiagram(w io.Writer, rec *Recording, on bool, width int) {
	drawDiagram(w, rec, newPalette(on), columns(width))
}

// drawDiagram draws a run as a sequence diagram: one lane per actor, time
// going down, the simulated clock at the left, and the transcript's own
// lines and balances where the transcript prints them.
//
// It is long because it draws every kind of event in one pass, so that the
// lanes and the clock stay in step.
func drawDiagram(w io.Writer, rec *Recording, p palette, diagramWidth int) {
	names := lanes(rec)
	if len(names) == 0 {
		for _, l := range wrap("(one program and its database, one statement after another: no messages between actors to draw; its lines follow)", diagramWidth) {
			fmt.Fprintln(w, p.dim.Sprint(l))
		}
	}
	span := (diagramWidth - clockWidth) / max(1, len(names))
	x := make(map[string]int, len(names))
	for i, n := range names {
		x[n] = clockWidth + span*i + span/2
	}
	bars := func() canvas {
		c := newRow(diagramWidth)
		for _, n := range names {
			c[x[n]] = '│'
		}
		return c
	}
	if len(names) > 0 {
		head := newRow(diagramWidth)
		for _, n := range names {
			label := shortText(n, span-1)
			head.put(x[n]-len([]rune(label))/2, label)
		}
		fmt.Fprintln(w, p.title.Sprint(head.String()))
		fmt.Fprintln(w, bars().String())
	}
	showClock, lastClock := clocked(rec), ""
	wideSaid := false
	events := rec.Events
	for i := 0; i < len(events); i++ {
		e := events[i]
		switch e.Kind {
		case "step":
			for _, l := range fold("» "+e.Text, diagramWidth-clockWidth, "  ") {
				fmt.Fprintln(w, p.title.Sprint(strings.Repeat(" ", clockWidth)+l))
			}
		case "line", "response":
			// As the transcript folds them: spacing kept (a table keeps
			// its columns), a continuation indented under its line; a
			// line the lesson itself prints is kept whole, as there.
			if e.Verbatim {
				for _, l := range strings.Split(e.Text, "\n") {
					l = strings.Repeat(" ", clockWidth) + "  " + l
					if n := utf8.RuneCountInString(l); n > diagramWidth && !wideSaid {
						wideSaid = true // said once, as the transcript says it
						fmt.Fprintln(w, p.dim.Sprint(strings.Repeat(" ", clockWidth)+fmt.Sprintf("(next: the lesson's own, word for word, kept whole: %d columns)", n)))
					}
					fmt.Fprintln(w, p.dim.Sprint(l))
				}
				continue
			}
			for _, para := range strings.Split(e.Text, "\n") {
				indent := para[:len(para)-len(strings.TrimLeft(para, " "))]
				for _, l := range fold(para, diagramWidth-clockWidth-2, indent+"  ") {
					fmt.Fprintln(w, p.dim.Sprint(strings.Repeat(" ", clockWidth)+"  "+l))
				}
			}
		case "balances":
			for _, l := range fold("═ "+e.Text, diagramWidth-clockWidth, "  ") {
				fmt.Fprintln(w, strings.Repeat(" ", clockWidth)+l)
			}
		case "message":
			n := 1 // identical arrows in a row are drawn once, counted
			for i+n < len(events) && sameArrow(events[i+n], e) {
				n++
			}
			i += n - 1
			clock := ""
			if showClock && e.Clock != lastClock {
				clock, lastClock = e.Clock, e.Clock
			}
			labels, arrow := drawArrow(e, n, x[e.From], x[e.To], bars, diagramWidth)
			for _, label := range labels {
				fmt.Fprintln(w, label.String())
			}
			line := arrow.String()
			if clock != "" {
				line = fmt.Sprintf("%*s", clockWidth-1, clock) + line[clockWidth-1:]
			}
			fmt.Fprintln(w, colourArrow(line, e.Mark, p))
		}
	}
	if len(names) > 0 {
		fmt.Fprintln(w, bars().String())
	}
}

// wrap breaks text into lines of at most n runes, at spaces where it can.
func wrap(text string, n int) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			for len([]rune(word)) > n { // a word longer than a line: cut it
				if line != "" {
					out, line = append(out, line), ""
				}
				out, word = append(out, string([]rune(word)[:n])), string([]rune(word)[n:])
			}
			switch {
			case line == "":
				line = word
			case len([]rune(line))+1+len([]rune(word)) <= n:
				line += " " + word
			default:
				out, line = append(out, line), word
			}
		}
		out = append(out, line)
	}
	return out
}

func sameArrow(a, b lab.Event) bool {
	return a.Kind == "message" && a.From == b.From && a.To == b.To && a.Text == b.Text && a.Mark == b.Mark && a.Clock == b.Clock
}

// maxLabelRows is how many rows a long label may take, folded beside its
// arrow, before it is moved left instead (over the lanes to its left).
const maxLabelRows = 3

// drawArrow makes the rows of one message: its label (folded over a few
// rows when it is too long for the room right of its arrow's start, so
// that it never covers the lane it leaves from), then the arrow between
// the lanes (broken half-way when the answer was lost).
func drawArrow(e lab.Event, n, from, to int, bars func() canvas, diagramWidth int) ([]canvas, canvas) {
	text := e.Text
	if tag := markTag[e.Mark]; tag != "" {
		text = tag + " " + text
	}
	if n > 1 {
		text += fmt.Sprintf(" ×%d", n)
	}
	arrow := bars()
	left, right := min(from, to), max(from, to)
	start := left + 2
	rows := []string{text}
	if room := diagramWidth - start; len([]rune(text)) > room {
		rows = fold(text, room, "")
		if len(rows) > maxLabelRows || slices.ContainsFunc(rows, func(r string) bool { return len([]rune(r)) > room }) {
			rows = []string{text}
			start = max(clockWidth, diagramWidth-len([]rune(text)))
		}
	}
	labels := make([]canvas, len(rows))
	for i, r := range rows {
		labels[i] = bars()
		r = shortText(r, diagramWidth-start)
		labels[i].put(start, r)
		// A label that ends just before a lifeline would touch it
		// ("timeout)│"): the lifeline gives way for that row instead.
		if end := start + len([]rune(r)); end < len(labels[i]) && labels[i][end] == '│' {
			labels[i][end] = ' '
		}
	}
	for c := left + 1; c < right; c++ {
		arrow[c] = '─'
	}
	if e.Mark == "lost" {
		mid := (left + right) / 2
		for c := left + 1; c < right; c++ {
			if (to > from && c > mid) || (to < from && c < mid) {
				arrow[c] = ' '
			} else if (c-left)%2 == 0 {
				arrow[c] = ' '
			}
		}
		arrow[mid] = '✕'
		return labels, arrow
	}
	if to > from {
		arrow[to-1] = '▶'
	} else {
		arrow[to+1] = '◀'
	}
	return labels, arrow
}

func colourArrow(line, mark string, p palette) string {
	if mark == "" {
		return line
	}
	return p.forMark(mark).Sprint(line)
}

// shortText trims a label to n runes, with an ellipsis.
func shortText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}
