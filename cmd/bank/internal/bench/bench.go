// Package bench measures what idempotency costs: bank serve over HTTP with
// fresh intents, replays and duplicate storms, next to the same handler
// with keys switched off, and next to pgbench running the very same
// statements in SQL, with and without the key (bank bench).
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zudojs/bank/bank/audit"
)

// Config is one benchmark run.
type Config struct {
	Clients  int
	Duration time.Duration
	Accounts int
	DBURL    string // the bench database, already holding the bank's tables
	// Serve starts `bank serve` on the bench database with extra args and
	// returns its URL, its pid and a stop function.
	Serve func(ctx context.Context, args ...string) (url string, pid int, stop func() error, err error)
	// Pgbench is the pgbench program, or "" when none is installed.
	Pgbench string
	Seed    uint64
	// Rounds splits Duration: every mode runs once per round, in turn.
	Rounds int
}

// Result is one mode's figures.
type Result struct {
	Kind     Mode   `json:"-"`
	Mode     string `json:"mode"`
	Requests int    `json:"requests"`
	Errors   int    `json:"errors"`
	// Failures counts the errors by kind ("HTTP 500", "no reply").
	Failures   map[string]int `json:"failures,omitempty"`
	Throughput float64        `json:"perSecond"`
	P50        float64        `json:"p50Ms"`
	P99        float64        `json:"p99Ms"`
	PeakRSSMiB float64        `json:"serverPeakRssMiB,omitempty"`
	Note       string         `json:"note,omitempty"`
}

// Ratio is a figure the run derives from the modes' results, with its
// target where it has one.
type Ratio struct {
	Name      string  `json:"name"`
	Available bool    `json:"available"` // false when a mode it needs did not run
	Value     float64 `json:"value"`
	Target    float64 `json:"target,omitempty"`  // 0: no target, for information
	Ceiling   bool    `json:"ceiling,omitempty"` // the target is a most, not a least
	Met       bool    `json:"met"`               // the target is met (true when there is none)
}

// Report is the whole run.
type Report struct {
	Schema   string   `json:"schema"` // bank.bench/v1 (bank help json)
	Clients  int      `json:"clients"`
	Seconds  float64  `json:"seconds"` // per mode, over all rounds
	Rounds   int      `json:"rounds"`
	Accounts int      `json:"accounts"`
	Results  []Result `json:"results"`
	Ratios   []Ratio  `json:"ratios"`
	Checks   []string `json:"checks"`
	Holds    bool     `json:"-"`
	Verdict  string   `json:"verdict"` // pass: the invariants held under load (Holds); else fail
}

// sample is what one mode measured in one round.
type sample struct {
	lat      []time.Duration
	seconds  float64
	perSec   float64 // when the tool reports its own rate (pgbench)
	failures map[string]int
	rssMiB   float64
}

// run is one benchmark in progress.
type run struct {
	cfg      Config
	db       *pgxpool.Pool
	progress io.Writer
	rounds   int
	window   time.Duration
	q        *requests
	samples  map[Mode][]sample
	opening  map[int64]int64 // each account as it stood at the start (audit's openings)
	keyed    int             // transfers made over HTTP under keys
}

// Run runs every mode, round after round, and checks the invariants at
// the end. The modes take turns within each round, so a slow spell on a
// shared machine lands on all of them rather than on one, and the ratios
// stay steady.
func Run(ctx context.Context, db *pgxpool.Pool, cfg Config, progress io.Writer) (Report, error) {
	r := &run{cfg: cfg, db: db, progress: progress, rounds: max(1, cfg.Rounds),
		q: &requests{accounts: cfg.Accounts}, samples: map[Mode][]sample{}}
	r.window = cfg.Duration / time.Duration(r.rounds)
	rep := Report{Clients: cfg.Clients, Seconds: cfg.Duration.Seconds(), Rounds: r.rounds, Accounts: cfg.Accounts}
	start, err := audit.Read(ctx, db, nil)
	if err != nil {
		return rep, err
	}
	r.opening = start.AsOpening()
	for round := range r.rounds {
		for _, m := range Modes {
			if err := r.runMode(ctx, round, m); err != nil {
				return rep, err
			}
		}
	}
	rep.Results = r.results()
	rep.Ratios = ratios(rep.Results)
	return rep, r.check(ctx, &rep)
}

// runMode runs one mode for one round's window, from a vacuumed database
// (otherwise a mode pays for vacuuming the previous one's dead rows).
func (r *run) runMode(ctx context.Context, round int, m Mode) error {
	if m.pgbench() && r.cfg.Pgbench == "" {
		return nil
	}
	if m == Replays && len(r.q.done) == 0 {
		return fmt.Errorf("the fresh run sent no transfers")
	}
	if _, err := r.db.Exec(ctx, "VACUUM ANALYZE accounts, transfers, idempotency_keys"); err != nil {
		return fmt.Errorf("vacuuming before %s: %w", m, err)
	}
	fmt.Fprintf(r.progress, "bench: round %d of %d: %s (%s, %d clients)...\n", round+1, r.rounds, m, r.window, r.cfg.Clients)
	var s sample
	var err error
	switch m {
	case SQLKeyed:
		s, err = runPgbench(ctx, r.cfg, scriptKeyed, r.window)
	case SQLKeyless:
		s, err = runPgbench(ctx, r.cfg, scriptKeyless, r.window)
	default:
		before := r.transfers(ctx)
		if s, err = runHTTP(ctx, r.cfg, r.window, m, r.q); err == nil && m.keyed() {
			r.keyed += r.transfers(ctx) - before
		}
	}
	if err != nil {
		return err
	}
	r.samples[m] = append(r.samples[m], s)
	return nil
}

func (r *run) transfers(ctx context.Context) (n int) {
	r.db.QueryRow(ctx, "SELECT count(*) FROM transfers").Scan(&n)
	return n
}

// results adds up each mode's samples over the rounds.
func (r *run) results() []Result {
	var out []Result
	for _, m := range Modes {
		if m.pgbench() && r.cfg.Pgbench == "" {
			out = append(out, Result{Kind: m, Mode: m.String(), Note: "pgbench not installed: skipped"})
			continue
		}
		out = append(out, tally(m, r.samples[m]))
	}
	return out
}

func tally(m Mode, samples []sample) Result {
	var lat []time.Duration
	var seconds, weighted, rss float64
	failures := map[string]int{}
	for _, s := range samples {
		lat = append(lat, s.lat...)
		seconds += s.seconds
		weighted += s.perSec * s.seconds
		rss = max(rss, s.rssMiB)
		for why, n := range s.failures {
			failures[why] += n
		}
	}
	slices.Sort(lat)
	res := Result{Kind: m, Mode: m.String(), Requests: len(lat), PeakRSSMiB: rss}
	if seconds > 0 {
		res.Throughput = float64(len(lat)) / seconds
	}
	if weighted > 0 {
		res.Throughput = weighted / seconds
	}
	if len(lat) > 0 {
		res.P50 = ms(lat[len(lat)/2])
		res.P99 = ms(lat[len(lat)*99/100])
	}
	for _, n := range failures {
		res.Errors += n
	}
	if len(failures) > 0 {
		res.Failures = failures
	}
	return res
}

// ratios are the figures that matter, each against its target: what the
// key costs in SQL alone and over HTTP, and how close HTTP keeps to SQL.
func ratios(results []Result) []Ratio {
	by := map[Mode]Result{}
	for _, res := range results {
		if res.Note == "" {
			by[res.Kind] = res
		}
	}
	tps := func(m Mode) float64 { return by[m].Throughput }
	div := func(a, b float64) (float64, bool) { return a / b, a > 0 && b > 0 }
	var out []Ratio
	add := func(name string, target float64, ceiling bool, v float64, ok bool) {
		r := Ratio{Name: name, Available: ok, Target: target, Ceiling: ceiling, Met: ok || target == 0}
		if ok {
			r.Value = v
			switch {
			case target == 0:
			case ceiling:
				r.Met = v <= target
			default:
				r.Met = v >= target
			}
		}
		out = append(out, r)
	}
	sqlKey, sqlOK := div(tps(SQLKeyed), tps(SQLKeyless))
	httpKey, httpOK := div(tps(Fresh), tps(NoKey))
	v, ok := div(tps(Fresh), tps(SQLKeyed))
	add("safe HTTP / keyed pgbench", 0.6, false, v, ok)
	v, ok = div(tps(Replays), tps(Fresh))
	add("replay / fresh", 2, false, v, ok)
	add("key in SQL: keyed / keyless pgbench", 0, false, sqlKey, sqlOK)
	add("key over HTTP: with key / without", 0, false, httpKey, httpOK)
	v, ok = div(httpKey, sqlKey)
	add("key over HTTP / key in SQL", 0.95, false, v, ok && httpOK && sqlOK)
	add("p99 of fresh safe transfers, ms", 15, true, by[Fresh].P99, by[Fresh].Requests > 0)
	return out
}

// check reads the invariants with the lab's one set of checks (audit):
// money conserved and the books agreeing with the ledger; and one
// transfer per key (pgbench completes its keys with 200, the API with 201).
func (r *run) check(ctx context.Context, rep *Report) error {
	books, err := audit.Read(ctx, r.db, r.opening)
	if err != nil {
		return err
	}
	var keyed int
	if err := r.db.QueryRow(ctx, "SELECT count(*) FROM idempotency_keys WHERE status = 'completed' AND response_status = 201").Scan(&keyed); err != nil {
		return err
	}
	oneEach := audit.Finding{Check: "one transfer per key", Holds: r.keyed == keyed,
		Detail: fmt.Sprintf("%d transfers over HTTP with keys, %d keys completed with 201", r.keyed, keyed)}
	findings := []audit.Finding{books.Conserved(), books.LedgerAgrees(), oneEach}
	rep.Holds = len(audit.Broken(findings...)) == 0
	rep.Verdict = map[bool]string{true: "pass", false: "fail"}[rep.Holds]
	for _, f := range findings {
		rep.Checks = append(rep.Checks, f.String())
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

var vmHWM = regexp.MustCompile(`VmHWM:\s+(\d+) kB`)

// peakRSS reads a process's high-water resident set (Linux).
func peakRSS(pid int) float64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	m := vmHWM.FindSubmatch(raw)
	if m == nil {
		return 0
	}
	kb, _ := strconv.ParseFloat(string(m[1]), 64)
	return kb / 1024
}
