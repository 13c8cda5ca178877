package clientgrade

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

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/grade/card"
	"github.com/zudojs/bank/cmd/bank/internal/names"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
)

// Host is what bank grade client needs of the bank command around it.
type Host struct {
	Out, Err io.Writer
	// Database opens the PostgreSQL the checks' banks are made in, from
	// tmpl; NewDatabase is Config's, close ends it.
	Database func(ctx context.Context, tmpl pgserver.Template) (newDatabase func(ctx context.Context, label string) (string, string, func(), error), close func() error, err error)
	// Colour says whether the card is in colour (an error for a bad
	// --color); Card prints the card for people; JSON writes it for tools.
	Colour func() (bool, error)
	Card   func(rep grade.Report, g card.Graded, colour bool)
	JSON   func(rep grade.Report) error
	// Verdict is the grade's exit, from its report: with strict, a
	// failed recommended check fails it too.
	Verdict func(rep grade.Report, strict bool) error
}

// flags are bank grade client's.
type flags struct {
	contract, json, strict bool
	starter, workflow      string
	junit, html            string
	timeout                time.Duration
	only, points           []string
	jobs, repeat           int
}

// Command is bank grade client.
func Command(h Host) *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:   "client [flags] -- CMD [ARGS…]",
		Short: "Throw a misbehaving server at your own client, in any language, and get a report card",
		Long: `Grade a client of your own against the lesson's rules for the app. For every
check, bank grade client serves the lesson's bank itself, behind a front that
misbehaves on purpose (a lost reply, a hung attempt, 409, 429 and 503 with
Retry-After, a 500, a refusal, a server that never answers again), and runs
CMD with BANK_URL, BANK_TOKEN, TRANSFER, DRAFTS and ATTEMPT_TIMEOUT_MS in its
environment; one check kills it mid-transfer and starts it again. What moved
in the bank, the attempts the front saw and the outcome CMD reported make each
line of the card.

See the contract (what the client must do) with bank grade client
--contract, and what each check proves with bank help grade.

Exit status: 0 when every required check passes, 1 when one fails, 2 for a
bad command line, 3 when the client cannot be run, 4 when none failed but
one could not tell.`,
		Example: `  bank grade client --contract
  bank grade client -- node client.mjs
  bank grade client -- python3 client.py
  bank grade client -- bank send --client-contract   # the lab's own: passes
  bank grade client --starter node my-client   # a client to start from
  bank grade client --only lost-reply,restart -- ./myclient
  bank grade client --repeat 20 -- ./myclient
  bank grade client --junit grade.xml --html grade.html -- ./myclient
  bank grade client --workflow actions -- node client.mjs`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case f.contract && len(args) > 0:
				return exitcode.Usagef("--contract prints the contract and runs nothing; drop it to grade %q", strings.Join(args, " "))
			case f.contract:
				fmt.Fprint(h.Out, Contract())
				return nil
			case f.starter != "":
				return Starters.Run(h.Out, f.starter, args, cmd.ArgsLenAtDash(), "bank grade client")
			case cmd.ArgsLenAtDash() != 0 || len(args) == 0:
				return exitcode.Usagef("name your client's command after --, such as: bank grade client -- node client.mjs (bank grade client --contract says what it must do)")
			case f.timeout < 100*time.Millisecond || f.timeout > 10*time.Second:
				return exitcode.Usagef("--attempt-timeout must be between 100ms and 10s, such as 1s")
			case f.repeat < 1 || f.repeat > 1000:
				return exitcode.Usagef("--repeat must be between 1 and 1000, such as 20")
			case f.jobs < 0 || f.jobs > 64:
				return exitcode.Usagef("--jobs must be between 1 and 64, such as 4")
			}
			if err := f.checkNames(); err != nil {
				return err
			}
			points, err := grade.ParsePoints(f.points, Names())
			if err != nil {
				return exitcode.Usagef("--points %v", err)
			}
			if f.workflow != "" {
				return printWorkflow(h.Out, f.workflow, args, points)
			}
			if _, err := exec.LookPath(args[0]); err != nil {
				var e *exec.Error
				if errors.As(err, &e) {
					err = e.Err
				}
				return exitcode.Envf("cannot run %q: %v; check the command after --", args[0], err)
			}
			return grading(cmd.Context(), h, f, Config{Command: args, AttemptTimeout: f.timeout, Only: f.only, Jobs: f.jobs, Repeat: f.repeat, Points: points})
		},
	}
	cmd.Flags().BoolVar(&f.contract, "contract", false, "print the contract the checks hold a client to, and exit")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the report card as JSON")
	cmd.Flags().StringVar(&f.starter, "starter", "", "write a small client to start from into the folder named after the flags ("+strings.Join(Starters.Languages(), ", ")+"): one send under its own key, no draft and no retry yet; then grade it")
	cmd.Flags().DurationVar(&f.timeout, "attempt-timeout", time.Second, "the bound on one attempt given to the client as ATTEMPT_TIMEOUT_MS")
	cmd.Flags().StringSliceVar(&f.only, "only", nil, "run only these checks (comma-separated): "+strings.Join(Names(), ", "))
	cmd.Flags().IntVar(&f.repeat, "repeat", 1, "run each check N times, each on a fresh bank, and say how many runs failed")
	cmd.Flags().IntVar(&f.jobs, "jobs", 0, fmt.Sprintf("checks run side by side (default %d here: twice the cores, 2 to 6)", grade.DefaultJobs()))
	cmd.Flags().StringVar(&f.junit, "junit", "", "also write the report as JUnit XML (one testcase per check) to this file, for CI; - for standard output instead of the card")
	cmd.Flags().StringVar(&f.html, "html", "", "also write the report card, with a sequence diagram of every check's attempts, as one self-contained web page to this file (- for standard output)")
	cmd.Flags().StringVar(&f.workflow, "workflow", "", "print a CI file that grades the command after -- in your repository, and exit: actions (GitHub Actions, the checks published from --junit) or classroom (GitHub Classroom's autograding, a test per check worth its --points)")
	cmd.Flags().StringSliceVar(&f.points, "points", nil, "what a passed check is worth in --json and --junit, as NAME=N (comma-separated; 1 each unless named), such as restart=5")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "exit 1 when any check fails, the recommended one (lookup) too")
	return cmd
}

// checkNames refuses a name in --only or --points that is no check's.
func (f flags) checkNames() error {
	named := map[string][]string{"--only": f.only}
	for _, p := range f.points {
		name, _, _ := strings.Cut(p, "=")
		named["--points"] = append(named["--points"], name)
	}
	for _, flag := range []string{"--only", "--points"} {
		for _, name := range named[flag] {
			if !slices.Contains(Names(), name) {
				return exitcode.Usagef("unknown check %q%s in %s; checks: %s", name, names.DidYouMean(name, Names()), flag, strings.Join(Names(), ", "))
			}
		}
	}
	return nil
}

// Graded is the card's account of a grade of command.
func Graded(command []string, attemptTimeout time.Duration) card.Graded {
	g := card.Graded{Client: true, Command: command, Given: []string{fmt.Sprintf("ATTEMPT_TIMEOUT_MS=%d", attemptTimeout.Milliseconds())}}
	for _, c := range Checks {
		g.Checks = append(g.Checks, card.Listed{Name: c.Name, Title: c.Title})
	}
	return g
}

// printWorkflow is bank grade client --workflow KIND -- CMD.
func printWorkflow(out io.Writer, kind string, command []string, points map[string]int) error {
	if !slices.Contains(card.Workflows, kind) {
		return exitcode.Usagef("no workflow %q%s: choose %s", kind, names.DidYouMean(kind, card.Workflows), strings.Join(card.Workflows, " or "))
	}
	w, err := card.Workflow(kind, Graded(command, time.Second), points)
	if err != nil {
		return err
	}
	fmt.Fprint(out, w)
	return nil
}

// grading runs the grade and writes its card, and the files asked for.
func grading(ctx context.Context, h Host, f flags, cfg Config) error {
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
	newDatabase, closeDB, err := h.Database(ctx, Template())
	if err != nil {
		return err
	}
	defer closeDB()
	cfg.NewDatabase = newDatabase
	if !f.json {
		cfg.Progress = h.Err
	}
	start := time.Now()
	rep, err := Run(ctx, cfg)
	if err != nil {
		return err
	}
	g := Graded(cfg.Command, cfg.AttemptTimeout)
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
