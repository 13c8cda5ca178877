// Package bench measures what idempotency costs: safe transfers over HTTP
// next to PostgreSQL's own pgbench running the same transaction, replays,
// duplicate storms, and the same handler with keys switched off. Absolute
// numbers on a shared machine mean little; ratios from one run do.
package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank/procs"
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

// Report is the whole run.
type Report struct {
	Clients  int               `json:"clients"`
	Seconds  float64           `json:"seconds"` // per mode, over all rounds
	Rounds   int               `json:"rounds"`
	Accounts int               `json:"accounts"`
	Results  []Result          `json:"results"`
	Ratios   map[string]string `json:"ratios"`
	Checks   []string          `json:"checks"`
	Holds    bool              `json:"invariantsHold"`
}

// sample is what one mode measured in one round.
type sample struct {
	lat      []time.Duration
	seconds  float64
	perSec   float64 // when the tool reports its own rate (pgbench)
	failures map[string]int
	rssMiB   float64
}

// tally adds up a mode's samples over the rounds.
type tally struct {
	mode    string
	samples []sample
}

func (t *tally) result() Result {
	var lat []time.Duration
	var seconds, weighted, rss float64
	failures := map[string]int{}
	for _, s := range t.samples {
		lat = append(lat, s.lat...)
		seconds += s.seconds
		weighted += s.perSec * s.seconds
		rss = max(rss, s.rssMiB)
		for why, n := range s.failures {
			failures[why] += n
		}
	}
	r := summarize(t.mode, lat, seconds)
	if weighted > 0 {
		r.Throughput = weighted / seconds
	}
	for _, n := range failures {
		r.Errors += n
	}
	if len(failures) > 0 {
		r.Failures = failures
	}
	r.PeakRSSMiB = rss
	return r
}

// Run runs every mode, round after round, and checks the invariants at
// the end. The modes take turns within each round, so a slow spell on a
// shared machine lands on all of them rather than on one, and the ratios
// stay steady.
func Run(ctx context.Context, db *pgxpool.Pool, cfg Config, progress io.Writer) (Report, error) {
	rounds := max(1, cfg.Rounds)
	window := cfg.Duration / time.Duration(rounds)
	rep := Report{Clients: cfg.Clients, Seconds: cfg.Duration.Seconds(), Rounds: rounds, Accounts: cfg.Accounts, Ratios: map[string]string{}}
	var before int64
	if err := db.QueryRow(ctx, "SELECT sum(balance_kobo) FROM accounts").Scan(&before); err != nil {
		return rep, err
	}
	transfers := func() (n int) {
		db.QueryRow(ctx, "SELECT count(*) FROM transfers").Scan(&n)
		return n
	}

	// Replays resend requests of the fresh runs, same key and same body.
	type sent struct{ key, body string }
	var mu sync.Mutex
	var done []sent
	fresh := func(r *mrand.Rand) (string, string, int) {
		k, b := newKey(), randomBody(r, cfg.Accounts)
		mu.Lock()
		if len(done) < 5000 {
			done = append(done, sent{k, b})
		}
		mu.Unlock()
		return k, b, 1
	}
	type mode struct {
		name, args string
		keyed      bool // its transfers run under keys
		next       func(r *mrand.Rand) (key, body string, copies int)
	}
	modes := []mode{
		{"fresh safe transfers", "", true, fresh},
		{"replays of completed keys", "", true, func(r *mrand.Rand) (string, string, int) {
			mu.Lock()
			defer mu.Unlock()
			s := done[r.IntN(len(done))]
			return s.key, s.body, 1
		}},
		{"duplicate storm (each sent twice at once)", "", true, func(r *mrand.Rand) (string, string, int) {
			return newKey(), randomBody(r, cfg.Accounts), 2
		}},
		{"no idempotency key", "--break no-keys", false, func(r *mrand.Rand) (string, string, int) { return "", randomBody(r, cfg.Accounts), 1 }},
	}
	pgbench := &tally{mode: "pgbench"}
	tallies := make([]*tally, len(modes))
	for i, m := range modes {
		tallies[i] = &tally{mode: m.name}
	}
	// Every mode starts from a vacuumed database: otherwise the mode after
	// pgbench pays for vacuuming pgbench's dead rows.
	vacuum := func(before string) error {
		if _, err := db.Exec(ctx, "VACUUM ANALYZE accounts, transfers, idempotency_keys"); err != nil {
			return fmt.Errorf("vacuuming before %s: %w", before, err)
		}
		return nil
	}
	step := func(round int, name string) {
		fmt.Fprintf(progress, "bench: round %d of %d: %s (%s, %d clients)...\n", round+1, rounds, name, window, cfg.Clients)
	}

	var keyedTransfers int
	for round := range rounds {
		if cfg.Pgbench != "" {
			if err := vacuum("pgbench"); err != nil {
				return rep, err
			}
			step(round, "pgbench, the same transaction in SQL")
			s, err := runPgbench(ctx, cfg, window)
			if err != nil {
				return rep, err
			}
			pgbench.samples = append(pgbench.samples, s)
		}
		for i, m := range modes {
			if m.name == "replays of completed keys" && len(done) == 0 {
				return rep, fmt.Errorf("the fresh run sent no transfers")
			}
			if err := vacuum(m.name); err != nil {
				return rep, err
			}
			step(round, m.name)
			n := transfers()
			s, err := runHTTP(ctx, cfg, window, strings.Fields(m.args), m.next)
			if err != nil {
				return rep, err
			}
			if m.keyed {
				keyedTransfers += transfers() - n
			}
			tallies[i].samples = append(tallies[i].samples, s)
		}
	}

	if cfg.Pgbench != "" {
		rep.Results = append(rep.Results, pgbench.result())
	} else {
		rep.Results = append(rep.Results, Result{Mode: "pgbench", Note: "not installed: skipped"})
	}
	for _, t := range tallies {
		rep.Results = append(rep.Results, t.result())
	}
	ratio := func(name string, a, b float64, target float64) {
		if b == 0 {
			rep.Ratios[name] = "n/a"
			return
		}
		verdict := "meets"
		if a/b < target {
			verdict = "misses"
		}
		rep.Ratios[name] = fmt.Sprintf("%.2f (target %.1f: %s)", a/b, target, verdict)
	}
	by := map[string]Result{}
	for _, r := range rep.Results {
		by[r.Mode] = r
	}
	freshTPS := by["fresh safe transfers"].Throughput
	ratio("safe HTTP / pgbench", freshTPS, by["pgbench"].Throughput, 0.6)
	ratio("replay / fresh", by["replays of completed keys"].Throughput, freshTPS, 2)
	ratio("with key / without", freshTPS, by["no idempotency key"].Throughput, 0.8)

	// The invariants: money conserved, and one transfer per key. pgbench
	// completes its keys with 200, the API with 201.
	var after int64
	var keyed int
	if err := db.QueryRow(ctx, `SELECT (SELECT sum(balance_kobo) FROM accounts),
		(SELECT count(*) FROM idempotency_keys WHERE status = 'completed' AND response_status = 201)`).Scan(&after, &keyed); err != nil {
		return rep, err
	}
	rep.Holds = before == after
	rep.Checks = append(rep.Checks, fmt.Sprintf("money conserved: %t (%d kobo before and %d after)", before == after, before, after))
	oneEach := keyedTransfers == keyed
	rep.Holds = rep.Holds && oneEach
	rep.Checks = append(rep.Checks, fmt.Sprintf("one transfer per key: %t (%d transfers over HTTP with keys, %d keys completed with 201)",
		oneEach, keyedTransfers, keyed))
	return rep, nil
}

// randomBody is a 1-naira transfer between two different bench accounts.
func randomBody(r *mrand.Rand, accounts int) string {
	from := 4 + r.IntN(accounts)
	to := 4 + r.IntN(accounts-1)
	if to >= from {
		to++
	}
	return fmt.Sprintf(`{"from":%d,"to":%d,"amountKobo":100}`, from, to)
}

func newKey() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "bench-" + hex.EncodeToString(b)
}

// runHTTP starts a fresh bank serve (so its peak RSS is this mode's), and
// runs cfg.Clients workers against it for d.
func runHTTP(ctx context.Context, cfg Config, d time.Duration, args []string, next func(r *mrand.Rand) (string, string, int)) (sample, error) {
	url, pid, stop, err := cfg.Serve(ctx, args...)
	if err != nil {
		return sample{}, err
	}
	defer stop()
	transport := &http.Transport{MaxIdleConnsPerHost: cfg.Clients * 2, MaxConnsPerHost: cfg.Clients * 2}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	lat := make([][]time.Duration, cfg.Clients)
	var failMu sync.Mutex
	failures := map[string]int{}
	fail := func(why string) {
		failMu.Lock()
		failures[why]++
		failMu.Unlock()
	}
	for w := 0; w < cfg.Clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := mrand.New(mrand.NewPCG(cfg.Seed, uint64(w)))
			for time.Now().Before(deadline) && ctx.Err() == nil {
				key, body, copies := next(r)
				if copies == 1 {
					d, why := post(ctx, hc, url, key, body)
					lat[w] = append(lat[w], d)
					if why != "" {
						fail(why)
					}
					continue
				}
				var inner sync.WaitGroup
				var mu sync.Mutex
				for range copies {
					inner.Add(1)
					go func() {
						defer inner.Done()
						d, why := post(ctx, hc, url, key, body)
						mu.Lock()
						lat[w] = append(lat[w], d)
						mu.Unlock()
						if why != "" {
							fail(why)
						}
					}()
				}
				inner.Wait()
			}
		}()
	}
	wg.Wait()
	s := sample{seconds: d.Seconds(), failures: failures, rssMiB: peakRSS(pid)}
	for _, l := range lat {
		s.lat = append(s.lat, l...)
	}
	return s, nil
}

// post sends one transfer and says why it failed, or "" when it did not.
func post(ctx context.Context, hc *http.Client, url, key, body string) (time.Duration, string) {
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/transfers", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer token-ada")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return time.Since(start), "no reply"
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	// 409 is a correct answer in a duplicate storm; 5xx and others are not.
	if resp.StatusCode == 201 || resp.StatusCode == 409 {
		return d, ""
	}
	return d, "HTTP " + strconv.Itoa(resp.StatusCode)
}

func summarize(mode string, all []time.Duration, seconds float64) Result {
	slices.Sort(all)
	r := Result{Mode: mode, Requests: len(all), Throughput: float64(len(all)) / seconds}
	if len(all) > 0 {
		r.P50 = ms(all[len(all)/2])
		r.P99 = ms(all[len(all)*99/100])
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// peakRSS reads a process's high-water resident set (Linux).
func peakRSS(pid int) float64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(raw)
	if m == nil {
		return 0
	}
	kb, _ := strconv.ParseFloat(string(m[1]), 64)
	return kb / 1024
}

// pgbenchScript is the handler's transaction in SQL: claim the key, lock
// both accounts in id order, debit with the conditional update, credit,
// record the transfer, complete the key. (The handler reads the owner and
// status in the locking statement; pgbench's script skips those checks.) (The handler claims in its own statement first; here it is in the
// transaction, which only favours pgbench.)
const pgbenchScript = `\set from random(4, :naccounts + 3)
\set to random(4, :naccounts + 3)
\set k random(1, 1000000000000)
BEGIN;
SELECT id FROM accounts WHERE id IN (:from, :to) ORDER BY id FOR UPDATE;
INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at)
  VALUES (1, 'pgbench-' || :client_id || '-' || :k, 'h', 'in_progress', 'l', now() + interval '30 seconds', now()) ON CONFLICT DO NOTHING;
UPDATE accounts SET balance_kobo = balance_kobo - 100 WHERE id = :from AND balance_kobo >= 100;
UPDATE accounts SET balance_kobo = balance_kobo + 100 WHERE id = :to;
INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES (:from, :to, 100);
UPDATE idempotency_keys SET status = 'completed', response_status = 200, response_body = '{}', lock_id = NULL, locked_until = NULL
  WHERE user_id = 1 AND key = 'pgbench-' || :client_id || '-' || :k;
END;
`

func runPgbench(ctx context.Context, cfg Config, d time.Duration) (sample, error) {
	seconds := max(1, int(math.Round(d.Seconds()))) // pgbench counts whole seconds
	dir, err := os.MkdirTemp("", "bank-pgbench-")
	if err != nil {
		return sample{}, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "transfer.sql")
	if err := os.WriteFile(script, []byte(pgbenchScript), 0o644); err != nil {
		return sample{}, err
	}
	env, err := libpqEnv(cfg.DBURL)
	if err != nil {
		return sample{}, err
	}
	cmd := exec.CommandContext(ctx, cfg.Pgbench, "-n", "-f", script, "-c", strconv.Itoa(cfg.Clients), "-j", "2",
		"-T", strconv.Itoa(seconds), "-D", "naccounts="+strconv.Itoa(cfg.Accounts),
		"--log", "--log-prefix", filepath.Join(dir, "log"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	procs.Bind(cmd, procs.Kill)
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("pgbench: %v\n%s", err, out.String())
	}
	// Per-transaction latencies, in microseconds, are the third column of
	// pgbench's log files.
	var lat []time.Duration
	logs, _ := filepath.Glob(filepath.Join(dir, "log*"))
	for _, l := range logs {
		raw, _ := os.ReadFile(l)
		for _, line := range strings.Split(string(raw), "\n") {
			f := strings.Fields(line)
			if len(f) > 2 {
				us, _ := strconv.Atoi(f[2])
				lat = append(lat, time.Duration(us)*time.Microsecond)
			}
		}
	}
	s := sample{lat: lat, seconds: float64(seconds)}
	if m := regexp.MustCompile(`tps = ([\d.]+) \(without initial connection time\)`).FindStringSubmatch(out.String()); m != nil {
		s.perSec, _ = strconv.ParseFloat(m[1], 64)
	}
	return s, nil
}

// libpqEnv turns a connection URL into libpq's environment variables, so
// that pgbench gets the database (and any password) in its environment,
// never on its command line, where every local user could read it.
func libpqEnv(dbURL string) ([]string, error) {
	c, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	env := []string{"PGHOST=" + c.Host, "PGPORT=" + strconv.Itoa(int(c.Port)), "PGUSER=" + c.User, "PGDATABASE=" + c.Database, "PGSSLMODE=disable"}
	if c.Password != "" {
		env = append(env, "PGPASSWORD="+c.Password)
	}
	return env, nil
}
