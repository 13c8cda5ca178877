package grade

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fatih/color"
)

// Print prints the report card of a grade of command: one line per check,
// and for each failure the mistake it looks like, where to see it done
// right, and the evidence (for every check when verbose).
func (rep Report) Print(w io.Writer, command []string, lockTTL time.Duration, colour, verbose bool) {
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
	passed, failed, failedRequired, na := 0, 0, 0, 0
	for _, r := range rep.Results {
		mark := map[string]string{Pass: paint(color.New(color.FgGreen), "pass"), Fail: paint(color.New(color.FgRed, color.Bold), "FAIL"), NA: "n/a "}[r.Verdict]
		title := r.Title
		if !r.Required {
			title += " (recommended)"
		}
		fmt.Fprintf(w, "%s  %-15s %s\n      %s\n", mark, r.Name, title, r.Why)
		switch r.Verdict {
		case Pass:
			passed++
		case NA:
			na++
		case Fail:
			failed++
			if r.Required {
				failedRequired++
			}
		}
		if r.Verdict == Fail {
			looksLike := r.LooksLike
			if looksLike == "" {
				looksLike = "none of the lesson's mistakes fits what was seen: read the evidence below"
			}
			fmt.Fprintf(w, "      looks like: %s\n      see it done right: %s\n", looksLike, r.See)
		}
		if r.Verdict == Fail || verbose {
			for _, e := range r.Evidence {
				fmt.Fprintf(w, "        %s\n", e)
			}
		}
	}
	fmt.Fprintf(w, "\n%s\n", tally(passed, failed, failedRequired, na, len(rep.Results)))
	if rep.Passed {
		fmt.Fprintln(w, "verdict: "+paint(color.New(color.FgGreen, color.Bold), "PASS")+" (every required check held)")
	} else {
		fmt.Fprintln(w, "verdict: "+paint(color.New(color.FgRed, color.Bold), "FAIL")+" (see the lines marked FAIL, and run the command each one names)")
	}
}

// tally is the report card's count: "15 of 15 checks passed", or with the
// failures (how many of them required) and the checks that did not apply.
func tally(passed, failed, failedRequired, na, all int) string {
	s := fmt.Sprintf("%d of %d checks passed", passed, all)
	if failed > 0 {
		s += fmt.Sprintf(", %d failed (%d of them required)", failed, failedRequired)
	}
	if na > 0 {
		s += fmt.Sprintf(", %d not applicable", na)
	}
	return s
}
