package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/zudojs/bank/cmd/bank/internal/clientgrade"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/grade/card"
	"github.com/zudojs/bank/cmd/bank/internal/grade/gradecmd"
	"github.com/zudojs/bank/cmd/bank/internal/hookgrade"
	"github.com/zudojs/bank/cmd/bank/internal/hops"
	"github.com/zudojs/bank/cmd/bank/internal/payoutgrade"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
)

// graderHost is the command's database, colour and outputs, as the
// graders of the learner's other programs need them; tcp: the program is
// given a database URL of its own (over loopback TCP, every driver's).
func (a *app) graderHost(tcp bool) gradecmd.Host {
	return gradecmd.Host{
		Out: a.io.Out, Err: a.io.Err,
		Database: func(ctx context.Context, tmpl pgserver.Template) (func(context.Context, string) (string, string, func(), error), func() error, error) {
			db, err := a.openDatabaseFor(ctx, tmpl, tcp)
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
		Keep:    func(of string, command []string, rep grade.Report) { hops.Keep(a.getenv, a.io.Err, of, command, rep) },
	}
}

// gradeClientCommand is bank grade client (package clientgrade); the
// client never sees a database.
func (a *app) gradeClientCommand() *cobra.Command { return clientgrade.Command(a.graderHost(false)) }

// gradeWebhookCommand is bank grade webhook (package hookgrade), and
// gradePayoutCommand bank grade payout (package payoutgrade).
func (a *app) gradeWebhookCommand() *cobra.Command { return hookgrade.Command(a.graderHost(true)) }
func (a *app) gradePayoutCommand() *cobra.Command  { return payoutgrade.Command(a.graderHost(true)) }
