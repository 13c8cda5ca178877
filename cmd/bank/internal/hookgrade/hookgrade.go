// Package hookgrade grades a learner's webhook consumer, in any language,
// against the lesson's inbound webhooks: a payment provider that delivers
// at least once (the same event again, copies at once, a second event
// about the same payment, events out of order, deliveries it gives up on
// and sends again) and signs each delivery as Standard Webhooks 1.0 says.
// The consumer credits the lesson's bank, in a database of its own; the
// grader plays the provider, holds the consumer's transactions at their
// first write and kills it there (the witness's gate), and reads what it
// wrote, and in which transaction, from the witness: each payment must be
// credited once, its event recorded in the credit's own transaction.
package hookgrade

import (
	"context"
	_ "embed"
	"io"
	"slices"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
)

//go:embed contract.txt
var contract string

// Contract is what a consumer is graded against, as bank grade webhook
// --contract prints it.
func Contract() string { return contract }

// deposits is the table a credit writes, as bank.Flows makes it.
const deposits = `
CREATE TABLE deposits (
  id serial PRIMARY KEY,
  account_id integer NOT NULL REFERENCES accounts (id),
  amount_kobo bigint NOT NULL CHECK (amount_kobo > 0),
  source text NOT NULL
);
`

// Template is the database each check gives the consumer: the lesson's
// bank, seeded, with its deposits, and the witness.
func Template() pgserver.Template { return grade.Witnessed("gradehook", deposits) }

// Config is one grading run of a consumer.
type Config struct {
	Command      []string      // the learner's consumer and its arguments
	StartTimeout time.Duration // how long it may take to listen
	Only         []string      // the checks to run; empty means all
	Jobs, Repeat int           // checks side by side (0: grade.DefaultJobs); runs of each (0: 1)
	Points       map[string]int

	// NewDatabase makes a fresh bank for one check, as grade.Config's:
	// the grader's URL, the consumer's, and what drops it.
	NewDatabase func(ctx context.Context, label string) (url, consumerURL string, drop func(), err error)

	Progress io.Writer // a line as each check starts, or nil
}

// Check is one way the provider delivers, and what a good consumer does.
type Check struct {
	Name     string
	Title    string
	Required bool
	See      string // the lab command that shows it done right
	run      func(t *trial)
}

// Names lists the checks, in the order they run.
func Names() []string {
	var names []string
	for _, c := range Checks {
		names = append(names, c.Name)
	}
	return names
}

// slow start first: they restart the consumer, or wait out the
// provider's timeout.
var slow = []string{"killed", "slow"}

// Run grades the consumer: every check, each Repeat times on a fresh
// database, Jobs at a time (grade.Schedule).
func Run(ctx context.Context, cfg Config) (grade.Report, error) {
	var checks []Check
	p := grade.Plan{Tool: "grade webhook", Slow: slow, Repeat: cfg.Repeat, Jobs: cfg.Jobs, Points: cfg.Points, Progress: cfg.Progress}
	for _, c := range Checks {
		if len(cfg.Only) == 0 || slices.Contains(cfg.Only, c.Name) {
			checks = append(checks, c)
			p.Names, p.Titles = append(p.Names, c.Name), append(p.Titles, c.Title)
		}
	}
	return grade.Schedule(ctx, p, func(ctx context.Context, i, n int) (grade.Result, error) {
		return runCheck(ctx, &cfg, checks[i], n)
	})
}
