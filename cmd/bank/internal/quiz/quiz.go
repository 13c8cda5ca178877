// Package quiz is a sitting of bank quiz: five questions drawn from the
// bank of scenarios/practice, asked on a terminal (or answered on the
// command line), each told right or not and why, then the score.
package quiz

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zudojs/bank/cmd/bank/internal/jsonshape"
	"github.com/zudojs/bank/cmd/bank/internal/term"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/render"
	"github.com/zudojs/bank/scenarios/practice"
)

// Length is the questions of a sitting; Pass, the right answers that pass.
const Length, Pass = 5, 4

// Result is a whole sitting, as --json prints it.
type Result struct {
	Schema    string    `json:"schema"` // bank.quiz/v1 (bank help json)
	Seed      uint64    `json:"seed"`
	Questions []Outcome `json:"questions"`
	Score     int       `json:"score"`
	Verdict   string    `json:"verdict"` // pass: at least Pass right answers; else fail
}

// Outcome is one question answered.
type Outcome struct {
	Scenario string   `json:"scenario"`
	Ask      string   `json:"question"`
	Options  []string `json:"options"`
	Right    int      `json:"rightOption"`
	Given    int      `json:"givenOption"`
	Correct  bool     `json:"correct"`
	Why      string   `json:"why"`
}

// Sit asks the questions of draw, on w, reading each answer from in (or
// taking it from given), and says after each whether it was right and
// why, the right answers read from real runs of the scenarios on clones.
// With asJSON it prints only the Result, as one object. When ctx ends
// (Ctrl-C), at a question too, it returns ctx's error at once.
func Sit(ctx context.Context, clones *pgserver.Clones, w io.Writer, in *term.Lines, seed uint64, draw []practice.Question, given []int, asJSON bool) (Result, error) {
	res := Result{Seed: seed}
	if !asJSON {
		Say(w, "", "", fmt.Sprintf("five questions (draw %d; repeat it with --seed %d)", seed, seed))
	}
	rights, err := practice.Answers(ctx, clones, draw)
	if err != nil {
		return res, err
	}
	for i, q := range draw {
		right := rights[i]
		o := Outcome{Scenario: q.Scenario, Ask: q.Ask, Options: q.Options, Why: q.Why, Right: q.Choice(right)}
		if !asJSON {
			PrintQuestion(w, i+1, q)
		}
		if given != nil {
			o.Given = given[i]
		} else if o.Given, err = Ask(ctx, w, in, len(q.Options)); err != nil {
			return res, err
		}
		o.Correct = o.Given == o.Right
		if o.Correct {
			res.Score++
		}
		res.Questions = append(res.Questions, o)
		if !asJSON {
			PrintVerdict(w, q, o, right)
		}
	}
	res.Verdict = "fail"
	if res.Score >= Pass {
		res.Verdict = "pass"
	}
	if asJSON {
		res.Schema = "bank.quiz/v1"
		_ = jsonshape.Encode(w, &res, false)
	} else {
		PrintScore(w, res.Score, len(draw))
	}
	return res, nil
}

// Ask reads a choice number from the learner, asking again until it is
// one. The input's end is no answer (0); ctx's end (Ctrl-C) is ctx's
// error, at once.
func Ask(ctx context.Context, w io.Writer, in *term.Lines, options int) (int, error) {
	for {
		fmt.Fprintf(w, "   your answer (1-%d): ", options)
		line, err := in.Next(ctx)
		if ctx.Err() != nil {
			fmt.Fprintln(w)
			return 0, ctx.Err()
		}
		s := strings.TrimSpace(line)
		n, convErr := strconv.Atoi(s)
		if convErr == nil && n >= 1 && n <= options {
			return n, nil
		}
		if err != nil {
			return 0, nil // input ended: counted as no answer
		}
		if s != "" {
			Say(w, "   ", "   ", fmt.Sprintf("%q is not one of the choices: answer a number from 1 to %d.", s, options))
		}
	}
}

// Width is the widest line the quiz prints, in runes.
const Width = 80

// PrintQuestion prints question n and its numbered choices.
func PrintQuestion(w io.Writer, n int, q practice.Question) {
	fmt.Fprintln(w)
	num := fmt.Sprintf("%d. ", n)
	Say(w, num, strings.Repeat(" ", utf8.RuneCountInString(num)), q.Ask)
	for j, opt := range q.Options {
		Say(w, fmt.Sprintf("   %d) ", j+1), "      ", opt)
	}
}

// PrintVerdict says whether the answer was right, why, and which
// scenario shows it.
func PrintVerdict(w io.Writer, q practice.Question, o Outcome, right string) {
	verdict := "right"
	if !o.Correct {
		verdict = "not quite: the lab printed " + unbroken(fmt.Sprintf("%d) %s", o.Right, right))
	}
	Say(w, "   ", "   ", fmt.Sprintf("your answer: %d, %s.", o.Given, verdict))
	Say(w, "   ", "   ", q.Why+" "+unbroken("See it: bank scenario "+q.Scenario))
}

// PrintScore prints the score of a quiz of n questions, and what next.
func PrintScore(w io.Writer, score, n int) {
	fmt.Fprintln(w)
	if score >= Pass {
		Say(w, "", "", fmt.Sprintf("%d of %d: passed.", score, n))
		return
	}
	Say(w, "", "", fmt.Sprintf("%d of %d: not yet (%d to pass). Read the explanations, run the scenarios they name, and try again: the next bank quiz draws a different five.", score, n, Pass))
}

// nbsp joins words that must stay on one line, such as a command to copy.
const nbsp = '\u00a0'

func unbroken(s string) string { return strings.ReplaceAll(s, " ", string(nbsp)) }

// Say prints text wrapped at spaces to lines of at most Width runes:
// the first line starts with first, the others with cont. A word is never
// cut (an amount such as ₦10,000, a key, a code): one longer than a line
// stands on a line of its own.
func Say(w io.Writer, first, cont, text string) {
	for _, l := range wrapWords(first, cont, text, Width) {
		fmt.Fprintln(w, l)
	}
}

func wrapWords(first, cont, text string, width int) []string {
	var out []string
	line, n, empty := first, utf8.RuneCountInString(first), true
	for _, word := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\n' }) {
		wn := utf8.RuneCountInString(word)
		if !empty && n+1+wn > width {
			out = append(out, line)
			line, n, empty = cont, utf8.RuneCountInString(cont), true
		}
		if !empty {
			line, n = line+" ", n+1
		}
		line, n, empty = line+word, n+wn, false
	}
	out = append(out, strings.TrimRight(line, " "))
	for i := range out {
		out[i] = strings.ReplaceAll(out[i], string(nbsp), " ")
	}
	return out
}

// Predict asks, before scenario runs, the quiz's questions about it,
// wrapped as the quiz's are (bank scenario --predict), and returns the
// predictions made, for the transcript to mark; asked is false when there
// are no questions about it. Ctrl-C at a question (ctx's end) is ctx's
// error.
func Predict(ctx context.Context, w io.Writer, in *term.Lines, scenario string) (ps []render.Prediction, asked bool, err error) {
	qs := practice.QuestionsFor(scenario)
	if len(qs) == 0 {
		return nil, false, nil
	}
	fmt.Fprintf(w, "before %s runs, predict:\n", scenario)
	for i, q := range qs {
		PrintQuestion(w, i+1, q)
		n, err := Ask(ctx, w, in, len(q.Options))
		if err != nil {
			return nil, true, err
		}
		if n > 0 {
			ps = append(ps, q.Prediction(q.Options[n-1]))
		}
	}
	fmt.Fprintln(w)
	return ps, true, nil
}
