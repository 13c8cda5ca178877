// Package gradecmd is the command of a grader of another of the learner's
// programs (bank grade client, bank grade webhook): the same flags, the
// same errors and the same outputs as bank grade's, around the grader's
// own contract, checks and run. Each grader says what is its own in a
// Grader; the bank command gives the Host.
package gradecmd

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
	"github.com/spf13/pflag"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/grade/card"
	"github.com/zudojs/bank/cmd/bank/internal/grade/starter"
	"github.com/zudojs/bank/cmd/bank/internal/names"
	"github.com/zudojs/bank/cmd/bank/internal/served"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
)

// Host is what a grader needs of the bank command around it.
type Host struct {
	Out, Err io.Writer
	// Database opens the PostgreSQL the checks' databases are made in,
	// from tmpl: newDatabase makes one for a check, close ends it all.
	Database func(ctx context.Context, tmpl pgserver.Template) (newDatabase func(ctx context.Context, label string) (string, string, func(), error), close func() error, err error)
	// Colour says whether the card is in colour (an error for a bad
	// --color); Card prints the card for people; JSON writes it for tools.
	Colour func() (bool, error)
	Card   func(rep grade.Report, g card.Graded, colour bool)
	JSON   func(rep grade.Report) error
	// Verdict is the grade's exit, from its report: with strict, a
	// failed recommended check fails it too.
	Verdict func(rep grade.Report, strict bool) error
	// Keep records a whole grade (no --only) for bank grade hops.
	Keep func(of string, command []string, rep grade.Report)
}

// Common are the flags every grader takes, as a run needs them.
type Common struct {
	Command      []string
	Only         []string
	Jobs, Repeat int
	Points       map[string]int
	NewDatabase  func(ctx context.Context, label string) (string, string, func(), error)
	Progress     io.Writer
}

// Grader is what is a grader's own.
type Grader struct {
	Of                   string // what it grades, as card.Graded says it: "client", "webhook"
	Noun                 string // the program, in the errors: "client", "consumer"
	Sample               string // a command of one, in the errors: "node client.mjs"
	Short, Long, Example string
	Names                func() []string
	Listed               []card.Listed // its checks, for the workflows
	Contract             func() string
	Starters             *starter.Kit
	Starter              string // what --starter writes, after "write a small … into the folder named after it (…)"
	Template             pgserver.Template
	// Flags adds its own flags; Check checks them (a usage error); Given
	// is what the program is given, for the card (NAME=VALUE).
	Flags func(fs *pflag.FlagSet)
	Check func() error
	Given func() []string
	// Run grades, with the grader's own flags in its closure.
	Run func(ctx context.Context, c Common) (grade.Report, error)
}

func (gr Grader) graded(command []string) card.Graded {
	return card.Graded{Of: gr.Of, Command: command, Given: gr.Given(), Checks: gr.Listed}
}

// flags are every grader's.
type flags struct {
	contract, json, strict bool
	starter, workflow      string
	junit, html            string
	only, points           []string
	jobs, repeat           int
}

// Command is the grader's command, on h.
func (gr Grader) Command(h Host) *cobra.Command {
	var f flags
	tool := "bank grade " + gr.Of
	cmd := &cobra.Command{
		Use: gr.Of + " [flags] -- CMD [ARGS…]", Short: gr.Short, Long: gr.Long, Example: gr.Example,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case f.contract && len(args) > 0:
				return exitcode.Usagef("--contract prints the contract and runs nothing; drop it to grade %q", strings.Join(args, " "))
			case f.contract:
				fmt.Fprint(h.Out, gr.Contract())
				return nil
			case f.starter != "" && gr.Starters != nil:
				return gr.Starters.Run(h.Out, f.starter, args, cmd.ArgsLenAtDash(), tool)
			case cmd.ArgsLenAtDash() != 0 || len(args) == 0:
				return exitcode.Usagef("name your %s's command after --, such as: %s -- %s (%s --contract says what it must do)", gr.Noun, tool, gr.Sample, tool)
			case f.repeat < 1 || f.repeat > 1000:
				return exitcode.Usagef("--repeat must be between 1 and 1000, such as 20")
			case f.jobs < 0 || f.jobs > 64:
				return exitcode.Usagef("--jobs must be between 1 and 64, such as 4")
			}
			if err := gr.Check(); err != nil {
				return err
			}
			if err := f.checkNames(gr.Names()); err != nil {
				return err
			}
			points, err := grade.ParsePoints(f.points, gr.Names())
			if err != nil {
				return exitcode.Usagef("--points %v", err)
			}
			if f.workflow != "" {
				return gr.printWorkflow(h.Out, f.workflow, args, points)
			}
			if _, err := exec.LookPath(args[0]); err != nil {
				var e *exec.Error
				if errors.As(err, &e) {
					err = e.Err
				}
				return exitcode.Envf("cannot run %q: %v; check the command after --", args[0], err)
			}
			return gr.grading(cmd.Context(), h, f, Common{Command: args, Only: f.only, Jobs: f.jobs, Repeat: f.repeat, Points: points})
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.contract, "contract", false, "print the contract the checks hold a "+gr.Noun+" to, and exit")
	fs.BoolVar(&f.json, "json", false, "print the report card as JSON")
	if gr.Starters != nil {
		fs.StringVar(&f.starter, "starter", "", "write a small "+gr.Noun+" to start from, in `LANG` ("+strings.Join(gr.Starters.Languages(), ", ")+"), into the folder named after it (--starter node my-"+gr.Noun+"): "+gr.Starter+"; then grade it")
	}
	gr.Flags(fs)
	fs.StringSliceVar(&f.only, "only", nil, "run only these checks (comma-separated): "+strings.Join(gr.Names(), ", "))
	fs.IntVar(&f.repeat, "repeat", 1, "run each check N times, each on a fresh database, and say how many runs failed")
	fs.IntVar(&f.jobs, "jobs", 0, fmt.Sprintf("checks run side by side (default %d here: twice the cores, 2 to 6)", grade.DefaultJobs()))
	fs.StringVar(&f.junit, "junit", "", "also write the report as JUnit XML (one testcase per check) to this file, for CI; - for standard output instead of the card")
	fs.StringVar(&f.html, "html", "", "also write the report card, with a sequence diagram of every check, as one self-contained web page to this file (- for standard output)")
	fs.StringVar(&f.workflow, "workflow", "", "print a CI file that grades the command after -- in your repository, and exit: actions (GitHub Actions, the checks published from --junit) or classroom (GitHub Classroom's autograding, a test per check worth its --points)")
	fs.StringSliceVar(&f.points, "points", nil, fmt.Sprintf("what a passed check is worth in --json and --junit, as NAME=N (comma-separated; 1 each unless named), such as %s=5", gr.Names()[len(gr.Names())-2]))
	fs.BoolVar(&f.strict, "strict", false, "exit 1 when any check fails, the recommended ones too")
	return cmd
}

// checkNames refuses a name in --only or --points that is no check's.
func (f flags) checkNames(checks []string) error {
	named := map[string][]string{"--only": f.only}
	for _, p := range f.points {
		name, _, _ := strings.Cut(p, "=")
		named["--points"] = append(named["--points"], name)
	}
	for _, flag := range []string{"--only", "--points"} {
		for _, name := range named[flag] {
			if !slices.Contains(checks, name) {
				return exitcode.Usagef("unknown check %q%s in %s; checks: %s", name, names.DidYouMean(name, checks), flag, strings.Join(checks, ", "))
			}
		}
	}
	return nil
}

// printWorkflow is --workflow KIND -- CMD.
func (gr Grader) printWorkflow(out io.Writer, kind string, command []string, points map[string]int) error {
	if !slices.Contains(card.Workflows, kind) {
		return exitcode.Usagef("no workflow %q%s: choose %s", kind, names.DidYouMean(kind, card.Workflows), strings.Join(card.Workflows, " or "))
	}
	w, err := card.Workflow(kind, gr.graded(command), points)
	if err != nil {
		return err
	}
	fmt.Fprint(out, w)
	return nil
}

// grading runs the grade and writes its card, and the files asked for.
func (gr Grader) grading(ctx context.Context, h Host, f flags, c Common) error {
	colour, err := h.Colour()
	if err != nil {
		return err
	}
	out := h.Out
	files, err := card.OpenFiles(f.junit, f.html, f.json, &out)
	if err != nil {
		return err
	}
	defer files.Discard()
	newDatabase, closeDB, err := h.Database(ctx, gr.Template)
	if err != nil {
		return err
	}
	defer closeDB()
	c.NewDatabase = newDatabase
	if !f.json {
		c.Progress = h.Err
	}
	start := time.Now()
	rep, err := gr.Run(ctx, c)
	var se *served.StartError
	if errors.As(err, &se) {
		// The program would not start: the environment's failure, not a
		// verdict, said with what it wrote last.
		msg := "bank: " + se.Why
		if out := strings.TrimSpace(se.Stderr); out != "" {
			msg += "\nits last output:\n  " + strings.ReplaceAll(out, "\n", "\n  ")
		}
		fmt.Fprintln(h.Err, msg)
		if se.Busy {
			return exitcode.Silent{Code: exitcode.Unknown}
		}
		return exitcode.Silent{Code: exitcode.Env}
	}
	if err != nil {
		return err
	}
	if len(c.Only) == 0 && h.Keep != nil {
		h.Keep(gr.Of, c.Command, rep)
	}
	g := gr.graded(c.Command)
	if err := files.Write(rep, g, time.Since(start)); err != nil {
		return err
	}
	switch {
	case f.json:
		if err := h.JSON(rep); err != nil {
			return err
		}
	case files.CardShown() && out != io.Discard:
		h.Card(rep, g, colour)
	}
	return h.Verdict(rep, f.strict)
}
