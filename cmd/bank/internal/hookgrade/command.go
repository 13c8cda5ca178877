package hookgrade

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/grade/card"
	"github.com/zudojs/bank/cmd/bank/internal/grade/gradecmd"
)

// Command is bank grade webhook (package gradecmd), on h.
func Command(h gradecmd.Host) *cobra.Command {
	startTimeout := 20 * time.Second
	var listed []card.Listed
	for _, c := range Checks {
		listed = append(listed, card.Listed{Name: c.Name, Title: c.Title})
	}
	return gradecmd.Grader{
		Of: "webhook", Noun: "consumer", Sample: "node consumer.mjs",
		Short: "Deliver a payment provider's webhooks, at least once, to your own consumer, and get a report card",
		Long: `Grade a webhook consumer of your own against the outline's inbound webhooks.
For every check, bank grade webhook makes a fresh database (the lesson's bank,
seeded, with its deposits), starts CMD with DATABASE_URL, PORT and
WEBHOOK_SECRET in its environment, and plays the payment provider: it signs
"payment received" events as Standard Webhooks 1.0 says and delivers them at
least once: the same event again, its 2xx lost, a twin event about the same
payment, copies while the first is mid-transaction, events out of order, a
forged signature, a stale timestamp. It holds the consumer's transactions at
their first write and kills it there, and reads from PostgreSQL what it wrote
and in which transaction: each payment credited once, its event recorded in
the credit's own transaction.

See the contract (what the consumer must do) with bank grade webhook
--contract, and what each check proves with bank help grade.

Exit status: 0 when every required check passes, 1 when one fails, 2 for a
bad command line, 3 when the consumer cannot be run, 4 when none failed but
one could not tell.`,
		Example: `  bank grade webhook --contract
  bank grade webhook -- node consumer.mjs
  bank grade webhook -- python3 consumer.py
  bank grade webhook --starter node my-consumer   # a consumer to start from
  bank grade webhook --only twin,killed -- ./consumer
  bank grade webhook --repeat 20 -- ./consumer
  bank grade webhook --junit grade.xml --html grade.html -- ./consumer`,
		Names: Names, Listed: listed, Contract: Contract, Template: Template(),
		Starters: &Starters, Starter: "every delivery credited, no signature check and no record of the events yet",
		Flags: func(fs *pflag.FlagSet) {
			fs.DurationVar(&startTimeout, "start-timeout", 20*time.Second, "how long the consumer may take to listen on its PORT")
		},
		Check: func() error {
			if startTimeout <= 0 {
				return exitcode.Usagef("--start-timeout must be positive, such as 20s")
			}
			return nil
		},
		Given: func() []string { return nil },
		Run: func(ctx context.Context, c gradecmd.Common) (grade.Report, error) {
			return Run(ctx, Config{Command: c.Command, StartTimeout: startTimeout, Only: c.Only, Jobs: c.Jobs, Repeat: c.Repeat,
				Points: c.Points, NewDatabase: c.NewDatabase, Progress: c.Progress})
		},
	}.Command(h)
}
