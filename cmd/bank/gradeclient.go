package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/clientgrade"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/grade/card"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
)

// gradeClientCommand is bank grade client (package clientgrade), wired to
// the command's database, colour and outputs.
func (a *app) gradeClientCommand() *cobra.Command {
	return clientgrade.Command(clientgrade.Host{
		Out: a.io.Out, Err: a.io.Err,
		Database: func(ctx context.Context, tmpl pgserver.Template) (func(context.Context, string) (string, string, func(), error), func() error, error) {
			db, err := a.openDatabaseFor(ctx, tmpl, false)
			if err != nil {
				return nil, nil, err
			}
			return db.forLearner, db.close, nil
		},
		Colour: a.colorOn,
		Card: func(rep grade.Report, g card.Graded, colour bool) {
			card.Print(a.io.Out, rep, g, colour, a.verbose, a.terminalColumns(leastDiagram))
		},
		JSON:    func(rep grade.Report) error { return writeJSON(a.io.Out, rep) },
		Verdict: func(rep grade.Report, strict bool) error { return gradeVerdict(a, rep, strict) },
	})
}
