// Package grade throws the lesson's faults at a learner's own transfer
// server, in any language, and reports, check by check, what held and
// what broke.
//
// Every check gets a fresh bank (the lesson's accounts and transfers,
// seeded with Ada, Bola and Chidi: nothing else, so the server makes its
// own key table) and fresh server processes, started with DATABASE_URL,
// PORT and LOCK_TTL_MS in their environment. The grader's client talks to
// each server through a proxy of its own, which can lose a reply after
// the server has answered; the moments that need precise timing (a crash
// or a pause inside a transfer) are found through PostgreSQL itself: the
// grader holds a row lock the transfer needs and acts once the server's
// session is seen waiting on it. No hook is needed in the learner's code.
package grade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/pgserver"
	"github.com/zudojs/bank/scenarios/render"
)

// Config is one grading run.
type Config struct {
	Command      []string      // the learner's server and its arguments
	LockTTL      time.Duration // LOCK_TTL_MS: how long the server's claim should hold a key
	StartTimeout time.Duration // how long a server may take to listen
	Only         []string      // the checks to run; empty means all

	// NewDatabase makes a fresh bank for one check and returns its URL
	// (for the grader, which reads everything and throws the faults), the
	// URL the learner's server gets (a role that owns that database and
	// nothing else, or the same URL), and a function that drops it.
	NewDatabase func(ctx context.Context, label string) (url, serverURL string, drop func(), err error)

	Progress io.Writer // a line as each check starts, or nil

	keys *keyForm // how the server takes its keys, found by the run's first check
}

// Template is the bank each check gets a fresh copy of: the lesson's
// accounts and transfers, seeded, and nothing else.
func Template() pgserver.Template {
	return pgserver.Template{Prefix: "grade", Schema: bank.CoreSchemaText(), Setup: bank.SetupCore}
}

// Verdicts of a check.
const (
	Pass = "pass"
	Fail = "fail"
	NA   = "n/a"
)

// Result is one line of the report card, with its evidence.
type Result struct {
	Name      string   `json:"name"`
	Title     string   `json:"title"`
	Required  bool     `json:"required"`
	Verdict   string   `json:"verdict"`
	Why       string   `json:"why"`
	Mistake   string   `json:"mistake,omitempty"`   // on a failure the evidence fits: the lesson's mistake, by name
	LooksLike string   `json:"looksLike,omitempty"` // and in the lesson's words
	See       string   `json:"see,omitempty"`       // on a failure: the command that shows it done right
	Evidence  []string `json:"evidence"`

	Recording *render.Recording `json:"-"` // what the grader did and saw, as it happened, for the check's diagram
}

// Report is the whole card.
type Report struct {
	Results []Result `json:"checks"`
	Passed  bool     `json:"passed"` // every required check passed
}

// Check is one fault the grader throws, and what a good server does.
type Check struct {
	Name     string
	Title    string
	Required bool
	Servers  int    // instances of the server the check needs (1 or 2)
	See      string // the lab command that shows it done right
	run      func(t *trial)
}

// Names lists the checks, in the order they run.
func Names() []string {
	names := make([]string, len(Checks))
	for i, c := range Checks {
		names[i] = c.Name
	}
	return names
}

// Run grades the server. A server that cannot be started ends the run
// with a *StartError; the results so far come with it.
func Run(ctx context.Context, cfg Config) (Report, error) {
	var rep Report
	cfg.keys = &keyForm{}
	for _, c := range Checks {
		if len(cfg.Only) > 0 && !slices.Contains(cfg.Only, c.Name) {
			continue
		}
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "grade: %s…\n", c.Title)
		}
		res, err := runCheck(ctx, &cfg, c)
		var unsure *unsureError
		if errors.As(err, &unsure) {
			// Its servers did not last the check, or another program
			// answered on a server's port: the verdict would be about
			// something else. Once more, on fresh ports.
			first := unsure.why
			res, err = runCheck(ctx, &cfg, c)
			res.Evidence = append([]string{"(a first run was set aside: " + first + ")"}, res.Evidence...)
		}
		if errors.As(err, &unsure) {
			res.Verdict, res.Why = Fail, unsure.why
			err = nil
		}
		if err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, res)
	}
	rep.Passed = true
	for _, r := range rep.Results {
		if r.Required && r.Verdict == Fail {
			rep.Passed = false
		}
	}
	return rep, nil
}

func runCheck(ctx context.Context, cfg *Config, c Check) (Result, error) {
	res := Result{Name: c.Name, Title: c.Title, Required: c.Required, Verdict: Pass}
	url, serverURL, drop, err := cfg.NewDatabase(ctx, c.Name)
	if err != nil {
		return res, err
	}
	defer drop()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	t := &trial{ctx: ctx, cfg: cfg, db: pool, url: serverURL, res: &res, rec: record(&res, c)}
	defer t.close()
	for i := 0; i < max(1, c.Servers); i++ {
		if err := t.startServer(); err != nil {
			return res, err
		}
	}
	if !cfg.keys.decided {
		if err := t.catch(func(t *trial) { t.probeKeyForm() }); err != nil {
			return res, err
		}
	}
	before, err := readBank(ctx, pool)
	if err != nil {
		return res, err
	}
	t.noteBank("before", before)
	if err := t.catch(c.run); err != nil {
		return res, err
	}
	if err := t.serversHeld(); err != nil {
		return res, err
	}
	if res.Verdict != NA {
		if err := t.catch(func(t *trial) { t.invariants() }); err != nil {
			return res, err
		}
	}
	// A failure names a mistake only where its evidence fits one (the
	// check said so with failAs); the command that shows the check's
	// subject done right is given either way.
	if res.Verdict == Fail {
		if res.See == "" {
			res.See = c.See
		}
	} else {
		res.Mistake, res.LooksLike, res.See = "", "", ""
	}
	return res, nil
}

// unsureError means a check's own servers were not the ones answering at
// its end.
type unsureError struct{ why string }

func (e *unsureError) Error() string { return e.why }

// serversHeld checks that every server of the check is still running and
// still the one listening on its port.
func (t *trial) serversHeld() error {
	for i, in := range t.servers {
		select {
		case <-in.g.Exited():
			return &unsureError{fmt.Sprintf("%s exited during the check (%s); its last output: %s", serverName(i), exitStatus(in.g.Err()), in.output.LastLines(5))}
		default:
		}
		if owned, known := listenedBy(in.g.PID(), in.port); known && !owned {
			return &unsureError{fmt.Sprintf("another program answered on %s's port", serverName(i))}
		}
	}
	return nil
}

// catch runs a check; a server that cannot be restarted inside it ends
// the run (errAbort carries why).
func (t *trial) catch(run func(t *trial)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(abort)
			if !ok {
				panic(r)
			}
			err = a.err
		}
	}()
	run(t)
	return nil
}

// abort stops a check on an environment failure (a server that will not
// start again, a database the grader cannot read).
type abort struct{ err error }

func (t *trial) must(err error) {
	if err != nil {
		panic(abort{err})
	}
}

// IsStartError reports whether err is a server that would not start.
func IsStartError(err error) (*StartError, bool) {
	var se *StartError
	ok := errors.As(err, &se)
	return se, ok
}
