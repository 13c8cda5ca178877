package render

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/fatih/color"
	"github.com/zudojs/bank/scenarios/lab"
)

func (p *textPrinter) verdict(v lab.Verdict) {
	fmt.Fprintln(p.w)
	// The words every verdict uses, said where they are first needed.
	p.print("invariants: checked in PostgreSQL after the run (the ledger: the transfers recorded, which every balance must add up to; an intent: one thing a user asked for, such as one tap)", "  ", nil)
	for _, r := range v.Results {
		mark := p.good.Sprint("holds ")
		if !r.Holds {
			mark = p.bad.Sprint("BROKEN")
		}
		name := r.Name
		head := fmt.Sprintf("  %s  %s", mark, name)
		line := head + strings.Repeat(" ", max(0, 30-utf8.RuneCountInString(name)))
		plain := fmt.Sprintf("  %-6s  %-30s", "", name)
		var notes []string
		if r.Detail != "" {
			notes = append(notes, r.Detail)
		}
		blind := p.sc.Blind[r.Check]
		if blind = "(blind to this failure: " + blind + ")"; !r.Holds || p.sc.Blind[r.Check] == "" || !v.ShowsBreak {
			blind = ""
		}
		if here := p.sc.Here[r.Check]; blind == "" && r.Holds && here != "" {
			blind = "(here: " + here + ")"
		}
		one := strings.TrimRight(plain+"  "+strings.Join(append(notes, blind), "  "), " ")
		switch {
		case utf8.RuneCountInString(one) <= columns(p.o.Width):
			// One line: the check, its detail and its blind spot.
			if r.Detail != "" {
				line += "  " + r.Detail
			}
			if blind != "" {
				line += "  " + p.dim.Sprint(blind)
			}
			fmt.Fprintln(p.w, strings.TrimRight(line, " "))
		default:
			// Too wide: the check, then its detail and blind spot under it.
			const under = "            "
			fmt.Fprintln(p.w, head)
			for _, n := range notes {
				p.print(under+n, under+"  ", nil)
			}
			if blind != "" {
				p.print(under+blind, under+" ", p.dim)
			}
		}
	}
	head, rest := p.verdictLine(v)
	p.printHead(head.text, head.colour, head.text+rest, "  ")
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
		p.printHead("mistake reproduced", p.expected, "mistake reproduced: the broken version did the damage the lesson describes, and the fix held", "  ")
	} else {
		p.printHead("mistake NOT reproduced", p.bad, "mistake NOT reproduced: see the verdicts above", "  ")
	}
	fmt.Fprintln(p.w)
}

// coloured is a piece of text and its colour.
type coloured struct {
	text   string
	colour *color.Color
}

// verdictLine is the verdict: its head, in its colour, and the rest.
func (p *textPrinter) verdictLine(v lab.Verdict) (coloured, string) {
	switch {
	case !v.Reproduced:
		return coloured{"verdict: NOT reproduced:", p.bad}, " " + strings.Join(v.Differences(), "; ")
	case v.ShowsBreak:
		what := "the break above is"
		if broken(v) > 1 {
			what = "the breaks above are"
		}
		rest := " - " + what + " the failure this lesson demonstrates"
		if p.sc.Fix != "" {
			rest += "; the fix: " + p.sc.Fix
		}
		return coloured{"verdict: failure reproduced", p.expected}, rest
	default:
		rest := " - every check held, as the lesson teaches"
		if p.sc.Prevents != "" {
			rest += "; it prevents " + p.sc.Prevents
		}
		return coloured{"verdict: invariants held", p.good}, rest
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
