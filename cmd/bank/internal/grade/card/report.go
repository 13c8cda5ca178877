// Package card writes what bank grade says for people and for CI, from
// the grader's Report and its list of checks alone, running nothing: the
// report card (in the terminal, as JUnit XML, and as a web page with each
// check's diagram), the contract a server is graded against, and the CI
// workflows that grade a learner's repository on every push.
package card

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/fatih/color"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// Print prints rep, the report card of g: one line per check, and for each failure the mistake it looks like,
// where to see it done right, and the evidence (for every check when
// verbose), every line folded at spaces to width columns (render.Width
// when 0), under its own text. When verbose, each failure's diagram
// follows its evidence, drawn in width columns.
func Print(w io.Writer, rep grade.Report, g Graded, colour, verbose bool, width int) {
	if len(rep.Results) == 0 {
		return
	}
	if width == 0 {
		width = render.Width
	}
	paint := func(c *color.Color, s string) string {
		if !colour {
			return s
		}
		c.EnableColor()
		return c.Sprint(s)
	}
	// say prints s folded, its later lines starting with cont; head, the
	// start of its first line, in colour c (when not nil).
	say := func(s, cont string, head string, c *color.Color) {
		for i, l := range render.Fold(breakable(s, width-len(cont)), width, cont) {
			if i == 0 && c != nil && strings.HasPrefix(l, head) {
				l = paint(c, head) + l[len(head):]
			}
			fmt.Fprintln(w, l)
		}
	}
	head := "report card for: " + g.command()
	if len(g.Given) > 0 {
		head += "   (" + strings.Join(g.Given, " ") + ")"
	}
	say(head, "  ", "", nil)
	fmt.Fprintln(w)
	const under = "         " // the check's lines, under its name
	for _, r := range rep.Results {
		mark := map[string]string{grade.Pass: "pass   ", grade.Fail: "FAIL   ", grade.NA: "n/a    ", grade.Unknown: "unknown"}[r.Verdict]
		c := map[string]*color.Color{grade.Pass: color.New(color.FgGreen), grade.Fail: color.New(color.FgRed, color.Bold),
			grade.Unknown: color.New(color.FgYellow, color.Bold)}[r.Verdict]
		title := r.Title
		if !r.Required {
			title += " (recommended)"
		}
		say(fmt.Sprintf("%s  %-15s %s", mark, r.Name, title), under+strings.Repeat(" ", 16), mark, c)
		say(under+r.Why, under, "", nil)
		if r.Verdict == grade.Fail {
			say(under+"looks like: "+looksLike(r), under+"  ", "", nil)
			say(under+"see it done right: "+r.See, under+"  ", "", nil)
		}
		if r.Verdict == grade.Fail || r.Verdict == grade.Unknown || verbose {
			for _, e := range r.Evidence {
				say(under+"  "+e, under+"    ", "", nil)
			}
		}
		if r.Verdict == grade.Fail && verbose && r.Recording != nil {
			drawIndented(w, r.Recording, colour, width)
		}
	}
	for _, name := range rep.NotRun {
		say(fmt.Sprintf("%s  %-15s %s", "not run", name, "(the grade stopped before it)"), under+strings.Repeat(" ", 16), "", nil)
	}
	if seen := observed(rep); seen != "" {
		fmt.Fprintln(w)
		say("what your "+g.of()+" did: "+seen, "  ", "", nil)
	}
	fmt.Fprintln(w)
	say(tally(rep), "  ", "", nil)
	word, why := verdict(rep)
	c := map[string]*color.Color{grade.Pass: color.New(color.FgGreen, color.Bold), grade.Fail: color.New(color.FgRed, color.Bold),
		grade.Unknown: color.New(color.FgYellow, color.Bold), grade.Stopped: color.New(color.FgRed, color.Bold)}[rep.Verdict]
	for i, l := range render.Fold("verdict: "+word+" ("+why+")", width, "  ") {
		if i == 0 {
			l = "verdict: " + paint(c, word) + strings.TrimPrefix(l, "verdict: "+word)
		}
		fmt.Fprintln(w, l)
	}
}

// breakable is s with a space after each comma of a word too long for a
// line of room columns (a JSON body the server sent: {"transferId":1,…}),
// so that it folds there; every other word is left as it is.
func breakable(s string, room int) string {
	words := strings.Split(s, " ")
	for i, w := range words {
		if utf8.RuneCountInString(w) > room && strings.Contains(w, ",") {
			words[i] = strings.ReplaceAll(w, ",", ", ")
		}
	}
	return strings.Join(words, " ")
}

// observed says what the server did across the whole grade, where one
// fact explains most of the card: it never wrote to its database.
func observed(rep grade.Report) string {
	wrote, watched := 0, 0
	for _, r := range rep.Results {
		if r.Writes >= 0 {
			watched++
			wrote += r.Writes
		}
	}
	if watched < 2 || wrote > 0 {
		return ""
	}
	return fmt.Sprintf("in none of the %d checks did it write a single row to its database (the grader's record of its writes is empty), whatever it answered: it keeps no database, and no transfer it reports was made", watched)
}

// verdict is the grade's verdict, in a word and a reason.
func verdict(rep grade.Report) (word, why string) {
	switch rep.Verdict {
	case grade.Pass:
		return "PASS", "every required check held"
	case grade.Fail:
		return "FAIL", "see the lines marked FAIL, and run the command each one names"
	case grade.Unknown:
		if rep.Stopped != "" {
			return "UNKNOWN", "the grade stopped, the machine too busy to tell: " + rep.Stopped
		}
		return "UNKNOWN", "no required check failed, but one could not tell as the machine was too slow: grade again when it is quieter, or with --repeat"
	}
	return "STOPPED", fmt.Sprintf("after %d of %d checks, not a pass: %s", len(rep.Results), len(rep.Results)+len(rep.NotRun), rep.Stopped)
}

// tally is the report card's count: "15 of 15 checks passed", or with the
// failures (how many of them required) and the checks that did not apply.
func tally(rep grade.Report) string {
	passed, failed, failedRequired, na, unknown := 0, 0, 0, 0, 0
	for _, r := range rep.Results {
		switch r.Verdict {
		case grade.Pass:
			passed++
		case grade.NA:
			na++
		case grade.Unknown:
			unknown++
		case grade.Fail:
			failed++
			if r.Required {
				failedRequired++
			}
		}
	}
	s := fmt.Sprintf("%d of %d checks passed", passed, len(rep.Results)+len(rep.NotRun))
	if failed > 0 {
		s += fmt.Sprintf(", %d failed (%d of them required)", failed, failedRequired)
	}
	if na > 0 {
		s += fmt.Sprintf(", %d not applicable", na)
	}
	if unknown > 0 {
		s += fmt.Sprintf(", %d could not tell", unknown)
	}
	if len(rep.NotRun) > 0 {
		s += fmt.Sprintf(", %d not run", len(rep.NotRun))
	}
	return s
}

// looksLike is the lesson's mistake a failure looks like, in its words.
func looksLike(r grade.Result) string {
	if r.LooksLike == "" {
		return "none of the lesson's mistakes fits what was seen: read the evidence below"
	}
	return r.LooksLike
}

// diagramIndent sets a check's diagram under its report line.
const diagramIndent = "      "

// drawIndented draws a check's diagram as bank scenario --diagram draws
// a run, under its report line, the whole fitting in width columns.
func drawIndented(w io.Writer, rec *render.Recording, colour bool, width int) {
	if width == 0 {
		width = render.Width
	}
	var b strings.Builder
	render.DrawDiagram(&b, rec, colour, width-len(diagramIndent))
	fmt.Fprintln(w)
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if line != "" {
			line = diagramIndent + line
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
}
