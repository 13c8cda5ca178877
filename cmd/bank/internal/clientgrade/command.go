package clientgrade

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

// Command is bank grade client (package gradecmd), on h.
func Command(h gradecmd.Host) *cobra.Command {
	timeout := time.Second
	return gradecmd.Grader{
		Of: "client", Noun: "client", Sample: "node client.mjs",
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
		Names: Names, Listed: listed(), Contract: Contract, Starters: &Starters,
		Starter:  "one send under its own key, no draft and no retry yet",
		Template: Template(),
		Flags: func(fs *pflag.FlagSet) {
			fs.DurationVar(&timeout, "attempt-timeout", time.Second, "the bound on one attempt given to the client as ATTEMPT_TIMEOUT_MS")
		},
		Check: func() error {
			if timeout < 100*time.Millisecond || timeout > 10*time.Second {
				return exitcode.Usagef("--attempt-timeout must be between 100ms and 10s, such as 1s")
			}
			return nil
		},
		Given: func() []string { return []string{fmt.Sprintf("ATTEMPT_TIMEOUT_MS=%d", timeout.Milliseconds())} },
		Run: func(ctx context.Context, c gradecmd.Common) (grade.Report, error) {
			return Run(ctx, Config{Command: c.Command, AttemptTimeout: timeout, Only: c.Only, Jobs: c.Jobs, Repeat: c.Repeat,
				Points: c.Points, NewDatabase: c.NewDatabase, Progress: c.Progress})
		},
	}.Command(h)
}

// listed are the checks, as the workflows list them.
func listed() []card.Listed {
	var l []card.Listed
	for _, c := range Checks {
		l = append(l, card.Listed{Name: c.Name, Title: c.Title})
	}
	return l
}
