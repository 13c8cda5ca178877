// Package clientgrade grades a learner's client, in any language, against
// the lesson's rules for the app: one key per intent, kept with the draft;
// retry what may succeed, never what cannot; back off, with jitter; honour
// Retry-After; give up honestly. In each check the lab serves the bank
// itself (package api, on a fresh copy of the lesson's bank) behind a
// front of its own that throws one fault: a lost reply, a hung attempt, a
// 409 or 429 with Retry-After, a 5xx, a refusal, a server that never
// answers, or the client killed mid-transfer and started again. The front
// records every attempt (its time, key and body) and the bank's tables say
// what moved: the verdicts are read from those, and from the outcome the
// client reports.
package clientgrade

import (
	"context"
	_ "embed"
	"io"
	"slices"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
)

//go:embed contract.txt
var contract string

// Contract is what a client is graded against, as bank grade client
// --contract prints it.
func Contract() string { return contract }

// Template is the bank each check serves: the lesson's, with its key
// store, as bank serve's.
func Template() pgserver.Template {
	return pgserver.Template{Prefix: "gradeclient", Schema: api.SchemaText(), Setup: api.Setup}
}

// Config is one grading run of a client.
type Config struct {
	Command        []string       // the learner's client and its arguments
	AttemptTimeout time.Duration  // ATTEMPT_TIMEOUT_MS
	Only           []string       // the checks to run; empty means all
	Jobs           int            // checks side by side; 0 means grade.DefaultJobs
	Repeat         int            // runs of each check; 0 means 1
	Points         map[string]int // what a passed check is worth, by name

	// NewDatabase makes a fresh bank for one check and returns its URL
	// and a function that drops it (as grade.Config's; the client never
	// sees the database, so its second URL is not used).
	NewDatabase func(ctx context.Context, label string) (url, serverURL string, drop func(), err error)

	Progress io.Writer // a line as each check starts, or nil
}

// Check is one fault thrown at the client, and what a good client does.
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

// slow are the checks that take longest (a client's whole give-up): they
// start first. alone run last, one at a time, with no other check beside
// them: what they measure is timing, which the others' processes blur.
var (
	slow  = []string{"give-up", "lookup", "backoff", "restart"}
	alone = []string{"lockstep"}
)

// Run grades the client: every check, each Repeat times on a fresh bank,
// Jobs at a time, the slow ones first (grade.Schedule).
func Run(ctx context.Context, cfg Config) (grade.Report, error) {
	var checks []Check
	p := grade.Plan{Tool: "grade client", Slow: slow, Alone: alone, Repeat: cfg.Repeat, Jobs: cfg.Jobs, Points: cfg.Points, Progress: cfg.Progress}
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
