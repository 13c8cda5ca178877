// Package torture throws every fault of the lesson at real bank serve
// processes at once, and then checks, from the database and a journal of
// every attempt, that no intent moved money twice.
//
// Conservation alone proves nothing here: a transfer applied twice also
// conserves money. So every intent carries an amount no other intent has,
// and the checker counts, per intent, the transfers with its accounts and
// amount.
package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank/audit"
)

// Replica is one bank serve process under the run's control.
type Replica interface {
	URL() string
	Kill() error    // kill -9
	Restart() error // start again on the same port
	Pause() error   // SIGSTOP
	Resume() error  // SIGCONT
	Name() string   // the application_name its database sessions carry
	Metrics() map[string]int64
}

// Config is one run.
type Config struct {
	Seed    uint64
	Intents int
	Clients int
	// Accounts are the accounts the intents move money between: ids 4 to
	// Accounts+3, all Ada's (bank.AddAccounts). The bank must have two
	// more, Accounts+4 and Accounts+5, also Ada's, which no intent
	// touches: the choreographed kill and session kill send between them.
	Accounts int
	LockTTL  time.Duration
	// LoseRate is the share of answers the clients drop (lost responses,
	// decided by the seed for each intent); bank grade's proxies lose
	// replies of their own instead, and leave it 0.
	LoseRate float64
	Replicas []Replica
	DB       *pgxpool.Pool
	CrashDB  func() error  // immediate stop and restart of PostgreSQL; nil when not ours
	Faults   []string      // the fault kinds asked for (those the platform cannot inject are left out, and the report says why)
	History  io.Writer     // every operation as JSON lines, or nil
	Mistake  string        // the replicas' --mistake mode, if any
	Duration time.Duration // stop handing out new intents after this long; 0 means no bound
	Live     io.Writer     // a terminal for a progress line, or nil
	Progress io.Writer     // a line now and then, or nil
	// Settle bounds the time every intent has to resolve once the faults
	// stop; 0 means the lock's TTL plus 15 s.
	Settle time.Duration
	// FaultsOver, if set, is called once the load and the faults have
	// stopped, before the intents settle (bank grade's proxies stop
	// losing replies then).
	FaultsOver func()

	// Opaque servers are not the lab's (bank grade): the run reads no key
	// table and no session names, every intent goes from Ada's account to
	// Bola's (Accounts is ignored), and intents settle by being sent again
	// with their key rather than looked up.
	Opaque bool
	// QuotedKeys sends every key as the IETF draft writes it, "…" (bank
	// grade, for a server that takes no bare key).
	QuotedKeys bool
}

// AllFaults are the fault kinds a run can inject.
var AllFaults = []string{"duplicate", "concurrent-duplicate", "other-replica", "changed-body", "lost-response", "client-crash", "replica-kill", "replica-pause", "database-crash", "session-kill"}

// The counts the machine's timing decides, not the seed (Report.Timed).
const (
	takeoversTimed = "takeovers (seen by the servers)"
	fencedTimed    = "fencing rejections (seen by the servers)"
	retriesTimed   = "retries after no answer, 409 or 5xx"
)

// attempt is one send (or lookup) and what came back: a line of the
// history, and the evidence the checker and the diagnosis read.
type attempt struct {
	Intent   int    `json:"intent"` // the intent's number in the run
	Key      string `json:"key"`
	Replica  int    `json:"replica"`
	Life     int    `json:"life"` // which life of the replica it was sent to: 0, then 1 after its first restart, …
	Kind     string `json:"kind"` // send, retry, resume, duplicate, concurrent, changed-body, settle, lookup, or the fault that made it (pause, kill, session-kill)
	Status   int    `json:"status"`
	Network  string `json:"network,omitempty"`
	Replayed bool   `json:"replayed,omitempty"`
	State    string `json:"state,omitempty"`   // a lookup's: completed, in_progress, unknown
	Dropped  string `json:"dropped,omitempty"` // the client never heard this answer: lost-response, client-crash
	Body     string `json:"body,omitempty"`
	Sent     string `json:"sent"` // when it was sent, from the start of the run
	At       string `json:"at"`   // when it ended

	sent, done time.Duration
}

// fault is a line of the history for a fault the run threw at a server.
type fault struct {
	Fault   string `json:"fault"`
	Replica *int   `json:"replica,omitempty"`
	Life    int    `json:"life,omitempty"` // the replica's life after it (a kill's restart)
	Intent  *int   `json:"intent,omitempty"`
	What    string `json:"what,omitempty"`
	At      string `json:"at"`

	at time.Duration
}

type intent struct {
	n        int // its number in the run: the seed's draw of its faults
	plan     plan
	key      string
	from, to int
	amount   int64
	body     string
	attempts []attempt        // everything sent under its key, in the order it ended
	replies  []attempt        // definitive replies (not network errors, not 409/5xx), lookups of a completed key included
	moved    []audit.Transfer // the ledger's transfers with its accounts and amount, once checked
	resolved bool
	// What the settle phase sent and saw, for an intent that never
	// resolved: how many tries, and the last few answers.
	settleTries int
	settleLast  []attempt
}

// Report is the verdict and its evidence.
type Report struct {
	Schema  string `json:"schema"` // bank.torture/v1 (bank help json)
	Seed    uint64 `json:"seed"`
	Intents int    `json:"intents"`
	// Faults are the faults thrown: the same for every run of a seed
	// (with the same flags), as the seed planned them.
	Faults map[string]int64 `json:"faults"`
	// Timed are counts the machine's timing decides: the takeovers and
	// fencing rejections the servers saw, and the retries that requests
	// caught by a kill, a crash or a slow moment needed.
	Timed      map[string]int64 `json:"timed"`
	Checks     map[string]int   `json:"checksPassed"`
	Violations []string         `json:"violations"`
	Offending  []string         `json:"offendingKeys"`
	Missing    []string         `json:"faultsNotInjected"`
	Verdict    string           `json:"verdict"` // pass, fail, unknown (the table says valid, invalid, unknown)
	// Diagnosis names the lesson's mistake the violations fit, from the
	// run's history; nil when there is no violation.
	Diagnosis *Diagnosis `json:"diagnosis,omitempty"`
	ResolveMs int64      `json:"resolveAfterFaultsMs"`
	P50       float64    `json:"p50Ms"`
	P99       float64    `json:"p99Ms"`
	// LeftOut are the fault kinds asked for that this platform cannot
	// inject, each with the reason (a pause, on Windows): not asked of the
	// run, so neither they nor what they bring about are required.
	LeftOut map[string]string `json:"faultsLeftOut,omitempty"`
	// Unthrown are faults the seed planned that the run could not throw,
	// by kind: their intent got no answer while the load lasted (it was
	// left to settle), so there was no answer to lose and no key to send
	// a changed body under. Faults plus Unthrown is the seed's plan; only
	// a machine too slow to answer in time leaves any.
	Unthrown map[string]int64 `json:"faultsUnthrown,omitempty"`
}

type run struct {
	cfg     Config
	mu      sync.Mutex
	intents []*intent
	extra   []*intent // made during the run by faults that need their own
	faults  map[string]*atomic.Int64
	// unthrown: faults the seed planned whose intent was never answered
	// during the load (Report.Unthrown).
	unthrown map[string]*atomic.Int64
	timing   map[string]*atomic.Int64
	lives    []atomic.Int64 // each replica's life: how often it was restarted
	events   []fault        // the faults thrown, in order
	lat      []time.Duration
	hist     sync.Mutex
	histErr  error // the first error writing the history; it ends the run
	stop     context.CancelCauseFunc
	liveMu   sync.Mutex // the progress line and the notes share a terminal
	start    time.Time

	dispatched atomic.Int64 // intents handed to clients so far
	loadOver   atomic.Bool
	late5xx    []string    // keys that got a 5xx after the faults stopped
	before     int         // transfers in the bank before the run
	books      audit.Books // the bank once the intents settled
	stuck      []string    // keys left in progress
	// http gives up on an attempt after half the lock TTL, so a client
	// stuck on a paused replica retries elsewhere while the lock is held.
	http *http.Client
}

func (r *run) count(kind string) { r.faults[kind].Add(1) }

// unthrow notes n faults of a kind that the seed planned and the run could
// not throw: their intent got no answer while the load lasted.
func (r *run) unthrow(kind string, n int) {
	if n > 0 {
		r.unthrown[kind].Add(int64(n))
	}
}

func (r *run) timed(kind string) { r.timing[kind].Add(1) }

// record writes an attempt to the history. The first error writing it
// ends the run (a history with a hole in it is no record), and Run
// returns it.
func (r *run) record(a attempt) {
	a.Sent, a.At = ms(a.sent), ms(a.done)
	r.write(a)
}

// event notes a fault the run threw, for the diagnosis and the history.
func (r *run) event(f fault) {
	f.at = time.Since(r.start)
	f.At = ms(f.at)
	r.mu.Lock()
	r.events = append(r.events, f)
	r.mu.Unlock()
	r.write(f)
}

func (r *run) write(v any) {
	if r.cfg.History == nil {
		return
	}
	b, _ := json.Marshal(v)
	r.hist.Lock()
	defer r.hist.Unlock()
	if r.histErr != nil {
		return
	}
	if _, err := r.cfg.History.Write(append(b, '\n')); err != nil {
		r.histErr = err
		r.stop(&HistoryError{err})
	}
}

// HistoryError is a write to Config.History that failed: the run stopped
// there.
type HistoryError struct{ Err error }

func (e *HistoryError) Error() string { return "writing the history: " + e.Err.Error() }
func (e *HistoryError) Unwrap() error { return e.Err }

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// live prints a progress line on a terminal until the returned func runs.
func (r *run) live() func() {
	if r.cfg.Live == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				r.liveMu.Lock()
				fmt.Fprintf(r.cfg.Live, "\r\033[Ktorture: %d of %d intents handed out ", r.dispatched.Load(), len(r.intents))
				r.liveMu.Unlock()
			case <-done:
				r.liveMu.Lock()
				fmt.Fprint(r.cfg.Live, "\r\033[K")
				r.liveMu.Unlock()
				return
			}
		}
	}()
	return func() { close(done) }
}

// Run injects faults while the clients work, lets every intent resolve,
// then checks. It returns an error only when the run itself could not go
// on: interrupted (ctx), the books unreadable, or the history unwritable
// (a *HistoryError).
func Run(ctx context.Context, cfg Config) (Report, error) {
	var leftOut map[string]string
	cfg.Faults, leftOut = forPlatform(cfg.Faults, runtime.GOOS)
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	r, seed := newRun(cfg, stop)
	// The books as the run finds them: what each account opened with,
	// for the audit at the end, and the transfers already there.
	start, err := audit.Read(ctx, cfg.DB, nil)
	if err != nil {
		return Report{}, err
	}
	opening := start.AsOpening()
	r.before = len(start.Transfers)

	lastFault := r.load(ctx, seed)
	if cfg.FaultsOver != nil {
		cfg.FaultsOver()
	}
	r.settleAll(ctx, lastFault)
	if ctx.Err() != nil {
		return Report{}, context.Cause(ctx)
	}
	resolved := time.Since(lastFault)
	rep := r.check(ctx, opening)
	if ctx.Err() != nil { // the history failed while the checker read
		return Report{}, context.Cause(ctx)
	}
	rep.LeftOut = leftOut
	rep.ResolveMs = resolved.Milliseconds()
	r.tally(&rep)
	return rep, nil
}

// newRun makes the run and its intents, with the seed's own stream of
// randomness (the same seed draws the same intents and faults).
func newRun(cfg Config, stop context.CancelCauseFunc) (*run, *mrand.Rand) {
	r := &run{cfg: cfg, faults: map[string]*atomic.Int64{}, timing: map[string]*atomic.Int64{}, start: time.Now(), stop: stop,
		lives: make([]atomic.Int64, len(cfg.Replicas)),
		http:  &http.Client{Timeout: cfg.LockTTL / 2, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	r.unthrown = map[string]*atomic.Int64{}
	for _, f := range AllFaults {
		r.faults[f], r.unthrown[f] = &atomic.Int64{}, &atomic.Int64{}
	}
	for _, f := range []string{takeoversTimed, fencedTimed, retriesTimed} {
		r.timing[f] = &atomic.Int64{}
	}
	seed := mrand.New(mrand.NewPCG(cfg.Seed, 0x70727475))
	// Intents: unique amounts, so each transfer belongs to one intent;
	// keys that name the seed and the intent, so that a replay of the
	// seed names the same ones (every run has a database of its own).
	for i := 0; i < cfg.Intents; i++ {
		from, to := 1, 2
		if !cfg.Opaque {
			from = 4 + seed.IntN(cfg.Accounts)
			to = 4 + seed.IntN(cfg.Accounts-1)
			if to >= from {
				to++
			}
		}
		amount := int64(100 + i)
		r.intents = append(r.intents, &intent{n: i, plan: planFor(cfg.Seed, i, len(cfg.Replicas), cfg.LoseRate),
			key: fmt.Sprintf("torture-%d-%06d", cfg.Seed, i), from: from, to: to, amount: amount,
			body: fmt.Sprintf(`{"from":%d,"to":%d,"amountKobo":%d}`, from, to, amount),
		})
	}
	return r, seed
}

// load is the load, with faults from a schedule drawn from the seed: the
// clients take intents until all are sent (or --duration passes, or ctx
// ends). It returns when the last fault was thrown.
func (r *run) load(ctx context.Context, seed *mrand.Rand) time.Time {
	work := make(chan *intent)
	var wg sync.WaitGroup
	for c := 0; c < r.cfg.Clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for in := range work {
				r.dispatched.Add(1)
				r.drive(ctx, in)
			}
		}()
	}
	faultsDone := make(chan struct{})
	go func() { defer close(faultsDone); r.inject(ctx, seed) }()
	stopLive := r.live()
	var stopAt <-chan time.Time
	if r.cfg.Duration > 0 {
		stopAt = time.After(r.cfg.Duration)
	}
	sent := 0
dispatch:
	for _, in := range r.intents {
		select {
		case work <- in:
			sent++
		case <-stopAt:
			break dispatch
		case <-ctx.Done():
			break dispatch
		}
	}
	close(work)
	wg.Wait()
	r.loadOver.Store(true)
	<-faultsDone // the faults planned for points the load passed are all thrown
	r.intents = append(r.intents[:sent], r.extra...)
	stopLive()
	return time.Now()
}

// settleAll is the resolution: every intent must settle, each on its own,
// side by side (as the clients that sent them would), within one bound
// from the moment the faults stopped.
func (r *run) settleAll(ctx context.Context, lastFault time.Time) {
	settle := r.cfg.Settle
	if settle == 0 {
		settle = r.cfg.LockTTL + 15*time.Second
	}
	deadline := lastFault.Add(settle)
	todo := make(chan *intent)
	var settlers sync.WaitGroup
	for c := 0; c < max(1, r.cfg.Clients); c++ {
		settlers.Add(1)
		go func() {
			defer settlers.Done()
			for in := range todo {
				r.resolve(ctx, in, lastFault, deadline)
			}
		}()
	}
	for _, in := range r.intents {
		todo <- in
	}
	close(todo)
	settlers.Wait()
}

// tally adds to the report the latencies, the faults thrown and timed
// (the replicas' own counts included), the faults that never happened,
// and the verdict with its diagnosis.
func (r *run) tally(rep *Report) {
	sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	if n := len(r.lat); n > 0 {
		rep.P50 = float64(r.lat[n/2].Microseconds()) / 1000
		rep.P99 = float64(r.lat[n*99/100].Microseconds()) / 1000
	}
	for _, rp := range r.cfg.Replicas {
		m := rp.Metrics()
		r.faults["lost-response"].Add(m["bank_lost_responses_total"]) // bank grade's proxies lose replies of their own
		r.timing[fencedTimed].Add(m["bank_fenced_total"])
		r.timing[takeoversTimed].Add(m["bank_takeovers_total"])
	}
	rep.Faults = map[string]int64{}
	for k, v := range r.faults {
		rep.Faults[k] = v.Load()
	}
	for k, v := range r.unthrown {
		if n := v.Load(); n > 0 {
			if rep.Unthrown == nil {
				rep.Unthrown = map[string]int64{}
			}
			rep.Unthrown[k] = n
		}
	}
	rep.Timed = map[string]int64{}
	for k, v := range r.timing {
		rep.Timed[k] = v.Load()
	}
	for _, f := range r.cfg.Faults {
		if rep.Faults[f] == 0 {
			rep.Missing = append(rep.Missing, f)
		}
	}
	// A pause proves something only if a retry took a key over from the
	// paused replica and the fencing token then refused its late work
	// (fencedPause arranges both; this checks they happened).
	if slices.Contains(r.cfg.Faults, "replica-pause") && r.cfg.Mistake == "" {
		for _, f := range []string{takeoversTimed, fencedTimed} {
			if rep.Timed[f] == 0 {
				rep.Missing = append(rep.Missing, f)
			}
		}
	}
	switch {
	case len(rep.Violations) > 0:
		rep.Verdict = "fail"
		d := r.diagnose(*rep)
		rep.Diagnosis = &d
	case len(rep.Missing) > 0:
		rep.Verdict = "unknown"
	default:
		rep.Verdict = "pass"
	}
}
