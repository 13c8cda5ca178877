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
	Seed     uint64
	Intents  int
	Clients  int
	Accounts int
	LockTTL  time.Duration
	Replicas []Replica
	DB       *pgxpool.Pool
	CrashDB  func() error  // immediate stop and restart of PostgreSQL; nil when not ours
	Faults   []string      // the fault kinds asked for (those the platform cannot inject are left out, and the report says why)
	History  io.Writer     // every operation as JSON lines, or nil
	Mistake  string        // the replicas' --break mode, if any
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
var AllFaults = []string{"duplicate", "concurrent-duplicate", "other-replica", "changed-body", "lost-response", "client-crash", "replica-kill", "replica-pause", "database-crash"}

// attempt is one send and what came back.
type attempt struct {
	Key      string `json:"key"`
	Replica  int    `json:"replica"`
	Kind     string `json:"kind"` // send, duplicate, changed-body, lookup
	Status   int    `json:"status"`
	Network  string `json:"network,omitempty"`
	Replayed bool   `json:"replayed,omitempty"`
	Body     string `json:"body,omitempty"`
	At       string `json:"at"`
}

type intent struct {
	n        int // its number in the run: the draw of its client-side faults
	key      string
	from, to int
	amount   int64
	body     string
	replies  []attempt // definitive replies (not network errors, not 409/5xx)
	resolved bool
	// What the settle phase sent and saw, for an intent that never
	// resolved: how many tries, and the last few answers.
	settleTries int
	settleLast  []attempt
}

// Report is the verdict and its evidence.
type Report struct {
	Seed       uint64           `json:"seed"`
	Intents    int              `json:"intents"`
	Faults     map[string]int64 `json:"faults"`
	Checks     map[string]int   `json:"checksPassed"`
	Violations []string         `json:"violations"`
	Offending  []string         `json:"offendingKeys"`
	Missing    []string         `json:"faultsNotInjected"`
	Verdict    string           `json:"verdict"` // valid, invalid, unknown
	ResolveMs  int64            `json:"resolveAfterFaultsMs"`
	P50        float64          `json:"p50Ms"`
	P99        float64          `json:"p99Ms"`
	// LeftOut are the fault kinds asked for that this platform cannot
	// inject, each with the reason (a pause, on Windows): not asked of the
	// run, so neither they nor what they bring about are required.
	LeftOut map[string]string `json:"faultsLeftOut,omitempty"`
}

type run struct {
	cfg     Config
	mu      sync.Mutex
	intents []*intent
	extra   []*intent // made during the run by faults that need their own
	faults  map[string]*atomic.Int64
	lat     []time.Duration
	hist    sync.Mutex
	liveMu  sync.Mutex // the progress line and the notes share a terminal
	start   time.Time

	fenced, takeovers atomic.Int64
	dispatched        atomic.Int64 // intents handed to clients so far
	loadOver          atomic.Bool
	late5xx           []string // keys that got a 5xx after the faults stopped
	before            int      // transfers in the bank before the run
	// http gives up on an attempt after half the lock TTL, so a client
	// stuck on a paused replica retries elsewhere while the lock is held.
	http *http.Client
}

func (r *run) count(kind string) { r.faults[kind].Add(1) }

func (r *run) record(a attempt) {
	if r.cfg.History == nil {
		return
	}
	a.At = time.Since(r.start).Round(time.Millisecond).String()
	b, _ := json.Marshal(a)
	r.hist.Lock()
	r.cfg.History.Write(append(b, '\n'))
	r.hist.Unlock()
}

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
// then checks.
func Run(ctx context.Context, cfg Config) (Report, error) {
	var leftOut map[string]string
	cfg.Faults, leftOut = forPlatform(cfg.Faults, runtime.GOOS)
	r := &run{cfg: cfg, faults: map[string]*atomic.Int64{}, start: time.Now(),
		http: &http.Client{Timeout: cfg.LockTTL / 2, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	for _, f := range AllFaults {
		r.faults[f] = &atomic.Int64{}
	}
	seed := mrand.New(mrand.NewPCG(cfg.Seed, 0x70727475))
	// Intents: unique amounts, so each transfer belongs to one intent.
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
		r.intents = append(r.intents, &intent{n: i,
			key: fmt.Sprintf("torture-%d-%06d-%s", cfg.Seed, i, randomHex(4)), from: from, to: to, amount: amount,
			body: fmt.Sprintf(`{"from":%d,"to":%d,"amountKobo":%d}`, from, to, amount),
		})
	}
	// The books as the run finds them: what each account opened with,
	// for the audit at the end, and the transfers already there.
	start, err := audit.Read(ctx, cfg.DB, nil)
	if err != nil {
		return Report{}, err
	}
	opening := start.AsOpening()
	r.before = len(start.Transfers)

	// The load, with faults from a schedule drawn from the seed.
	work := make(chan *intent)
	var wg sync.WaitGroup
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := mrand.New(mrand.NewPCG(cfg.Seed, uint64(c)+1))
			for in := range work {
				r.dispatched.Add(1)
				r.drive(ctx, rnd, in)
			}
		}()
	}
	faultsDone := make(chan struct{})
	go func() { defer close(faultsDone); r.inject(ctx, seed) }()
	stopLive := r.live()
	var stop <-chan time.Time
	if cfg.Duration > 0 {
		stop = time.After(cfg.Duration)
	}
	sent := 0
dispatch:
	for _, in := range r.intents {
		select {
		case work <- in:
			sent++
		case <-stop:
			break dispatch
		case <-ctx.Done():
			break dispatch
		}
	}
	close(work)
	wg.Wait()
	r.intents = append(r.intents[:sent], r.extra...)
	r.loadOver.Store(true) // the injector stops with the load
	<-faultsDone
	stopLive()
	lastFault := time.Now()

	if cfg.FaultsOver != nil {
		cfg.FaultsOver()
	}

	// Resolution: every intent must settle, each on its own, side by side
	// (as the clients that sent them would), within one bound from the
	// moment the faults stopped.
	settle := cfg.Settle
	if settle == 0 {
		settle = cfg.LockTTL + 15*time.Second
	}
	deadline := lastFault.Add(settle)
	todo := make(chan *intent)
	var settlers sync.WaitGroup
	for c := 0; c < max(1, cfg.Clients); c++ {
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
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	resolved := time.Since(lastFault)
	rep := r.check(ctx, opening)
	rep.LeftOut = leftOut
	rep.ResolveMs = resolved.Milliseconds()
	sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	if n := len(r.lat); n > 0 {
		rep.P50 = float64(r.lat[n/2].Microseconds()) / 1000
		rep.P99 = float64(r.lat[n*99/100].Microseconds()) / 1000
	}
	for _, rp := range cfg.Replicas {
		m := rp.Metrics()
		r.faults["lost-response"].Add(m["bank_lost_responses_total"])
		r.fenced.Add(m["bank_fenced_total"])
		r.takeovers.Add(m["bank_takeovers_total"])
	}
	rep.Faults = map[string]int64{}
	for k, v := range r.faults {
		rep.Faults[k] = v.Load()
	}
	rep.Faults["takeovers (seen by the servers)"] = r.takeovers.Load()
	rep.Faults["fencing rejections (seen by the servers)"] = r.fenced.Load()
	for _, f := range cfg.Faults {
		if rep.Faults[f] == 0 {
			rep.Missing = append(rep.Missing, f)
		}
	}
	// A pause proves something only if a retry took a key over from the
	// paused replica and the fencing token then refused its late work
	// (fencedPause arranges both; this checks they happened).
	if slices.Contains(cfg.Faults, "replica-pause") && cfg.Mistake == "" {
		for _, f := range []string{"takeovers (seen by the servers)", "fencing rejections (seen by the servers)"} {
			if rep.Faults[f] == 0 {
				rep.Missing = append(rep.Missing, f)
			}
		}
	}
	switch {
	case len(rep.Violations) > 0:
		rep.Verdict = "invalid"
	case len(rep.Missing) > 0:
		rep.Verdict = "unknown"
	default:
		rep.Verdict = "valid"
	}
	return rep, nil
}
