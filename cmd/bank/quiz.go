package main

import (
	"bufio"
	"context"
	"crypto/rand"
	cryptobin "encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/scenarios"
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
PostgreSQL could not be started or reached.`,
		Example: `  bank quiz
  bank quiz --seed 12 --answers 2,1,3,4,1
  bank quiz --seed 12 --answers 2,1,3,4,1 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var given []int
			if f.answers != "" {
				for _, s := range strings.Split(f.answers, ",") {
					n, err := strconv.Atoi(strings.TrimSpace(s))
					if err != nil || n < 1 {
						return usagef("--answers takes %d option numbers, such as 2,1,3,4,1; %q is not one", quizLength, s)
					}
					given = append(given, n)
				}
				if len(given) != quizLength {
					return usagef("--answers takes %d option numbers, one per question; got %d", quizLength, len(given))
				}
			} else if f.json || !isTerminal(a.io.In) || !isTerminal(a.io.Out) {
				return usagef("bank quiz asks on a terminal; here give your answers: --answers 2,1,3,4,1 (and --seed N to choose the draw)")
			}
			if !cmd.Flags().Changed("seed") {
				var b [8]byte
				_, _ = rand.Read(b[:])
				f.seed = cryptobin.LittleEndian.Uint64(b[:]) % 1_000_000
			}
			return a.quiz(cmd.Context(), f.seed, given, f.json)
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

func (a *app) quiz(ctx context.Context, seed uint64, given []int, asJSON bool) error {
	db, err := a.openDatabase(ctx)
	if err != nil {
		return err
	}
	defer db.close()
	w := a.io.Out
	in := bufio.NewReader(a.io.In)
	res := quizResult{Seed: seed}
	if !asJSON {
		fmt.Fprintf(w, "five questions (draw %d; repeat it with --seed %d)\n", seed, seed)
	}
	draw := scenarios.Draw(seed, quizLength)
	rights, err := scenarios.Answers(ctx, db.cluster, draw)
	if err != nil {
		return err
	}
	for i, q := range draw {
		right := rights[i]
		o := quizOutcome{Scenario: q.Scenario, Ask: q.Ask, Options: q.Options, Why: q.Why}
		for j, opt := range q.Options {
			if opt == right {
				o.Right = j + 1
			}
		}
		if !asJSON {
			fmt.Fprintf(w, "\n%d. %s\n", i+1, q.Ask)
			for j, opt := range q.Options {
				fmt.Fprintf(w, "   %d) %s\n", j+1, opt)
			}
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
			verdict := "right"
			if !o.Correct {
				verdict = fmt.Sprintf("not quite: the lab printed %d) %s", o.Right, right)
			}
			fmt.Fprintf(w, "   your answer: %d, %s.\n   %s See it: bank scenario %s\n", o.Given, verdict, q.Why, q.Scenario)
		}
	}
	res.Passed = res.Score >= quizPass
	if asJSON {
		_ = json.NewEncoder(w).Encode(res)
	} else if res.Passed {
		fmt.Fprintf(w, "\n%d of %d: passed.\n", res.Score, quizLength)
	} else {
		fmt.Fprintf(w, "\n%d of %d: not yet (%d to pass). Read the explanations, run the scenarios they name, and try again:\nthe next bank quiz draws a different five.\n", res.Score, quizLength, quizPass)
	}
	if !res.Passed {
		return silentExit{exitNotAsTaught}
	}
	return nil
}

// ask reads an option number from the learner, asking again until it is
// one.
func ask(a *app, in *bufio.Reader, options int) int {
	for {
		fmt.Fprintf(a.io.Out, "   your answer (1-%d): ", options)
		line, err := in.ReadString('\n')
		n, convErr := strconv.Atoi(strings.TrimSpace(line))
		if convErr == nil && n >= 1 && n <= options {
			return n
		}
		if err != nil {
			return 0 // input ended: counted as no answer
		}
	}
}
