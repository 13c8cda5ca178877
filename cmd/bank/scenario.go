package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/htmlpage"
	"github.com/zudojs/bank/cmd/bank/internal/names"
	"github.com/zudojs/bank/cmd/bank/internal/quiz"
	"github.com/zudojs/bank/cmd/bank/internal/term"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/render"
)

type scenarioFlags struct {
	step, explain, json, keep, predict bool
	diagram                            bool
	html                               string
	width                              int
}

// pictureFlags are the flags that draw a run, for scenario and mistake.
func pictureFlags(cmd *cobra.Command, f *scenarioFlags) {
	cmd.Flags().BoolVar(&f.diagram, "diagram", false, "draw the run as a sequence diagram (one lane per actor, time going down) instead of its transcript")
	cmd.Flags().IntVar(&f.width, "width", 0, fmt.Sprintf("fit the transcript or diagram in this many columns (default: the terminal's, else 80; the smallest is %d, %d for a diagram)", leastText, leastDiagram))
	cmd.Flags().StringVar(&f.html, "html", "", "also write the run as one self-contained web page (diagram, step notes, balances and keys after each step) to this file")
}

func (a *app) scenarioCommand() *cobra.Command {
	var f scenarioFlags
	cmd := &cobra.Command{
		Use:   "scenario NAME | list | all",
		Short: "Run a lesson on a real PostgreSQL and check its invariants",
		Long: `Run one of the lesson's scenarios in a fresh database and print what happened,
then the invariant checks: the bank's total stays ₦75,000, balances match the
ledger, and each intent moves money once.

Exit status: 0 when the scenario came out as the lesson teaches (including a
failure scenario whose failure happened), 1 when it did not, 2 for a bad
command line, 3 when PostgreSQL could not be started or reached.

What each scenario shows, and the flags for class: bank help scenarios.`,
		Example: `  bank scenario list
  bank scenario crash --explain
  bank scenario all --no-color

The scenarios, in the lesson's order:
` + names.Table(scenarioEntries()),
		ValidArgsFunction: names.Complete("scenario", scenarioEntries()),
		Args:              names.One("scenario", scenarioEntries()),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "list" {
				a.listScenarios()
				return nil
			}
			return a.runScenarios(cmd.Context(), args[0], f)
		},
	}
	cmd.Flags().BoolVar(&f.step, "step", false, "wait for Enter before each step (on a terminal)")
	cmd.Flags().BoolVar(&f.explain, "explain", false, "say what each step is about before it runs")
	cmd.Flags().BoolVar(&f.json, "json", false, "print one JSON object per line instead of the transcript")
	cmd.Flags().BoolVar(&f.keep, "keep", false, "keep the scenario's database and print its name, to look at with psql")
	cmd.Flags().BoolVar(&f.predict, "predict", false, "predict the outcomes first (a class question), then watch the run mark them (on a terminal)")
	pictureFlags(cmd, &f)
	return cmd
}

func (a *app) listScenarios() {
	for _, s := range scenarios.All {
		row(a.io.Out, a.listColumns(), fmt.Sprintf("%-*s ", nameWidth(), s.Name), s.Summary)
	}
}

// checkShowFlags refuses display flags that cannot go together.
func checkShowFlags(f scenarioFlags) error {
	switch {
	case f.diagram && f.json:
		return exitcode.Usagef("--diagram and --json each replace the transcript: choose one (the JSON carries the diagram's messages)")
	case f.diagram && f.step:
		return exitcode.Usagef("--diagram is drawn once the run is over, so it cannot wait at each step: use bank lab to step through a diagram")
	case f.diagram && f.explain:
		return exitcode.Usagef("--explain's notes go with the transcript, which --diagram replaces: use --html FILE or bank lab for the diagram with the notes")
	case f.diagram && f.predict:
		return exitcode.Usagef("--predict marks the transcript's lines, which --diagram replaces: choose one")
	case f.width != 0 && f.diagram && f.width < leastDiagram:
		return exitcode.Usagef("--width %d is too narrow to draw a diagram in: give %d or more (80 is the default)", f.width, leastDiagram)
	case f.width != 0 && f.width < leastText:
		return exitcode.Usagef("--width %d is too narrow for a transcript: give %d or more (80 is the default)", f.width, leastText)
	case f.width != 0 && f.json:
		return exitcode.Usagef("--width shapes the transcript and the diagram; --json prints objects, not lines: choose one")
	}
	return nil
}

// showOptions turns the display flags into the lab's options: the sink
// that draws the run on the output (a transcript, JSON lines or a
// diagram) and, with --html, the page's recorder beside it.
func (a *app) showOptions(ctx context.Context, f scenarioFlags, ro render.Options, p *htmlpage.Page) (lab.Options, error) {
	color, err := a.colorOn()
	if err != nil {
		return lab.Options{}, err
	}
	o := lab.Options{Keep: f.keep}
	ro.Explain, ro.Color, ro.Width = f.explain, color, f.width
	if ro.Width == 0 {
		least := leastText
		if f.diagram {
			least = leastDiagram
		}
		ro.Width = a.terminalColumns(least)
	}
	switch {
	case f.step && !f.json && term.IsTerminal(a.io.In) && term.IsTerminal(a.io.Out):
		ro.Pause = term.EnterPrompt(ctx, a.lines(), a.io.Out, "  [Enter] next step: %s ")
	case f.step:
		// Said once, on stderr: the transcript itself stays as it is.
		fmt.Fprintln(a.io.Err, "bank: --step waits for Enter only on a terminal; running straight through")
	}
	switch {
	case f.json:
		o.Sink = render.JSON(a.io.Out)
	case f.diagram:
		o.Sink = render.Diagram(a.io.Out, color, ro.Width)
	default:
		o.Sink = render.Text(a.io.Out, ro)
	}
	if p != nil {
		o.Sink, o.States = lab.Tee{o.Sink, p.Rec}, true
	}
	return o, nil
}

// show is one run of bank scenario or bank mistake: the options that say
// where its runs are drawn (the output, and the page of --html), and the
// database they run in.
type show struct {
	lab.Options
	page *htmlpage.Page
	db   *database
}

// startShow checks the display flags, prepares the page and the sink, and
// opens the database. Close it when done.
func (a *app) startShow(ctx context.Context, f scenarioFlags, ro render.Options) (*show, error) {
	if err := checkShowFlags(f); err != nil {
		return nil, err
	}
	s := &show{}
	var err error
	if s.page, err = htmlpage.Start(f.html, "crash.html", &a.io.Out); err != nil {
		return nil, err
	}
	if s.Options, err = a.showOptions(ctx, f, ro, s.page); err == nil {
		s.db, err = a.openDatabase(ctx)
	}
	if err != nil {
		s.page.Discard()
		return nil, err
	}
	return s, nil
}

func (s *show) close() {
	s.db.close()
	s.page.Discard()
}

func (a *app) runScenarios(ctx context.Context, name string, f scenarioFlags) error {
	if err := checkShowFlags(f); err != nil {
		return err
	}
	if f.keep && name == "all" {
		return exitcode.Usagef("--keep works with one scenario at a time")
	}
	if f.predict && name == "all" {
		return exitcode.Usagef("--predict works with one scenario at a time")
	}
	var ro render.Options
	if f.predict {
		var err error
		if ro.Predictions, err = a.predictions(ctx, name); err != nil {
			return err
		}
	}
	show, err := a.startShow(ctx, f, ro)
	if err != nil {
		return err
	}
	defer show.close()
	var kept *pgserver.Database
	show.Kept = func(d *pgserver.Database) { kept = d }

	list := scenarios.Lessons
	if name != "all" {
		sc, _ := scenarios.Lookup(name)
		list = []*lab.Scenario{sc}
	}
	var verdicts []lab.Verdict
	for _, sc := range list {
		v, err := lab.Run(ctx, show.db.clones, sc, show.Options)
		if err != nil {
			return err
		}
		verdicts = append(verdicts, v)
	}
	if name == "all" {
		a.summary(verdicts, f.json)
	}
	if err := show.page.Write(); err != nil {
		return err
	}
	if kept != nil {
		a.announceKept(ctx, show.db, kept)
	}
	for _, v := range verdicts {
		if !v.Reproduced {
			if name != "all" {
				fmt.Fprintf(a.io.Err, "bank: %s did not come out as the lesson teaches: %s\n", v.Scenario, strings.Join(v.Differences(), "; "))
			} else {
				fmt.Fprintln(a.io.Err, "bank: some scenarios did not come out as the lesson teaches (see the table)")
			}
			return exitcode.Silent{Code: exitcode.No}
		}
	}
	return nil
}

// summary is the table that ends `bank scenario all`.
func (a *app) summary(verdicts []lab.Verdict, asJSON bool) {
	if asJSON {
		type line struct {
			Scenario string `json:"scenario"`
			Verdict  string `json:"verdict"`
		}
		rows := make([]line, len(verdicts))
		for i, v := range verdicts {
			rows[i] = line{v.Scenario, render.PassOrFail(v.Reproduced)}
		}
		_ = json.NewEncoder(a.io.Out).Encode(summaryLine{render.EventsSchema, "summary", rows, nil})
		return
	}
	w := a.io.Out
	row(w, 0, fmt.Sprintf("%-*s %-18s ", nameWidth(), "scenario", "verdict"), "what it demonstrates")
	for _, v := range verdicts {
		sc, _ := scenarios.Lookup(v.Scenario)
		row(w, 0, fmt.Sprintf("%-*s %-18s ", nameWidth(), v.Scenario, verdictWord(v)), sc.Summary)
	}
	solved := make([]string, len(scenarios.Solutions))
	for i, s := range scenarios.Solutions {
		solved[i] = s.Name
	}
	fmt.Fprintln(w)
	row(w, 0, "", fmt.Sprintf("Not run here: the lesson's exercises solved (%s), which would give their answers away. Try them first: bank exercise list. Then bank scenario NAME plays the lab's solution.", strings.Join(solved, ", ")))
}

func verdictWord(v lab.Verdict) string {
	switch {
	case !v.Reproduced:
		return "NOT reproduced"
	case v.ShowsBreak:
		return "failure reproduced"
	}
	return "invariants held"
}

func (a *app) announceKept(ctx context.Context, db *database, kept *pgserver.Database) {
	if db.server == nil {
		fmt.Fprintf(a.io.Err, "bank: kept database %s on the server --database-url names\n", kept.Name)
		return
	}
	// One command on Unix; on Windows one for cmd.exe, then one for PowerShell.
	fmt.Fprintf(a.io.Err, "bank: kept database %s; look at it", kept.Name)
	for i, c := range db.server.Psql(kept.Name) {
		if i > 0 {
			fmt.Fprint(a.io.Err, "or")
		}
		if c.Shell != "" {
			fmt.Fprintf(a.io.Err, " in %s", c.Shell)
		}
		fmt.Fprintf(a.io.Err, " with\n  %s\n", c.Line)
	}
	if note := db.server.NoPsqlNote(kept.Name); note != "" {
		fmt.Fprintf(a.io.Err, "bank: %s\n", note)
	}
	fmt.Fprintln(a.io.Err, "bank: the private PostgreSQL stays up until you press Ctrl-C")
	<-ctx.Done()
}

// row prints one row of a table that lists stories: lead (the name, and
// any short columns) then text, folded to width columns (80 when 0) under
// itself.
func row(w io.Writer, width int, lead, text string) {
	for _, l := range render.Fold(lead+text, width, strings.Repeat(" ", utf8.RuneCountInString(lead))) {
		fmt.Fprintln(w, l)
	}
}

func scenarioEntries() []names.Entry {
	return names.EntriesOf(scenarios.All, func(s *lab.Scenario) names.Entry { return names.Entry{Name: s.Name, Summary: s.Summary} })
}

// nameWidth is the width of the name column: the longest scenario name.
func nameWidth() int {
	w := 0
	for _, s := range scenarios.All {
		w = max(w, len(s.Name))
	}
	return w
}

// predictions asks, before the run, the quiz's questions about scenario
// (on a terminal only); Ctrl-C at a question is ctx's error.
func (a *app) predictions(ctx context.Context, scenario string) ([]render.Prediction, error) {
	if !term.IsTerminal(a.io.In) || !term.IsTerminal(a.io.Out) {
		fmt.Fprintln(a.io.Err, "bank: --predict asks on a terminal; running straight through")
		return nil, nil
	}
	ps, asked, err := quiz.Predict(ctx, a.io.Out, a.lines(), scenario)
	if !asked {
		fmt.Fprintf(a.io.Err, "bank: no questions about %s yet; running it\n", scenario)
	}
	return ps, err
}
