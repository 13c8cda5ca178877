package payoutgrade

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zudojs/bank/cmd/bank/internal/exitcode"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/grade/card"
	"github.com/zudojs/bank/cmd/bank/internal/grade/gradecmd"
)

// Command is bank grade payout (package gradecmd), on h.
func Command(h gradecmd.Host) *cobra.Command {
	timeout := time.Second
	var listed []card.Listed
	for _, c := range Checks {
		listed = append(listed, card.Listed{Name: c.Name, Title: c.Title})
	}
	return gradecmd.Grader{
		Of: "payout", Noun: "worker", Sample: "node worker.mjs",
		Short: "Run your own payout worker against a payment rail that misbehaves, and get a report card",
		Long: `Grade a payout worker of your own against the outline's outbound calls to the
rails. For every check, bank grade payout makes a fresh database (the lesson's
bank and its payout outbox), plays a payment rail that pays a reference once
and answers a status enquiry, starts CMD with DATABASE_URL, RAIL_URL and
RAIL_TIMEOUT_MS in its environment, and writes rows into the outbox: the
rail's answer lost after it paid, a 500 after it paid, the rail down, a
payout refused, the worker killed at each of its writes and started again,
two workers at once. The rail's record says what was paid, under which
reference, by which worker, and whether the worker asked before it sent a
reference again; the database says which rows ended done.

See the contract (what the worker must do) with bank grade payout --contract,
and what each check proves with bank help grade.

Exit status: 0 when every required check passes, 1 when one fails, 2 for a
bad command line, 3 when the worker cannot be run, 4 when none failed but
one could not tell.`,
		Example: `  bank grade payout --contract
  bank grade payout -- node worker.mjs
  bank grade payout -- python3 worker.py
  bank grade payout --starter node my-worker   # a worker to start from
  bank grade payout --only killed,two-workers -- ./worker
  bank grade payout --repeat 20 -- ./worker`,
		Names: Names, Listed: listed, Contract: Contract, Template: Template(),
		Starters: &Starters, Starter: "every row paid under a new reference, with no claim and no status enquiry yet",
		Flags: func(fs *pflag.FlagSet) {
			fs.DurationVar(&timeout, "rail-timeout", time.Second, "the bound on one answer of the rail, given to the worker as RAIL_TIMEOUT_MS")
		},
		Check: func() error {
			if timeout < 100*time.Millisecond || timeout > 10*time.Second {
				return exitcode.Usagef("--rail-timeout must be between 100ms and 10s, such as 1s")
			}
			return nil
		},
		Given: func() []string { return []string{fmt.Sprintf("RAIL_TIMEOUT_MS=%d", timeout.Milliseconds())} },
		Run: func(ctx context.Context, c gradecmd.Common) (grade.Report, error) {
			return Run(ctx, Config{Command: c.Command, RailTimeout: timeout, Only: c.Only, Jobs: c.Jobs, Repeat: c.Repeat,
				Points: c.Points, NewDatabase: c.NewDatabase, Progress: c.Progress})
		},
	}.Command(h)
}
