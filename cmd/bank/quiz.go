package main

import (
	"bufio"
	"context"
	"crypto/rand"
	cryptobin "encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/zudojs/bank/scenarios/practice"
)

const quizLength, quizPass = 5, 4

type quizFlags struct {
	seed    uint64
	answers string
	json    bool
}

func (a *app) quizCommand() *cobra.Command {
	var f quizFlags
	cmd := &cobra.Command{
		Use:   "quiz",
		Short: "Test yourself: five questions about what the lab's lessons print, answered by real runs",
		Long: `Five questions drawn at random from a bank of more than thirty: predict what a
lesson answers (a status, a replay, a total, a SQLSTATE). The right answers
are read from real runs of the scenarios, on PostgreSQL, while you answer.
After each question the lab says why, and which scenario shows it. 4 of 5 to
pass; the next try draws a different five (--seed repeats a draw).

On a terminal it asks; in a script give the answers: --answers 2,1,3,4,1.

Exit status: 0 passed, 1 not yet, 2 for a bad command line, 3 when
PostgreSQL could not be started or reached. More: bank help quiz.`,
		Example: `  bank quiz
  bank quiz --seed 12 --answers 2,1,3,4,1
  bank quiz --seed 12 --answers 2,1,3,4,1 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var words []string
			if f.answers != "" {
				if words = strings.Split(f.answers, ","); len(words) != quizLength {
					return usagef("--answers takes %d choice numbers, one per question, such as 2,1,3,4,1; got %d", quizLength, len(words))
				}
			} else if f.json || !isTerminal(a.io.In) || !isTerminal(a.io.Out) {
				return usagef("bank quiz asks on a terminal; here give your answers: --answers 2,1,3,4,1 (and --seed N to choose the draw)")
			}
			if !cmd.Flags().Changed("seed") {
				var b [8]byte
				_, _ = rand.Read(b[:])
				f.seed = cryptobin.LittleEndian.Uint64(b[:]) % 1_000_000
			}
			draw := practice.Draw(f.seed, quizLength)
			given, err := quizAnswers(words, draw)
			if err != nil {
				return err
			}
			return a.quiz(cmd.Context(), f.seed, draw, given, f.json)
		},
	}
	cmd.Flags().Uint64Var(&f.seed, "seed", 0, "the draw (default: a new one each time)")
	cmd.Flags().StringVar(&f.answers, "answers", "", "your answers, option numbers in order, for scripts: 2,1,3,4,1")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the result as JSON (with --answers)")
	return cmd
}

type quizResult struct {
	Seed      uint64        `json:"seed"`
	Questions []quizOutcome `json:"questions"`
	Score     int           `json:"score"`
	Passed    bool          `json:"passed"`
}

type quizOutcome struct {
	Scenario string   `json:"scenario"`
	Ask      string   `json:"question"`
	Options  []string `json:"options"`
	Right    int      `json:"rightOption"`
	Given    int      `json:"givenOption"`
	Correct  bool     `json:"correct"`
	Why      string   `json:"why"`
}

// quizAnswers checks the answers given on the command line against the
// draw, before anything runs: each must be the number of one of its
// question's choices. None given (a terminal) is nil.
func quizAnswers(words []string, draw []practice.Question) ([]int, error) {
	if words == nil {
		return nil, nil
	}
	given := make([]int, len(words))
	for i, s := range words {
		s = strings.TrimSpace(s)
		n, err := strconv.Atoi(s)
		choices := len(draw[i].Options)
		switch {
		case err != nil:
			return nil, usagef("answer %d is %q, not a number: question %d has choices 1 to %d", i+1, s, i+1, choices)
		case n < 1 || n > choices:
			return nil, usagef("answer %d is %d, but question %d has choices 1 to %d", i+1, n, i+1, choices)
		}
		given[i] = n
	}
	return given, nil
}

func (a *app) quiz(ctx context.Context, seed uint64, draw []practice.Question, given []int, asJSON bool) error {
	db, err := a.openDatabase(ctx)
	if err != nil {
		return err
	}
	defer db.close()
	w := a.io.Out
	in := bufio.NewReader(a.io.In)
	res := quizResult{Seed: seed}
	if !asJSON {
		say(w, "", "", fmt.Sprintf("five questions (draw %d; repeat it with --seed %d)", seed, seed))
	}
	rights, err := practice.Answers(ctx, db.clones, draw)
	if err != nil {
		return err
	}
	for i, q := range draw {
		right := rights[i]
		o := quizOutcome{Scenario: q.Scenario, Ask: q.Ask, Options: q.Options, Why: q.Why, Right: q.Choice(right)}
		if !asJSON {
			printQuestion(w, i+1, q)
		}
		if given != nil {
			o.Given = given[i]
		} else {
			o.Given = ask(a, in, len(q.Options))
		}
		o.Correct = o.Given == o.Right
		if o.Correct {
			res.Score++
		}
		res.Questions = append(res.Questions, o)
		if !asJSON {
			printVerdict(w, q, o, right)
		}
	}
	res.Passed = res.Score >= quizPass
	if asJSON {
		_ = json.NewEncoder(w).Encode(res)
	} else {
		printScore(w, res.Score, len(draw))
	}
	if !res.Passed {
		return silentExit{exitNo}
	}
	return nil
}

// ask reads a choice number from the learner, asking again until it is
// one.
func ask(a *app, in *bufio.Reader, options int) int {
	for {
		fmt.Fprintf(a.io.Out, "   your answer (1-%d): ", options)
		line, err := in.ReadString('\n')
		s := strings.TrimSpace(line)
		n, convErr := strconv.Atoi(s)
		if convErr == nil && n >= 1 && n <= options {
			return n
		}
		if err != nil {
			return 0 // input ended: counted as no answer
		}
		if s != "" {
			say(a.io.Out, "   ", "   ", fmt.Sprintf("%q is not one of the choices: answer a number from 1 to %d.", s, options))
		}
	}
}

// quizWidth is the widest line the quiz prints, in runes.
const quizWidth = 80

// printQuestion prints question n and its numbered choices.
func printQuestion(w io.Writer, n int, q practice.Question) {
	fmt.Fprintln(w)
	num := fmt.Sprintf("%d. ", n)
	say(w, num, strings.Repeat(" ", utf8.RuneCountInString(num)), q.Ask)
	for j, opt := range q.Options {
		say(w, fmt.Sprintf("   %d) ", j+1), "      ", opt)
	}
}

// printVerdict says whether the answer was right, why, and which
// scenario shows it.
func printVerdict(w io.Writer, q practice.Question, o quizOutcome, right string) {
	verdict := "right"
	if !o.Correct {
		verdict = "not quite: the lab printed " + unbroken(fmt.Sprintf("%d) %s", o.Right, right))
	}
	say(w, "   ", "   ", fmt.Sprintf("your answer: %d, %s.", o.Given, verdict))
	say(w, "   ", "   ", q.Why+" "+unbroken("See it: bank scenario "+q.Scenario))
}

// printScore prints the score of a quiz of n questions, and what next.
func printScore(w io.Writer, score, n int) {
	fmt.Fprintln(w)
	if score >= quizPass {
		say(w, "", "", fmt.Sprintf("%d of %d: passed.", score, n))
		return
	}
	say(w, "", "", fmt.Sprintf("%d of %d: not yet (%d to pass). Read the explanations, run the scenarios they name, and try again: the next bank quiz draws a different five.", score, n, quizPass))
}

// nbsp joins words that must stay on one line, such as a command to copy.
const nbsp = '\u00a0'

func unbroken(s string) string { return strings.ReplaceAll(s, " ", string(nbsp)) }

// say prints text wrapped at spaces to lines of at most quizWidth runes:
// the first line starts with first, the others with cont. A word is never
// cut (an amount such as ₦10,000, a key, a code): one longer than a line
// stands on a line of its own.
func say(w io.Writer, first, cont, text string) {
	for _, l := range wrapWords(first, cont, text, quizWidth) {
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
