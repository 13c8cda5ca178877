package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/names"
	"github.com/zudojs/bank/scenarios"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/render"
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

Each mistake, and bank serve --break: bank help mistakes.`,
		Example: `  bank mistake list
  bank mistake no-fencing
  bank mistake all

The mistakes, in the order of the lesson's table:
` + names.Table(mistakeEntries()),
		ValidArgsFunction: names.Complete("mistake", mistakeEntries()),
		Args:              names.One("mistake", mistakeEntries()),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "list" {
				for _, m := range scenarios.Mistakes {
					row(a.io.Out, a.listColumns(), fmt.Sprintf("%-20s ", m.Name), m.Summary+": "+m.Happens)
				}
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
