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
	"time"

	"github.com/fatih/color"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/scenarios/render"
)

// Print prints rep, the report card of a grade of command with lockTTL:
// one line per check, and for each failure the mistake it looks like,
// where to see it done right, and the evidence (for every check when
// verbose). When verbose, each failure's diagram follows its evidence,
// drawn in width columns (render.Width when 0).
func Print(w io.Writer, rep grade.Report, command []string, lockTTL time.Duration, colour, verbose bool, width int) {
	if len(rep.Results) == 0 {
		return
	}
	paint := func(c *color.Color, s string) string {
		if !colour {
			return s
		}
		c.EnableColor()
		return c.Sprint(s)
	}
	fmt.Fprintf(w, "report card for: %s   (LOCK_TTL_MS=%d)\n\n", strings.Join(command, " "), lockTTL.Milliseconds())
	for _, r := range rep.Results {
		mark := map[string]string{grade.Pass: paint(color.New(color.FgGreen), "pass"), grade.Fail: paint(color.New(color.FgRed, color.Bold), "FAIL"), grade.NA: "n/a "}[r.Verdict]
		title := r.Title
		if !r.Required {
			title += " (recommended)"
		}
		fmt.Fprintf(w, "%s  %-15s %s\n      %s\n", mark, r.Name, title, r.Why)
		if r.Verdict == grade.Fail {
			fmt.Fprintf(w, "      looks like: %s\n      see it done right: %s\n", looksLike(r), r.See)
		}
		if r.Verdict == grade.Fail || verbose {
			for _, e := range r.Evidence {
				fmt.Fprintf(w, "        %s\n", e)
			}
		}
		if r.Verdict == grade.Fail && verbose && r.Recording != nil {
			drawIndented(w, r.Recording, colour, width)
		}
	}
	fmt.Fprintf(w, "\n%s\n", tally(rep))
	if rep.Passed {
		fmt.Fprintln(w, "verdict: "+paint(color.New(color.FgGreen, color.Bold), "PASS")+" (every required check held)")
	} else {
		fmt.Fprintln(w, "verdict: "+paint(color.New(color.FgRed, color.Bold), "FAIL")+" (see the lines marked FAIL, and run the command each one names)")
	}
}

// tally is the report card's count: "15 of 15 checks passed", or with the
// failures (how many of them required) and the checks that did not apply.
func tally(rep grade.Report) string {
	passed, failed, failedRequired, na := 0, 0, 0, 0
	for _, r := range rep.Results {
		switch r.Verdict {
		case grade.Pass:
			passed++
		case grade.NA:
			na++
		case grade.Fail:
			failed++
			if r.Required {
				failedRequired++
			}
		}
	}
	s := fmt.Sprintf("%d of %d checks passed", passed, len(rep.Results))
	if failed > 0 {
		s += fmt.Sprintf(", %d failed (%d of them required)", failed, failedRequired)
	}
	if na > 0 {
		s += fmt.Sprintf(", %d not applicable", na)
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
