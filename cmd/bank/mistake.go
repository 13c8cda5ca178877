package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/scenarios"
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
` + entryTable(mistakeEntries()),
		ValidArgsFunction: completeNames("mistake", mistakeEntries()),
		Args:              oneName("mistake", mistakeEntries()),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "list" {
				for _, m := range scenarios.Mistakes {
					fmt.Fprintf(a.io.Out, "%-20s %s: %s\n", m.Name, m.Summary, m.Happens)
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
	o, err := a.showOptions(ctx, f)
	if err != nil {
		return err
	}
	if o.Bank, err = os.Executable(); err != nil {
		return err
	}
	page, err := a.startPage(f.html, &o)
	if err != nil {
		return err
	}
	defer page.discard()
	db, err := a.openDatabase(ctx)
	if err != nil {
		return err
	}
	defer db.close()
	list := scenarios.Mistakes
	if name != "all" {
		m, _ := scenarios.LookupMistake(name)
		list = []*scenarios.Mistake{m}
	}
	failed := []string{}
	for _, m := range list {
		v, err := scenarios.RunMistake(ctx, db.cluster, m, a.io.Out, o)
		if err != nil {
			return err
		}
		if !v.Reproduced() {
			failed = append(failed, m.Name)
		}
	}
	if err := page.write(); err != nil {
		return err
	}
	if name == "all" && !f.json {
		fmt.Fprintf(a.io.Out, "%-20s %-46s %s\n", "mistake", "what happens", "verdict")
		for _, m := range list {
			verdict := "reproduced, fix held"
			for _, n := range failed {
				if n == m.Name {
					verdict = "NOT reproduced"
				}
			}
			fmt.Fprintf(a.io.Out, "%-20s %-46s %s\n", m.Name, m.Summary, verdict)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(a.io.Err, "bank: did not come out as the lesson teaches: %s\n", strings.Join(failed, ", "))
		return silentExit{exitNo}
	}
	return nil
}

func mistakeEntries() []entry {
	return entriesOf(scenarios.Mistakes, func(m *scenarios.Mistake) entry { return entry{m.Name, m.Summary} })
}
