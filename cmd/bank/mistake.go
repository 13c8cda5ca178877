package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/names"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
	"github.com/zudojs/bank/scenarios/lab/mistakes/onpurpose"
	"github.com/zudojs/bank/scenarios/lab/render"
)

func (a *app) mistakeCommand() *cobra.Command {
	var f scenarioFlags
	cmd := &cobra.Command{
		Use:   "mistake NAME | list | all",
		Short: "Make one of the lesson's mistakes on purpose, then the fix, on the same steps",
		Long: `Run one row of the lesson's table of mistakes: the same steps twice, each in a
fresh bank, first with the mistake and then without it, and their invariant
checks side by side.

Exit status: 0 when the mistake did its damage and the fix held, 1 when not,
2 for a bad command line, 3 when PostgreSQL could not be started or reached.

Each mistake, and bank serve --mistake: bank help mistakes.`,
		Example: `  bank mistake list
  bank mistake no-fencing
  bank mistake all

The mistakes, in the order of the lesson's table:
` + names.Table(mistakeEntries()),
		ValidArgsFunction: names.Complete("mistake", mistakeEntries()),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if m, ok := mistakes.Named(args[0]); ok && !m.Story() {
					return exitcode.Usagef("%s has no story of its own: %s shows it done right (bank mistake list says where each mistake is shown)", m.Name, m.See)
				}
			}
			return names.One("mistake", mistakeEntries())(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "list" {
				a.listMistakes()
				return nil
			}
			return a.runMistakes(cmd.Context(), args[0], f)
		},
	}
	cmd.Flags().BoolVar(&f.step, "step", false, "wait for Enter before each step (on a terminal)")
	cmd.Flags().BoolVar(&f.explain, "explain", false, "say what each step is about before it runs")
	cmd.Flags().BoolVar(&f.json, "json", false, "print one JSON object per line instead of the transcript")
	pictureFlags(cmd, &f)
	return cmd
}

func (a *app) runMistakes(ctx context.Context, name string, f scenarioFlags) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	show, err := a.startShow(ctx, f, render.Options{})
	if err != nil {
		return err
	}
	defer show.close()
	show.Bank = self
	list := scenarios.Mistakes
	if name != "all" {
		m, _ := scenarios.LookupMistake(name)
		list = []*lab.Mistake{m}
	}
	var failed []string
	var verdicts []lab.MistakeVerdict
	for _, m := range list {
		v, err := lab.RunMistake(ctx, show.db.clones, m, show.Options)
		if err != nil {
			return err
		}
		verdicts = append(verdicts, v)
		if !v.Reproduced() {
			failed = append(failed, m.Name)
		}
	}
	if err := show.page.Write(); err != nil {
		return err
	}
	if name == "all" {
		a.mistakeSummary(verdicts, f.json)
	}
	if len(failed) > 0 {
		fmt.Fprintf(a.io.Err, "bank: did not come out as the lesson teaches: %s\n", strings.Join(failed, ", "))
		return exitcode.Silent{Code: exitcode.No}
	}
	return nil
}

// mistakeSummary is the table that ends bank mistake all: with --json,
// one object that lists each mistake and whether it reproduced.
func (a *app) mistakeSummary(verdicts []lab.MistakeVerdict, asJSON bool) {
	if asJSON {
		type line struct {
			Mistake string `json:"mistake"`
			Verdict string `json:"verdict"`
		}
		rows := make([]line, len(verdicts))
		for i, v := range verdicts {
			rows[i] = line{v.Mistake, render.PassOrFail(v.Reproduced())}
		}
		_ = json.NewEncoder(a.io.Out).Encode(summaryLine{render.EventsSchema, "summary", nil, rows})
		return
	}
	row(a.io.Out, 0, fmt.Sprintf("%-20s %-21s ", "mistake", "verdict"), "what happens")
	for _, v := range verdicts {
		m, _ := scenarios.LookupMistake(v.Mistake)
		verdict := "reproduced, fix held"
		if !v.Reproduced() {
			verdict = "NOT reproduced"
		}
		row(a.io.Out, 0, fmt.Sprintf("%-20s %-21s ", m.Name, verdict), m.Summary)
	}
}

// listMistakes prints the catalogue: the table's mistakes, which bank
// mistake NAME plays, then the others bank grade and bank torture name, each with the scenario that
// shows it done right; and which of them bank serve --mistake serves.
func (a *app) listMistakes() {
	w, cols := a.io.Out, a.listColumns()
	served := func(m mistakes.Mistake) string {
		if _, ok := onpurpose.Lookup(m.Name); ok {
			return " (bank serve --mistake " + m.Name + " serves it)"
		}
		return ""
	}
	// The stories first, a row each from the first column, as bank
	// scenario list prints its own (scripts read the names up to the
	// first blank line); then the others, indented under their heading.
	for _, m := range scenarios.Mistakes {
		row(w, cols, fmt.Sprintf("%-20s ", m.Name), m.Summary+": "+m.Happens+served(m.Mistake))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Mistakes bank grade and bank torture can name (no story of their own):")
	for _, m := range mistakes.Catalogue {
		if !m.Story() {
			row(w, cols, fmt.Sprintf("  %-20s ", m.Name), m.Summary+"; shown done right by "+m.See+served(m))
		}
	}
}

func mistakeEntries() []names.Entry {
	return names.EntriesOf(scenarios.Mistakes, func(m *lab.Mistake) names.Entry { return names.Entry{Name: m.Name, Summary: m.Summary} })
}

// summaryLine is the last JSON line of scenario all and mistake all.
type summaryLine struct {
	Schema    string `json:"schema"`
	Kind      string `json:"kind"`
	Scenarios any    `json:"scenarios,omitempty"`
	Mistakes  any    `json:"mistakes,omitempty"`
}

// mistakeFlag adds --mistake NAME, which runs the server made wrong on
// purpose with that mistake of the catalogue, and --break, its old name,
// kept hidden so that commands written before still work.
func mistakeFlag(fs *pflag.FlagSet, p *string, usage string) {
	usage += ": " + strings.Join(onpurpose.Names(), ", ")
	fs.StringVar(p, "mistake", "", usage)
	fs.StringVar(p, "break", "", usage)
	_ = fs.MarkHidden("break")
}

// checkMistakeFlag refuses a --mistake the lab cannot serve, saying why:
// a name not in the catalogue, or a mistake with no server of its own.
func checkMistakeFlag(name string) error {
	if name == "" {
		return nil
	}
	if _, ok := onpurpose.Lookup(name); ok {
		return nil
	}
	served := strings.Join(onpurpose.Names(), ", ")
	if m, ok := mistakes.Named(name); ok {
		return exitcode.Usagef("--mistake %s: the lab has no server made with that mistake (%s shows it done right); it serves %s", name, m.See, served)
	}
	return exitcode.Usagef("--mistake %s is not a mistake of the lab's: it serves %s (bank mistake list names every mistake)", name, served)
}
