package render

import (
	"fmt"
	"html"
	"strings"

	"github.com/zudojs/bank/scenarios/lab"
)

// StepView is one step of a recorded run, as a page shows it: its title,
// the note --explain prints, the lines it printed, and the bank and its
// keys at its end.
type StepView struct {
	Title    string       `json:"title"`
	Note     string       `json:"note,omitempty"`
	Drawing  string       `json:"drawing,omitempty"` // the note's drawing, if any: monospace text
	Lines    []string     `json:"lines"`
	Balances string       `json:"balances"`
	Keys     []lab.KeyRow `json:"keys"`
	upto     int          // events[:upto] are the run up to this step's end
}

// Steps cuts a recording into its steps. Lines printed before the first
// step form a step of their own, titled "start".
func Steps(rec *Recording) []StepView {
	var steps []StepView
	cur := func() *StepView {
		if len(steps) == 0 {
			steps = append(steps, StepView{Title: "start"})
		}
		return &steps[len(steps)-1]
	}
	for i, e := range rec.Events {
		switch e.Kind {
		case "step":
			if len(steps) == 1 && len(steps[0].Lines) == 0 && steps[0].Title == "start" && steps[0].Balances == "" {
				steps = steps[:0]
			}
			note, drawing := splitNote(rec.Scenario.Explain[e.Text])
			steps = append(steps, StepView{Title: e.Text, Note: note, Drawing: drawing})
		case "line", "response":
			cur().Lines = append(cur().Lines, e.Text)
		case "balances":
			cur().Lines = append(cur().Lines, e.Text)
		case "state":
			if e.Balances != nil {
				cur().Balances = e.Balances.Line()
			}
			cur().Keys = e.Keys
		}
		cur().upto = i + 1
	}
	return steps
}

// splitNote parts a step's note into its prose and its drawing (the
// lesson's own sequence diagram for lost-response): the paragraphs whose
// every line is indented, which only line up in a monospace font.
func splitNote(note string) (prose, drawing string) {
	var p, d []string
	for _, para := range strings.Split(note, "\n\n") {
		drawn := true
		for _, l := range strings.Split(para, "\n") {
			drawn = drawn && strings.HasPrefix(l, " ")
		}
		if drawn {
			d = append(d, para)
		} else {
			p = append(p, para)
		}
	}
	return strings.Join(p, "\n\n"), strings.Join(d, "\n\n")
}

// SVG geometry.
const (
	svgRow    = 22
	svgClockW = 60
	svgLaneW  = 190
	svgFont   = 13
	svgMinW   = 700 // room for the balances line on one row, however few lanes
	svgCharW  = 9   // a wide character at svgFont, bold: lines wrap to fit
	// svgZoom is the size the picture asks for, in percent of its drawing:
	// large enough to read from the back of a classroom; the page's CSS
	// (max-width: 100%) shrinks it to fit a narrow window.
	svgZoom = 140
)

// SVG draws the run up to the end of step n (all of it when n is past
// the last step), the same drawing as --diagram: lanes, arrows, the clock,
// the lines and the balances.
//
// It is long because it draws every kind of event, as drawDiagram does,
// in one pass.
func SVG(rec *Recording, n int) string {
	steps := Steps(rec)
	events := rec.Events
	if n < len(steps) {
		events = events[:steps[n].upto]
	}
	names := lanes(rec)
	x := map[string]int{}
	for i, a := range names {
		x[a] = svgClockW + svgLaneW*i + svgLaneW/2
	}
	width := max(svgMinW, svgClockW+svgLaneW*max(1, len(names))+20)
	var body strings.Builder
	y := 40
	text := func(class string, tx, ty int, anchor, s string) {
		fmt.Fprintf(&body, `<text class="%s" x="%d" y="%d" text-anchor="%s">%s</text>`+"\n", class, tx, ty, anchor, html.EscapeString(s))
	}
	showClock, lastClock := clocked(rec), ""
	charsPerLine := (width - svgClockW - 8) / svgCharW
	for i := 0; i < len(events); i++ {
		e := events[i]
		switch e.Kind {
		case "step":
			y += svgRow
			text("step", svgClockW, y, "start", "» "+e.Text)
		case "line", "response", "balances":
			class := "note"
			if e.Kind == "balances" {
				class = "balances"
			}
			for _, l := range wrap(e.Text, charsPerLine) {
				y += svgRow
				text(class, svgClockW, y, "start", l)
			}
		case "message":
			count := 1
			for i+count < len(events) && sameArrow(events[i+count], e) {
				count++
			}
			i += count - 1
			label := e.Text
			if tag := markTag[e.Mark]; tag != "" {
				label = tag + " " + label
			}
			if count > 1 {
				label += fmt.Sprintf(" ×%d", count)
			}
			from, to := x[e.From], x[e.To]
			y += svgRow
			lx, anchor := min(from, to)+8, "start"
			if lx+len([]rune(label))*svgFont*6/10 > width-8 { // would run off the right edge
				lx, anchor = width-8, "end"
			}
			text("label "+e.Mark, lx, y, anchor, label)
			y += svgRow / 2
			if showClock && e.Clock != lastClock {
				lastClock = e.Clock
				text("clock", svgClockW-8, y+4, "end", e.Clock)
			}
			class := "arrow"
			if e.Mark != "" {
				class += " " + e.Mark
			}
			end := to
			if e.Mark == "lost" {
				end = (from + to) / 2
				fmt.Fprintf(&body, `<line class="%s" x1="%d" y1="%d" x2="%d" y2="%d" data-from="%s" data-to="%s"/>`+"\n",
					class, from, y, end, y, html.EscapeString(e.From), html.EscapeString(e.To))
				text("cross", end, y+5, "middle", "✕")
				continue
			}
			fmt.Fprintf(&body, `<line class="%s" x1="%d" y1="%d" x2="%d" y2="%d" marker-end="url(#head)" data-from="%s" data-to="%s"/>`+"\n",
				class, from, y, end, y, html.EscapeString(e.From), html.EscapeString(e.To))
		}
	}
	height := y + svgRow
	var out strings.Builder
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" class="diagram" viewBox="0 0 %d %d" width="%d" height="%d" font-size="%d">`+"\n",
		width, height, width*svgZoom/100, height*svgZoom/100, svgFont)
	out.WriteString(`<defs><marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#222"/></marker></defs>` + "\n")
	for _, a := range names {
		fmt.Fprintf(&out, `<text class="actor" x="%d" y="20" text-anchor="middle">%s</text>`+"\n", x[a], html.EscapeString(a))
		fmt.Fprintf(&out, `<line class="lane" data-actor="%s" x1="%d" y1="28" x2="%d" y2="%d"/>`+"\n", html.EscapeString(a), x[a], x[a], height-8)
	}
	out.WriteString(body.String())
	out.WriteString("</svg>\n")
	return out.String()
}
