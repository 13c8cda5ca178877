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
	"sort"
	"sync"
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
// Jobs at a time, the slow ones first. It is long because it is one
// scheduler (the queue, its order, the workers, the card), which reads
// best whole.
func Run(ctx context.Context, cfg Config) (grade.Report, error) {
	var checks []Check
	for _, c := range Checks {
		if len(cfg.Only) == 0 || slices.Contains(cfg.Only, c.Name) {
			checks = append(checks, c)
		}
	}
	repeat, jobs := max(1, cfg.Repeat), cfg.Jobs
	if jobs <= 0 {
		jobs = grade.DefaultJobs()
	}
	type job struct{ check, n int }
	var queue []job
	runs := make([][]*grade.Result, len(checks))
	for i := range checks {
		runs[i] = make([]*grade.Result, repeat)
		for n := range repeat {
			queue = append(queue, job{i, n})
		}
	}
	rank := func(j job) int {
		if i := slices.Index(slow, checks[j.check].Name); i >= 0 {
			return i
		}
		return len(slow)
	}
	var last []job
	queue = slices.DeleteFunc(queue, func(j job) bool {
		if slices.Contains(alone, checks[j.check].Name) {
			last = append(last, j)
			return true
		}
		return false
	})
	sort.SliceStable(queue, func(a, b int) bool { return rank(queue[a]) < rank(queue[b]) })

	var mu sync.Mutex
	var firstErr error
	stopped := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil || ctx.Err() != nil
	}
	do := func(j job) {
		c := checks[j.check]
		if cfg.Progress != nil {
			mu.Lock()
			grade.ProgressLine(cfg.Progress, "grade client", c.Title, j.n, repeat)
			mu.Unlock()
		}
		res, err := runCheck(ctx, &cfg, c, j.n)
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if err == nil {
			runs[j.check][j.n] = &res
		}
	}
	work := make(chan job)
	var wg sync.WaitGroup
	for range min(jobs, max(1, len(queue))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				do(j)
			}
		}()
	}
	for _, j := range queue {
		if stopped() {
			break
		}
		work <- j
	}
	close(work)
	wg.Wait()
	for _, j := range last {
		if stopped() {
			break
		}
		do(j)
	}

	rep := grade.Report{NotRun: []string{}}
	for i := range checks {
		if r, ok := grade.Merge(runs[i]); ok {
			rep.Results = append(rep.Results, r)
		} else {
			rep.NotRun = append(rep.NotRun, checks[i].Name)
		}
	}
	grade.Score(&rep, cfg.Points)
	if firstErr != nil {
		return rep, firstErr
	}
	return rep, ctx.Err()
}
