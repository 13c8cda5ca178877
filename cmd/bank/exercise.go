package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/zudojs/bank/bank/procs"
	"github.com/zudojs/bank/scenarios"
)

type exerciseFlags struct {
	sql            string
	hint, solution bool
}

func (a *app) exerciseCommand() *cobra.Command {
	var f exerciseFlags
	cmd := &cobra.Command{
		Use:   "exercise NAME [--sql FILE] [-- CMD [ARGS…]] | list",
		Short: "Check your own solution to one of the lesson's exercises, in any language",
		Long: `Prepare exactly the situation an exercise describes on a fresh database, run your
program (any language; it finds the database in $DATABASE_URL) or your SQL
statement (--sql FILE, with the exercise's parameters bound as $1, $2), and
check what it printed and what it left in the database.

--hint shows the next hint (one more each time); --solution shows the lab's own
solution and runs it.

Exit status: 0 passed, 1 not yet, 2 for a bad command line, 3 when PostgreSQL
or your program could not be started.`,
		Example: `  bank exercise list
  bank exercise ship -- node ship.js
  bank exercise cleanup --sql cleanup.sql
  bank exercise should-retry -- python3 should_retry.py
  bank exercise ship --hint`,
		ValidArgsFunction: completeNames("exercise", exerciseEntries()),
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			names, program := args, []string(nil)
			if dash >= 0 {
				names, program = args[:dash], args[dash:]
			}
			if len(names) == 1 && names[0] == "list" && program == nil {
				for _, e := range scenarios.Exercises {
					fmt.Fprintf(a.io.Out, "%-13s %s\n", e.Name, e.Summary)
				}
				return nil
			}
			if len(names) != 1 {
				return usagef("name one exercise: %s (or list)", strings.Join(scenarios.ExerciseNames(), ", "))
			}
			ex, ok := scenarios.LookupExercise(names[0])
			if !ok {
				return usagef("unknown exercise %q%s; choose one of %s", names[0], didYouMean(names[0], scenarios.ExerciseNames()), strings.Join(scenarios.ExerciseNames(), ", "))
			}
			switch {
			case f.hint:
				return a.nextHint(ex)
			case f.solution:
				fmt.Fprintf(a.io.Out, "the lab's solution to %s:\n%s\n\nrun by the lab:\n\n", ex.Name, indent(ex.Solution))
				return a.runScenarios(cmd.Context(), ex.Scenario, scenarioFlags{})
			case f.sql != "" && program != nil:
				return usagef("give either --sql FILE or -- CMD, not both")
			case f.sql != "" && ex.SQLArgs == nil:
				return usagef("%s is not a SQL exercise: run your program with -- CMD", ex.Name)
			case f.sql == "" && len(program) == 0:
				a.showTask(ex)
				return nil
			}
			return a.checkExercise(cmd.Context(), ex, f.sql, program)
		},
	}
	cmd.Flags().StringVar(&f.sql, "sql", "", "check this SQL statement instead of a program (the clean-up exercise)")
	cmd.Flags().BoolVar(&f.hint, "hint", false, "show the next hint")
	cmd.Flags().BoolVar(&f.solution, "solution", false, "show the lab's own solution and run it")
	return cmd
}

func exerciseEntries() []entry {
	return entriesOf(scenarios.Exercises, func(x *scenarios.Exercise) entry { return entry{x.Name, x.Summary} })
}

func (a *app) checkExercise(ctx context.Context, ex *scenarios.Exercise, sqlFile string, program []string) error {
	var stmt []byte
	if sqlFile != "" {
		var err error
		if stmt, err = os.ReadFile(sqlFile); err != nil {
			return usagef("--sql: %v", err)
		}
	}
	color, err := a.colorOn()
	if err != nil {
		return err
	}
	db, err := a.openDatabase(ctx)
	if err != nil {
		return err
	}
	defer db.close()
	var stderr string
	attempt, err := scenarios.CheckExercise(ctx, db.cluster, ex, func(ctx context.Context, dbURL string, pool *pgxpool.Pool) (string, error) {
		if stmt != nil {
			return scenarios.RunSQL(ctx, pool, ex, string(stmt))
		}
		out, errOut, err := runProgram(ctx, program, dbURL)
		stderr = errOut
		return out, err
	})
	if err != nil {
		return err
	}
	w := a.io.Out
	fmt.Fprintf(w, "== exercise %s\n\n", ex.Name)
	for _, f := range attempt.Findings {
		mark := "ok     "
		if !f.Passed {
			mark = "NOT YET"
		}
		if color && !f.Passed {
			mark = "\x1b[31m" + mark + "\x1b[0m"
		}
		line := "  " + mark + "  " + f.What
		if f.Detail != "" {
			line += ": " + f.Detail
		}
		fmt.Fprintln(w, line)
	}
	if attempt.Passed() {
		fmt.Fprintf(w, "\npassed: every check holds. See the lab's own: bank exercise %s --solution\n", ex.Name)
		return nil
	}
	if stderr != "" {
		fmt.Fprintf(w, "\nyour program's standard error ended with:\n%s\n", indent(lastLinesOf(stderr, 5)))
	}
	fmt.Fprintf(w, "\nnot yet. A hint: bank exercise %s --hint\n", ex.Name)
	return silentExit{exitNotAsTaught}
}

// runProgram runs the learner's program with the exercise's database in
// its environment, bounded to 30 seconds, and returns what it printed.
// A program that exits with an error still has its output checked.
func runProgram(ctx context.Context, program []string, dbURL string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, program[0], program[1:]...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	procs.Bind(cmd, procs.Kill)
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return out.String(), errOut.String(), nil // checked as far as it got
	case errors.As(err, &exit):
		return out.String(), errOut.String(), nil
	case err != nil:
		return "", "", envError("cannot run %s: %v", program[0], err)
	}
	return out.String(), errOut.String(), nil
}

// nextHint shows the hints opened so far, and one more; it remembers how
// many were opened in the user's config directory.
func (a *app) nextHint(ex *scenarios.Exercise) error {
	dir, err := os.UserConfigDir()
	if err != nil {
		return envError("no place to remember hints: %v (set HOME)", err)
	}
	state := filepath.Join(dir, "bank", "hints-"+ex.Name)
	shown := 0
	if raw, err := os.ReadFile(state); err == nil {
		shown, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
	}
	shown = min(shown+1, len(ex.Hints))
	for i := 0; i < shown; i++ {
		fmt.Fprintf(a.io.Out, "hint %d of %d:\n%s\n", i+1, len(ex.Hints), indent(ex.Hints[i]))
	}
	if shown == len(ex.Hints) {
		fmt.Fprintf(a.io.Out, "that was the last hint; the lab's own solution: bank exercise %s --solution\n", ex.Name)
	}
	if err := os.MkdirAll(filepath.Dir(state), 0o700); err == nil {
		_ = os.WriteFile(state, []byte(strconv.Itoa(shown)), 0o600)
	}
	return nil
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

func lastLinesOf(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// showTask says what the exercise asks and how to have it checked.
func (a *app) showTask(ex *scenarios.Exercise) {
	fmt.Fprintf(a.io.Out, "exercise %s:\n%s\n\ncheck yours with:\n  bank exercise %s -- CMD [ARGS…]   (your program; DATABASE_URL is in its environment)\n", ex.Name, indent(ex.Task), ex.Name)
	if ex.SQLArgs != nil {
		fmt.Fprintf(a.io.Out, "  bank exercise %s --sql FILE       (your statement, with $1 and $2 bound)\n", ex.Name)
	}
	fmt.Fprintf(a.io.Out, "stuck? bank exercise %s --hint\n", ex.Name)
}
