package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/attempt"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/names"
	"github.com/zudojs/bank/cmd/bank/internal/program"
	"github.com/zudojs/bank/scenarios/practice"
)

type exerciseFlags struct {
	sql                  string
	hint, solution, json bool
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

bank exercise NAME alone shows what will be checked: the tables and rows
prepared, the lines the lesson's solution prints (for should-retry, whose
lines are the answers, only their form), and the rules your lines are read by.

--hint shows the next hint (one each time); --solution shows the lab's own
solution, runs it and checks it as yours would be checked.

A program is stopped after 30 seconds, or as soon as it prints more than 1 MiB;
a statement after 30 seconds (statement_timeout), or 10 waiting for a lock.

Exit status: 0 passed, 1 not yet, 2 for a bad command line, 3 when PostgreSQL
or your program could not be started. More: bank help exercise.`,
		Example: `  bank exercise list
  bank exercise ship
  bank exercise ship -- node ship.js
  bank exercise cleanup --sql cleanup.sql
  bank exercise should-retry -- python3 should_retry.py
  bank exercise ship --hint`,
		ValidArgsFunction: names.Complete("exercise", exerciseEntries()),
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			named, program := args, []string(nil)
			if dash >= 0 {
				named, program = args[:dash], args[dash:]
			}
			if len(named) == 1 && named[0] == "list" && program == nil {
				for _, e := range practice.Exercises {
					row(a.io.Out, a.listColumns(), fmt.Sprintf("%-13s ", e.Name), e.Summary)
				}
				return nil
			}
			if len(named) != 1 {
				return exitcode.Usagef("name one exercise: %s (or list)", strings.Join(practice.ExerciseNames(), ", "))
			}
			ex, ok := practice.LookupExercise(named[0])
			if !ok {
				return exitcode.Usagef("unknown exercise %q%s; choose one of %s", named[0], names.DidYouMean(named[0], practice.ExerciseNames()), strings.Join(practice.ExerciseNames(), ", "))
			}
			switch {
			case f.json && (f.hint || f.solution || (f.sql == "" && len(program) == 0)):
				return exitcode.Usagef("--json reports a check of yours: bank exercise %s --json -- CMD [ARGS…]%s", ex.Name, map[bool]string{true: " (or --sql FILE)"}[ex.IsSQL()])
			case f.hint:
				return attempt.NextHint(a.io.Out, ex)
			case f.solution:
				return a.showSolution(cmd.Context(), ex)
			case f.sql != "" && program != nil:
				return exitcode.Usagef("give either --sql FILE or -- CMD, not both")
			case f.sql != "" && !ex.IsSQL():
				return exitcode.Usagef("%s is not a SQL exercise: run your program with -- CMD", ex.Name)
			case f.sql == "" && len(program) == 0:
				attempt.Task(a.io.Out, ex)
				return nil
			}
			return a.checkExercise(cmd.Context(), ex, f.sql, program, f.json)
		},
	}
	cmd.Flags().StringVar(&f.sql, "sql", "", "check this SQL statement instead of a program (the clean-up exercise)")
	cmd.Flags().BoolVar(&f.hint, "hint", false, "show the next hint")
	cmd.Flags().BoolVar(&f.solution, "solution", false, "show the lab's own solution, run it and check it")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the checks as one JSON object (bank help json: bank.exercise/v1)")
	return cmd
}

func exerciseEntries() []names.Entry {
	return names.EntriesOf(practice.Exercises, func(x *practice.Exercise) names.Entry { return names.Entry{Name: x.Name, Summary: x.Summary} })
}

// sqlTimeout bounds a learner's statement (a variable for the tests).
var sqlTimeout = practice.SQLTimeout

func (a *app) checkExercise(ctx context.Context, ex *practice.Exercise, sqlFile string, argv []string, asJSON bool) error {
	var stmt []byte
	mode, who := practice.ProgramMode, "your program: "+strings.Join(argv, " ")
	if sqlFile != "" {
		var err error
		if stmt, err = os.ReadFile(sqlFile); err != nil {
			return exitcode.Usagef("--sql: %v", err)
		}
		mode, who = practice.SQLMode, "your statement: "+sqlFile
	}
	color, err := a.colorOn()
	if err != nil {
		return err
	}
	// Over TCP, so that the URL works in every language's driver.
	db, err := a.openDatabaseFor(ctx, labTemplate(), true)
	if err != nil {
		return err
	}
	defer db.close()
	if !asJSON {
		fmt.Fprintln(a.io.Out, ex.Prompt(mode))
	}
	var run *program.Result
	tried, err := practice.CheckExercise(ctx, db.clones, ex, mode, func(ctx context.Context, dbURL string, pool *pgxpool.Pool) (practice.Ran, error) {
		if stmt != nil {
			// The learner's statement runs as the learner's role, bounded in time.
			ran, err := practice.RunLearnerSQL(ctx, dbURL, ex, string(stmt), sqlTimeout)
			var tooLong *practice.TooLong
			if errors.As(err, &tooLong) {
				return ran, exitcode.Nof("%s", tooLong)
			}
			return ran, err
		}
		var err error
		if run, err = program.Run(ctx, argv, []string{"DATABASE_URL=" + dbURL}); err != nil {
			return practice.Ran{}, err
		}
		if run.TooMuch {
			return practice.Ran{}, exitcode.Nof("your program printed more than %s; it was stopped", program.SizeOf(program.OutputLimit))
		}
		return practice.Ran{Printed: run.Stdout, Failed: attempt.Unfinished(run)}, nil
	})
	if err != nil {
		return err
	}
	if asJSON {
		return attempt.JSON(a.io.Out, ex, mode, tried, run)
	}
	w := a.io.Out
	fmt.Fprintf(w, "== checking %s\n\n", who)
	attempt.Print(w, tried, color)
	if run != nil && run.StdoutCut {
		fmt.Fprintf(w, "\n(it printed more than %s: only the first %s were checked)\n", program.SizeOf(program.KeepStdout), program.SizeOf(program.KeepStdout))
	}
	if run != nil && run.Stderr != "" && (!tried.Passed() || attempt.Unfinished(run) != nil) {
		fmt.Fprintf(w, "\nyour program's standard error, %s:\n%s\n", run.StderrHeading(), attempt.Indent(run.StderrShown()))
		if tip := ex.Tip(run.Stderr); tip != "" {
			fmt.Fprintf(w, "that is: %s\n", tip)
		}
	}
	if tried.Passed() {
		fmt.Fprintf(w, "\npassed: every check holds. See the lab's own: bank exercise %s --solution\n", ex.Name)
		return nil
	}
	fmt.Fprintf(w, "\nnot yet. A hint: bank exercise %s --hint\n", ex.Name)
	return exitcode.Silent{Code: exitcode.No}
}

// showSolution shows the lab's own solution, then runs it on the database
// the exercise prepares for a program and checks it as a learner's is.
func (a *app) showSolution(ctx context.Context, ex *practice.Exercise) error {
	color, err := a.colorOn()
	if err != nil {
		return err
	}
	db, err := a.openDatabase(ctx)
	if err != nil {
		return err
	}
	defer db.close()
	var printed string
	tried, err := practice.CheckExercise(ctx, db.clones, ex, practice.ProgramMode, func(ctx context.Context, dbURL string, pool *pgxpool.Pool) (practice.Ran, error) {
		ran, err := ex.OwnSolution(ctx, dbURL, pool)
		printed = ran.Printed
		return ran, err
	})
	if err != nil {
		return err
	}
	w := a.io.Out
	fmt.Fprintf(w, "the lab's solution to %s:\n%s\n\n", ex.Name, practice.Fold(ex.Solution, "  "))
	fmt.Fprintf(w, "run by the lab on the database a program gets, it printed:\n%s\n\nchecked as yours is:\n", attempt.Indent(strings.TrimRight(printed, "\n")))
	attempt.Print(w, tried, color)
	if !tried.Passed() {
		return exitcode.Silent{Code: exitcode.No}
	}
	return nil
}
