// Package payoutgrade grades a learner's payout worker, in any language,
// against the outline's outbound calls to the rails: a worker drains the
// bank's payout outbox, paying each row through a payment rail under a
// reference of its own. The grader writes the rows, plays the rail (a
// reply lost after it paid, a 500 after it paid, the rail down, a payout
// refused), kills the worker at each of its writes (the witness's gate)
// and starts it again, and runs two workers at once. The rail's own record
// says what was paid, under which reference, by which worker, and whether
// the worker asked (GET /payouts/REFERENCE) before it sent a reference
// again; the database says which rows ended done.
package payoutgrade

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

// Contract is what a worker is graded against, as bank grade payout
// --contract prints it.
func Contract() string { return contract }

// outbox is the payout outbox the grader writes rows into.
const outbox = `
CREATE TABLE payout_outbox (
  id serial PRIMARY KEY,
  account_id integer NOT NULL REFERENCES accounts (id),
  amount_kobo bigint NOT NULL CHECK (amount_kobo > 0),
  reference text UNIQUE,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done'))
);
`

// Template is the database each check gives the worker: the lesson's
// bank, seeded, its payout outbox (empty), and the witness.
func Template() pgserver.Template { return grade.Witnessed("gradepayout", outbox) }

// Config is one grading run of a worker.
type Config struct {
	Command     []string
	RailTimeout time.Duration // RAIL_TIMEOUT_MS
	Only        []string
	Jobs        int
	Repeat      int
	Points      map[string]int
	NewDatabase func(ctx context.Context, label string) (url, workerURL string, drop func(), err error)
	Progress    io.Writer
}

// Check is one way the rail misbehaves, and what a good worker does.
type Check struct {
	Name     string
	Title    string
	Required bool
	See      string
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

var slow = []string{"killed", "two-workers", "rail-down"}

// Run grades the worker: every check, each Repeat times on a fresh
// database, Jobs at a time (grade.Schedule).
func Run(ctx context.Context, cfg Config) (grade.Report, error) {
	var checks []Check
	p := grade.Plan{Tool: "grade payout", Slow: slow, Repeat: cfg.Repeat, Jobs: cfg.Jobs, Points: cfg.Points, Progress: cfg.Progress}
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
