package grade

import (
	"fmt"

	mrand "math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/cmd/bank/internal/torture"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
)

// tortureFaults are the faults of bank torture that need nothing of the
// server but the contract, and that a short run is sure to inject. (A
// pause is the pause check's; a database crash is left out: it tests the
// driver's reconnection, not the lesson. Changed bodies and clients that
// crash and resume also happen, but too seldom in 100 intents to be
// counted on.)
var tortureFaults = []string{"duplicate", "concurrent-duplicate", "other-replica", "lost-response", "replica-kill"}

// tortureRun is a short bank torture run at two instances of the server,
// through the grader's proxies, which lose one reply in five.
func tortureRun(t *trial) {
	var mu sync.Mutex
	var settling atomic.Bool // the faults are over: the network heals too
	rnd := mrand.New(mrand.NewPCG(1, 2))
	for _, p := range t.proxies {
		p.loseRate = func() bool {
			mu.Lock()
			defer mu.Unlock()
			return !settling.Load() && rnd.Float64() < 0.2
		}
	}
	replicas := make([]torture.Replica, len(t.servers))
	for i := range t.servers {
		replicas[i] = &replica{t: t, i: i}
	}
	t.ownCount = true
	rep, err := torture.Run(t.ctx, torture.Config{
		// Each run of --repeat throws its own faults.
		Seed: uint64(t.run) + 1, Intents: 100, Clients: 4, LockTTL: t.cfg.LockTTL, Replicas: replicas, DB: t.bank,
		// A busy machine sends fewer intents in a given time: the load
		// lasts longer there, so that each fault still comes up.
		Faults: tortureFaults, Duration: t.bound(20 * time.Second), Opaque: true, QuotedKeys: t.cfg.keys.quoted,
		// As the crash check: once its lock has expired, a retry must get
		// through; a key still refused 5 s later is stuck.
		Settle:     t.cfg.LockTTL + t.bound(5*time.Second),
		FaultsOver: func() { settling.Store(true) },
	})
	t.must(err)
	var faults []string
	for _, f := range tortureFaults {
		faults = append(faults, fmt.Sprintf("%s %d", f, rep.Faults[f]))
	}
	t.note("%d intents, seed 1; faults: %s", rep.Intents, strings.Join(faults, ", "))
	t.rec.Line("%d intents, seed 1; faults: %s", rep.Intents, strings.Join(faults, ", "))
	t.note("once the faults stopped (no more kills, no lost replies), every intent was sent again under its key until answered, for at most %s", (t.cfg.LockTTL + t.bound(5*time.Second)).Round(time.Second))
	for i, v := range rep.Violations {
		if i == 10 {
			t.note("… and %d more", len(rep.Violations)-10)
			break
		}
		t.note("%s", v)
	}
	for i, key := range rep.Offending {
		if i == 3 {
			break
		}
		for _, row := range t.rowsNaming(key) {
			t.note("the server's own row for %s: %s", key, row)
		}
	}
	switch {
	case rep.Verdict == "pass":
		t.passed("valid: %d intents through lost replies, duplicates and a killed server; each moved money once", rep.Intents)
	case rep.Verdict == "fail" && unresolvedOnly(rep.Violations) && pace.Busy():
		// Only intents that never settled, on a busy machine: the server
		// may just have been too slow to answer in time.
		t.unknown("%d intents did not settle in time, on a machine too busy to tell whether they would have: %s", len(rep.Violations), rep.Violations[0])
	case rep.Verdict == "fail":
		if d := rep.Diagnosis; d != nil && d.Mistake != "" {
			if m, ok := mistakes.Named(d.Mistake); ok {
				t.failAs(m, "invalid: %d violations; %s; such as: %s", len(rep.Violations), d.Why, rep.Violations[0])
				break
			}
		}
		if d := rep.Diagnosis; d != nil && d.Why != "" {
			t.note("what torture saw: %s", d.Why)
		}
		t.fail("invalid: %d violations, such as: %s", len(rep.Violations), rep.Violations[0])
	case pace.Busy():
		t.unknown("these faults never happened, on a machine too busy to send many intents, so the run proves little: %v", rep.Missing)
	default:
		t.notApplicable("unknown: these faults never happened, so the run proves little: %v", rep.Missing)
	}
	if runtime.GOOS == "windows" {
		t.note("(on Windows a killed server's own children may outlive it)")
	}
}

// unresolvedOnly reports whether every violation is an intent that never
// settled (and none moved money twice, or got two answers).
func unresolvedOnly(violations []string) bool {
	for _, v := range violations {
		if !strings.Contains(v, "did not resolve") {
			return false
		}
	}
	return len(violations) > 0
}

// replica is one instance of the server, as bank torture drives it.
type replica struct {
	t *trial
	i int
}

func (r *replica) URL() string    { return r.t.proxies[r.i].URL() }
func (r *replica) Kill() error    { r.t.kill(r.i); return nil }
func (r *replica) Restart() error { return r.t.restart(r.i) }
func (r *replica) Pause() error   { return r.t.pauseServer(r.i) }
func (r *replica) Resume() error  { return r.t.resumeServer(r.i) }
func (r *replica) Name() string   { return "" }
func (r *replica) Metrics() map[string]int64 {
	return map[string]int64{"bank_lost_responses_total": r.t.proxies[r.i].lost.Load()}
}

// rowsNaming are the rows of the server's own tables that mention key,
// as JSON: what the server itself recorded of a request that went wrong.
func (t *trial) rowsNaming(key string) []string {
	var rows []string
	for _, table := range t.ownTables() {
		found, err := t.bank.Query(t.ctx, "SELECT to_jsonb(r)::text FROM "+table+" r WHERE strpos(to_jsonb(r)::text, $1) > 0 LIMIT 3", key)
		var texts []string
		if err == nil {
			texts, err = pgx.CollectRows(found, pgx.RowTo[string])
		}
		if err != nil {
			rows = append(rows, fmt.Sprintf("%s (the grader could not read it: %v)", table, err))
			continue
		}
		for _, text := range texts {
			if r := []rune(text); len(r) > 300 {
				text = string(r[:300]) + "…"
			}
			rows = append(rows, table+" "+text)
		}
	}
	return rows
}
