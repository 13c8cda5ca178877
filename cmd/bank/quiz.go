package main

import (
	"crypto/rand"
	cryptobin "encoding/binary"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/quiz"
	"github.com/zudojs/bank/cmd/bank/internal/term"
	"github.com/zudojs/bank/scenarios/practice"
)

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
				if words = strings.Split(f.answers, ","); len(words) != quiz.Length {
					return exitcode.Usagef("--answers takes %d choice numbers, one per question, such as 2,1,3,4,1; got %d", quiz.Length, len(words))
				}
			} else if f.json || !term.IsTerminal(a.io.In) || !term.IsTerminal(a.io.Out) {
				return exitcode.Usagef("bank quiz asks on a terminal; here give your answers: --answers 2,1,3,4,1 (and --seed N to choose the draw)")
			}
			if !cmd.Flags().Changed("seed") {
				var b [8]byte
				_, _ = rand.Read(b[:])
				f.seed = cryptobin.LittleEndian.Uint64(b[:]) % 1_000_000
			}
			draw := practice.Draw(f.seed, quiz.Length)
			given, err := quizAnswers(words, draw)
			if err != nil {
				return err
			}
			db, err := a.openDatabase(cmd.Context())
			if err != nil {
				return err
			}
			defer db.close()
			res, err := quiz.Sit(cmd.Context(), db.clones, a.io.Out, a.lines(), f.seed, draw, given, f.json)
			if err == nil && res.Verdict != "pass" {
				err = exitcode.Silent{Code: exitcode.No}
			}
			return err
		},
	}
	cmd.Flags().Uint64Var(&f.seed, "seed", 0, "the draw (default: a new one each time)")
	cmd.Flags().StringVar(&f.answers, "answers", "", "your answers, option numbers in order, for scripts: 2,1,3,4,1")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the result as JSON (with --answers)")
	return cmd
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
			return nil, exitcode.Usagef("answer %d is %q, not a number: question %d has choices 1 to %d", i+1, s, i+1, choices)
		case n < 1 || n > choices:
			return nil, exitcode.Usagef("answer %d is %d, but question %d has choices 1 to %d", i+1, n, i+1, choices)
		}
		given[i] = n
	}
	return given, nil
}
