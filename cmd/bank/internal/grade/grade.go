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
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/cmd/bank/internal/witness"
	"github.com/zudojs/bank/scenarios/lab/pgserver"
	"github.com/zudojs/bank/scenarios/lab/render"
)

// Config is one grading run.
type Config struct {
	Command      []string       // the learner's server and its arguments
	LockTTL      time.Duration  // LOCK_TTL_MS: how long the server's claim should hold a key
	StartTimeout time.Duration  // how long a server may take to listen
	Only         []string       // the checks to run; empty means all
	Jobs         int            // checks run side by side (1: one after another); 0 means DefaultJobs
	Repeat       int            // runs of each check, each on a fresh database; 0 means 1
	Points       map[string]int // what a passed check is worth, by name; 1 when not named

	// NewDatabase makes a fresh bank for one check and returns its URL
	// (for the grader, which reads everything and throws the faults), the
	// URL the learner's server gets (a role that owns that database and
	// nothing else, or the same URL), and a function that drops it.
	NewDatabase func(ctx context.Context, label string) (url, serverURL string, drop func(), err error)

	Progress io.Writer // a line as each check starts, or nil (written to by one check at a time)

	keys *keyForm // how the server takes its keys, found by the run's first check
}

// Template is the bank each check gets a fresh copy of: the lesson's
// accounts and transfers, seeded, and nothing else of the server's; and
// the witness (package witness), which records every row the server
// writes, where the lab's role may make it (a superuser).
func Template() pgserver.Template { return Witnessed("grade", "") }

// Witnessed is a database template for a learner's program: the lesson's
// bank, seeded, tables (SQL run after the bank's), and the witness, where
// the lab's role may install it. prefix names the databases made from it.
func Witnessed(prefix, tables string) pgserver.Template {
	return pgserver.Template{Prefix: prefix, Schema: bank.CoreSchemaText() + tables + witness.SQL,
		Setup: func(ctx context.Context, c *pgx.Conn) error {
			if err := bank.SetupCore(ctx, c); err != nil {
				return err
			}
			if tables != "" {
				if _, err := c.Exec(ctx, tables); err != nil {
					return fmt.Errorf("creating the program's tables: %w", err)
				}
			}
			if err := witness.Install(ctx, c); err != nil && !witness.IsUnavailable(err) {
				return err
			}
			return nil
		}}
}

// Verdicts of a check.
const (
	Pass = "pass"
	Fail = "fail"
	NA   = "n/a"
	// Unknown: the check could not tell, as a slow machine or a
	// missing witness leaves it: neither a pass nor a fail.
	Unknown = "unknown"
)

// Result is one line of the report card, with its evidence.
type Result struct {
	Name        string   `json:"name"`
	Title       string   `json:"title"`
	Required    bool     `json:"required"`
	Verdict     string   `json:"verdict"`
	Why         string   `json:"why"`
	Mistake     string   `json:"mistake,omitempty"`   // on a failure the evidence fits: the lesson's mistake, by name
	LooksLike   string   `json:"looksLike,omitempty"` // and in the lesson's words
	See         string   `json:"see,omitempty"`       // on a failure: the command that shows it done right
	Evidence    []string `json:"evidence"`
	Runs        int      `json:"runs"`        // how many times it ran (--repeat)
	FailedRuns  int      `json:"failedRuns"`  // and how many of those failed
	UnknownRuns int      `json:"unknownRuns"` // and how many could not tell
	Writes      int      `json:"writes"`      // the rows the server wrote in its database during the check, as the witness saw them (-1: no witness)
	Points      int      `json:"points"`      // what it earned: its worth if it passed, else 0
	MaxPoints   int      `json:"maxPoints"`   // its worth, or 0 when it did not apply

	Recording *render.Recording `json:"-"` // what the grader did and saw, as it happened, for the check's diagram
}

// Report is the whole card.
type Report struct {
	Schema  string   `json:"schema"` // bank.grade/v1 (bank help json)
	Results []Result `json:"checks"`
	// Verdict is the grade's: Pass (every required check passed), Fail
	// (one failed), Unknown (none failed, but one could not tell, or the
	// grade stopped as the machine was too slow to start the server), or
	// Stopped (the server could not be run: the checks after it were not).
	Verdict   string   `json:"verdict"`
	Points    int      `json:"points"`            // the checks' points, added up
	MaxPoints int      `json:"maxPoints"`         // out of
	NotRun    []string `json:"notRun"`            // the checks the grade never ran, as it stopped
	Stopped   string   `json:"stopped,omitempty"` // why the grade stopped before its end
}

// Passed reports whether the grade's verdict is Pass.
func (r Report) Passed() bool { return r.Verdict == Pass }

// Stopped is a grade's verdict when it ended before its checks did: the
// server could not be started.
const Stopped = "stopped"

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

// DefaultJobs is how many checks run side by side unless Config.Jobs
// says otherwise: each check has its own database, ports and server
// processes, and spends most of its time waiting (on a lock's TTL, on
// the server), so twice the cores, at least 2 and at most 6.
func DefaultJobs() int { return min(6, max(2, 2*runtime.NumCPU())) }

// slow are the checks that wait out a lock's TTL or more, longest first:
// they start first, so that the quick ones fill the time they wait.
var slow = []string{"torture", "pause", "crash", "crash-on-store"}

// Run grades the server: every check, each Repeat times on a fresh
// database, Jobs of them at a time. The first run of the first check goes
// alone (it finds how the server takes its keys). A server that cannot be
// started ends the run with a *StartError; the checks done by then come
// with it.
//
// It is long because it is one scheduler: the first check alone, then the
// others Jobs at a time, slow ones first, with the early stop on a server
// that cannot start.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg.keys = &keyForm{}
	var checks []Check
	for _, c := range Checks {
		if len(cfg.Only) == 0 || slices.Contains(cfg.Only, c.Name) {
			checks = append(checks, c)
		}
	}
	repeat, jobs := max(1, cfg.Repeat), cfg.Jobs
	if jobs <= 0 {
		jobs = DefaultJobs()
	}
	runs := make([][]*Result, len(checks))
	type job struct{ check, n int }
	var queue []job
	for i := range checks {
		runs[i] = make([]*Result, repeat)
		for n := range repeat {
			queue = append(queue, job{i, n})
		}
	}
	// After the first, slow checks first; a check's runs spread out.
	rest := queue[min(1, len(queue)):]
	rank := func(j job) int { // slow's order, then the rest
		if i := slices.Index(slow, checks[j.check].Name); i >= 0 {
			return i
		}
		return len(slow)
	}
	sort.SliceStable(rest, func(a, b int) bool {
		if ra, rb := rank(rest[a]), rank(rest[b]); ra != rb {
			return ra < rb
		}
		return rest[a].n < rest[b].n
	})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var firstErr error
	do := func(j job) {
		c := checks[j.check]
		if cfg.Progress != nil {
			mu.Lock()
			ProgressLine(cfg.Progress, "grade", c.Title, j.n, repeat)
			mu.Unlock()
		}
		res, err := runOnce(ctx, &cfg, c, j.n)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if firstErr == nil {
				firstErr = err
				cancel() // the others stop: the run is over
			}
			return
		}
		runs[j.check][j.n] = &res
	}
	if len(queue) > 0 {
		do(queue[0])
	}
	work := make(chan job)
	var wg sync.WaitGroup
	for range min(jobs, len(rest)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				do(j)
			}
		}()
	}
	for _, j := range rest {
		if ctx.Err() != nil {
			break
		}
		work <- j
	}
	close(work)
	wg.Wait()

	rep := Report{NotRun: []string{}}
	for i := range checks {
		if r, ok := Merge(runs[i]); ok {
			rep.Results = append(rep.Results, r)
		} else {
			rep.NotRun = append(rep.NotRun, checks[i].Name)
		}
	}
	Score(&rep, cfg.Points)
	if se, ok := IsStartError(firstErr); ok {
		rep.Stopped = se.Why
		if rep.Verdict != Fail {
			rep.Verdict = Stopped
			if se.Busy {
				rep.Verdict = Unknown
			}
		}
	}
	if firstErr != nil {
		return rep, firstErr
	}
	return rep, ctx.Err()
}

// ProgressLine says, on w, that a check starts (its run n of repeat, from
// 0, when repeated), as who ("grade", "grade client") says it, folded.
func ProgressLine(w io.Writer, who, title string, n, repeat int) {
	line := fmt.Sprintf("%s: %s…", who, title)
	if repeat > 1 {
		line = fmt.Sprintf("%s: %s (run %d of %d)…", who, title, n+1, repeat)
	}
	for _, l := range render.Fold(line, render.Width, "  ") {
		fmt.Fprintln(w, l)
	}
}

// runOnce runs a check once; a run whose servers did not last it, or
// whose port another program answered, is set aside and run again.
func runOnce(ctx context.Context, cfg *Config, c Check, n int) (Result, error) {
	res, err := runCheck(ctx, cfg, c, n)
	var unsure *unsureError
	if errors.As(err, &unsure) {
		// The verdict would be about something else. Once more, on
		// fresh ports.
		first := unsure.why
		res, err = runCheck(ctx, cfg, c, n)
		res.Evidence = append([]string{"(a first run was set aside: " + first + ")"}, res.Evidence...)
	}
	if errors.As(err, &unsure) {
		res.Verdict, res.Why = Fail, unsure.why
		err = nil
	}
	return res, err
}

// Merge makes one line of the report card from a check's runs: failed if
// any run failed ("failed 3 of 20 runs", with the evidence of the first
// that did), passed if any passed, else not applicable. ok is false when
// a run is missing (the grade ended before it).
func Merge(runs []*Result) (Result, bool) {
	failed, passed, unknown := 0, 0, 0
	var firstFail, firstPass, firstUnknown *Result
	for _, r := range runs {
		if r == nil {
			return Result{}, false
		}
		switch r.Verdict {
		case Fail:
			failed++
			if firstFail == nil {
				firstFail = r
			}
		case Pass:
			passed++
			if firstPass == nil {
				firstPass = r
			}
		case Unknown:
			unknown++
			if firstUnknown == nil {
				firstUnknown = r
			}
		}
	}
	res := *runs[0]
	switch {
	case firstFail != nil:
		res = *firstFail
	case firstPass != nil:
		res = *firstPass
	case firstUnknown != nil:
		res = *firstUnknown
	}
	res.Runs, res.FailedRuns, res.UnknownRuns = len(runs), failed, unknown
	if len(runs) > 1 {
		others := ""
		if unknown > 0 && res.Verdict != Unknown {
			others = fmt.Sprintf(" (%d could not tell)", unknown)
		}
		switch {
		case failed > 0:
			res.Why = fmt.Sprintf("failed %d of %d runs%s%s; the first that failed: %s", failed, len(runs), others, namedApart(runs), res.Why)
		case passed < len(runs) && passed > 0:
			res.Why = fmt.Sprintf("passed %d of %d runs%s: %s", passed, len(runs), map[bool]string{true: others, false: " (not applicable in the others)"}[unknown > 0], res.Why)
		default:
			res.Why = fmt.Sprintf("%s in all %d runs: %s", map[string]string{Pass: "passed", NA: "not applicable", Unknown: "could not tell"}[res.Verdict], len(runs), res.Why)
		}
	}
	return res, true
}

// namedApart says how many failed runs named each mistake, when they did
// not all name the same: "", when they did.
func namedApart(runs []*Result) string {
	named := map[string]int{}
	for _, r := range runs {
		if r.Verdict == Fail {
			named[cmp.Or(r.Mistake, "no mistake named")]++
		}
	}
	if len(named) < 2 {
		return ""
	}
	var each []string
	for _, m := range slices.Sorted(maps.Keys(named)) {
		each = append(each, fmt.Sprintf("%s in %d", m, named[m]))
	}
	return " (" + strings.Join(each, ", ") + ")"
}

// ParsePoints reads NAME=N pairs (--points): what each named check, one
// of checks, is worth, 0 to 1000.
func ParsePoints(pairs, checks []string) (map[string]int, error) {
	points := map[string]int{}
	for _, p := range pairs {
		name, n, ok := strings.Cut(p, "=")
		worth, err := strconv.Atoi(n)
		if !ok || err != nil || worth < 0 || worth > 1000 {
			return nil, fmt.Errorf("takes NAME=N with N a whole number from 0 to 1000, such as crash=5: got %q", p)
		}
		if !slices.Contains(checks, name) {
			return nil, fmt.Errorf("names an unknown check %q; checks: %s", name, strings.Join(checks, ", "))
		}
		points[name] = worth
	}
	return points, nil
}

// Score gives each check its points (1, or what points says for its name)
// when it passed, and totals them; a check that did not apply, or could
// not tell, counts for neither side. The report passes when every
// required check did; it fails when one failed; otherwise, with a
// required check that could not tell, it is unknown.
func Score(rep *Report, points map[string]int) {
	rep.Verdict, rep.Points, rep.MaxPoints = Pass, 0, 0
	for i := range rep.Results {
		r := &rep.Results[i]
		worth, ok := points[r.Name]
		if !ok {
			worth = 1
		}
		r.Points, r.MaxPoints = 0, 0
		if r.Verdict != NA && r.Verdict != Unknown {
			r.MaxPoints = worth
		}
		if r.Verdict == Pass {
			r.Points = worth
		}
		rep.Points += r.Points
		rep.MaxPoints += r.MaxPoints
		switch {
		case r.Required && r.Verdict == Fail:
			rep.Verdict = Fail
		case r.Required && r.Verdict == Unknown && rep.Verdict == Pass:
			rep.Verdict = Unknown
		}
	}
}
