package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/attempt"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/grade/card"
	"github.com/zudojs/bank/cmd/bank/internal/grade/starter"
	"github.com/zudojs/bank/cmd/bank/internal/hops"
	"github.com/zudojs/bank/cmd/bank/internal/jsonshape"
	"github.com/zudojs/bank/cmd/bank/internal/names"
)

type gradeFlags struct {
	contract     bool
	json         bool
	lockTTL      time.Duration
	startTimeout time.Duration
	only         []string
	jobs, repeat int
	junit        string
	points       []string // NAME=N
	starter      string   // a language: write its starter into the one argument, a folder
	workflow     string   // a CI file to print for the command: actions or classroom
	strict       bool     // a failed recommended check fails the grade too
	html         string
}

func (a *app) gradeCommand() *cobra.Command {
	var f gradeFlags
	cmd := &cobra.Command{
		Use:   "grade [flags] -- CMD [ARGS…] | grade --starter LANG DIR",
		Short: "Throw the lesson's faults at your own server, in any language, and get a report card",
		Long: `Grade a transfer server of your own against the lesson. For every check,
bank grade makes a fresh bank (the lesson's accounts and transfers, seeded),
starts CMD with DATABASE_URL, PORT and LOCK_TTL_MS in its environment, and
throws one fault at it through a proxy of its own: a lost reply, a double
tap, a storm of copies, a crash mid-transfer, a server paused past its lock.
Each check is one line on the report card, with the mistake of the lesson a
failure looks like and the command that shows it done right.

See the contract (what the server must answer) with bank grade --contract,
and what each check proves, and how, with bank help grade.

Exit status: 0 when every required check passes, 1 when one fails, 2 for a
bad command line, 3 when the server cannot be run or never listens.`,
		Example: `  bank grade --contract
  bank grade -- node server.js
  bank grade -- python3 app.py
  bank grade --only lost-response,crash -- ./myserver
  bank grade -- bank serve                  # the lab's own server: passes
  bank grade -- bank serve --mistake no-fencing
  bank grade --starter python my-server     # a server to start from
  bank grade --repeat 20 -- ./myserver      # each check 20 times
  bank grade --junit grade.xml --html grade.html -- ./myserver
  bank grade --workflow classroom --points crash=5 -- node server.js`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.contract && len(args) > 0 {
				return exitcode.Usagef("--contract prints the contract and runs nothing; drop it to grade %q, or drop the command to read the contract", strings.Join(args, " "))
			}
			if f.contract {
				fmt.Fprint(a.io.Out, card.Contract())
				return nil
			}
			if f.starter != "" {
				return starter.Servers.Run(a.io.Out, f.starter, args, cmd.ArgsLenAtDash(), "bank grade")
			}
			dash := cmd.ArgsLenAtDash()
			if dash != 0 || len(args) == 0 {
				return exitcode.Usagef("name your server's command after --, such as: bank grade -- node server.js (bank grade --contract says what it must do)")
			}
			if f.workflow != "" {
				return a.printWorkflow(f, args)
			}
			return a.grade(cmd.Context(), f, args)
		},
	}
	cmd.AddCommand(a.gradeClientCommand(), a.gradeWebhookCommand(), a.gradePayoutCommand(), hops.Command(a.io.Out, a.getenv))
	cmd.Flags().BoolVar(&f.contract, "contract", false, "print the API and database contract the checks hold a server to, and exit")
	cmd.Flags().StringVar(&f.workflow, "workflow", "", "print a CI file that grades the command after -- in your repository, and exit: actions (GitHub Actions, the checks published from --junit) or classroom (GitHub Classroom's autograding, a test per check worth its --points)")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "exit 1 when any check fails, the recommended ones too (for a class that grades them)")
	cmd.Flags().StringVar(&f.starter, "starter", "", "write a small server to start from, in `LANG` ("+strings.Join(starter.Languages(), ", ")+"), into the folder named after it (--starter node my-server): the lesson's transfer, no idempotency yet; then grade it")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the report card as JSON")
	cmd.Flags().DurationVar(&f.lockTTL, "lock-ttl", 2*time.Second, "the lock TTL given to the server as LOCK_TTL_MS")
	cmd.Flags().DurationVar(&f.startTimeout, "start-timeout", 20*time.Second, "how long the server may take to listen on its PORT")
	cmd.Flags().StringSliceVar(&f.only, "only", nil, "run only these checks (comma-separated): "+strings.Join(grade.Names(), ", "))
	cmd.Flags().IntVar(&f.repeat, "repeat", 1, "run each check N times, each on a fresh database, and say how many runs failed: a race may show in one run of four")
	cmd.Flags().IntVar(&f.jobs, "jobs", 0, fmt.Sprintf("checks run side by side, each with its own database and servers (default %d here: twice the cores, 2 to 6; 1 runs them one after another)", grade.DefaultJobs()))
	cmd.Flags().StringVar(&f.junit, "junit", "", "also write the report as JUnit XML (one testcase per check, n/a as skipped) to this file, for CI; - for standard output instead of the card")
	cmd.Flags().StringSliceVar(&f.points, "points", nil, "what a passed check is worth in --json and --junit, as NAME=N (comma-separated; 1 each unless named), such as crash=5,pause=5")
	cmd.Flags().StringVar(&f.html, "html", "", "also write the report card, with a sequence diagram of what happened in every check, as one self-contained web page to this file (- for standard output)")
	return cmd
}

// check refuses flags that cannot go together or are out of range, and
// reads --points.
func (f gradeFlags) check() (map[string]int, error) {
	switch {
	case f.lockTTL < 100*time.Millisecond || f.lockTTL > time.Minute:
		return nil, exitcode.Usagef("--lock-ttl must be between 100ms and 1m, such as 2s")
	case f.startTimeout <= 0:
		return nil, exitcode.Usagef("--start-timeout must be positive, such as 20s")
	case f.repeat < 1 || f.repeat > 1000:
		return nil, exitcode.Usagef("--repeat must be between 1 and 1000, such as 20")
	case f.jobs < 0 || f.jobs > 64:
		return nil, exitcode.Usagef("--jobs must be between 1 and 64, such as 4 (leave it out for %d)", grade.DefaultJobs())
	}
	for _, name := range f.only {
		if err := knownCheck(name, "--only"); err != nil {
			return nil, err
		}
	}
	return checkPoints(f.points)
}

// grade is bank grade: the flags checked, the outputs (--html, --junit)
// made first so a bad path is said at once, the database, the run, and the
// card in every form asked for.
func (a *app) grade(ctx context.Context, f gradeFlags, command []string) error {
	points, err := f.check()
	if err != nil {
		return err
	}
	if _, err := exec.LookPath(command[0]); err != nil {
		// As for bank exercise: a server that cannot be started is the
		// environment's failure (exit 3), whatever the reason.
		return exitcode.Envf("cannot run %q: %s; check the command after --", command[0], lookPathReason(err))
	}
	colour, err := a.colorOn()
	if err != nil {
		return err
	}
	files, err := card.OpenFiles(f.junit, f.html, f.json, &a.io.Out)
	if err != nil {
		return err
	}
	defer files.Discard()
	db, err := a.openDatabaseFor(ctx, grade.Template(), true)
	if err != nil {
		return err
	}
	defer db.close()
	cfg := grade.Config{
		Command: command, LockTTL: f.lockTTL, StartTimeout: f.startTimeout, Only: f.only,
		Jobs: f.jobs, Repeat: f.repeat, Points: points, NewDatabase: db.forLearner,
	}
	if !f.json {
		cfg.Progress = a.io.Err
	}
	start := time.Now()
	rep, err := grade.Run(ctx, cfg)
	se, startFailed := grade.IsStartError(err)
	if err != nil && !startFailed {
		return err
	}
	// A grade that stopped early (the server would not start) writes what
	// it has, each output saying it stopped and counting the checks it
	// never ran; then says why, and exits with its own code.
	if len(f.only) == 0 && !startFailed {
		hops.Keep(a.getenv, a.io.Err, "server", command, rep)
	}
	graded := card.Server(command, f.lockTTL)
	if err := files.Write(rep, graded, time.Since(start)); err != nil {
		return err
	}
	if f.json {
		if err := writeJSON(a.io.Out, rep); err != nil {
			return err
		}
	} else if files.CardShown() {
		card.Print(a.io.Out, rep, graded, colour, a.verbose, a.terminalColumns(leastDiagram)) // the diagrams of -v: the terminal's width, else 80
	}
	if startFailed {
		msg := "bank: " + se.Why
		if se.Stderr != "" {
			msg += "\nits last output:\n" + attempt.Indent(se.Stderr)
		}
		fmt.Fprintln(a.io.Err, msg)
		if rep.Verdict == grade.Fail {
			return exitcode.Silent{Code: exitcode.No}
		}
		if se.Busy {
			return exitcode.Silent{Code: exitcode.Unknown}
		}
		return exitcode.Silent{Code: exitcode.Env}
	}
	return gradeVerdict(a, rep, f.strict)
}

func writeJSON(w io.Writer, rep grade.Report) error {
	if rep.Schema == "" {
		rep.Schema = "bank.grade/v1"
	}
	return jsonshape.Encode(w, &rep, true)
}

// gradeVerdict is the grade's exit: no (1) when a required check failed,
// or with --strict any check; unknown (4) when none failed but one could
// not tell.
func gradeVerdict(a *app, rep grade.Report, strict bool) error {
	switch rep.Verdict {
	case grade.Fail:
		return exitcode.Silent{Code: exitcode.No}
	case grade.Unknown:
		return exitcode.Silent{Code: exitcode.Unknown}
	}
	for _, r := range rep.Results {
		if strict && r.Verdict == grade.Fail {
			fmt.Fprintf(a.io.Err, "bank: --strict: the recommended check %s failed\n", r.Name)
			return exitcode.Silent{Code: exitcode.No}
		}
	}
	return nil
}

// printWorkflow is bank grade --workflow KIND -- CMD.
func (a *app) printWorkflow(f gradeFlags, command []string) error {
	if !slices.Contains(card.Workflows, f.workflow) {
		return exitcode.Usagef("no workflow %q%s: choose %s", f.workflow, names.DidYouMean(f.workflow, card.Workflows), strings.Join(card.Workflows, " or "))
	}
	points, err := checkPoints(f.points)
	if err != nil {
		return err
	}
	w, err := card.Workflow(f.workflow, card.Server(command, f.lockTTL), points)
	if err != nil {
		return err
	}
	fmt.Fprint(a.io.Out, w)
	return nil
}

// knownCheck refuses a name that is not a check's, in flag's value.
func knownCheck(name, flag string) error {
	if slices.Contains(grade.Names(), name) {
		return nil
	}
	return exitcode.Usagef("unknown check %q%s in %s; checks: %s", name, names.DidYouMean(name, grade.Names()), flag, strings.Join(grade.Names(), ", "))
}

// checkPoints reads --points, suggesting a check for a mistyped name.
func checkPoints(pairs []string) (map[string]int, error) {
	for _, p := range pairs {
		if name, _, ok := strings.Cut(p, "="); ok {
			if err := knownCheck(name, "--points"); err != nil {
				return nil, err
			}
		}
	}
	points, err := grade.ParsePoints(pairs, grade.Names())
	if err != nil {
		return nil, exitcode.Usagef("--points %v", err)
	}
	return points, nil
}

func lookPathReason(err error) string {
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err.Error()
	}
	return err.Error()
}
