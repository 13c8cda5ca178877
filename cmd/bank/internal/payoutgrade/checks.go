package payoutgrade

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/cmd/bank/internal/witness"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
)

// The catalogue's mistakes a worker's evidence can fit.
var (
	mNewReference = mistakes.Must("new-reference-per-attempt")
	mResent       = mistakes.Must("resent-without-asking")
	mDoneEarly    = mistakes.Must("done-without-rail")
	mNoClaim      = mistakes.Must("no-claim")
	mNotStored    = mistakes.Must("reference-not-stored")
	mNoBackoff    = mistakes.Must("no-backoff")
	mRetried      = mistakes.Must("retried-refusal")
)

// Checks are the rail's ways of misbehaving, each with what a good worker
// does, in the order they run.
var Checks = []Check{
	{Name: "plain", Title: "three rows: each paid once, under the reference stored in it, and done", Required: true, See: "bank scenario rails", run: plain},
	{Name: "lost-reply", Title: "the rail pays, and its answer is lost: asked about (GET) before any resend, paid once", Required: true, See: "bank scenario rails", run: thrown(lose)},
	{Name: "server-error", Title: "the rail pays, then answers 500: asked about before any resend, paid once", Required: true, See: "bank scenario rails", run: thrown(fail500)},
	{Name: "rail-down", Title: "the rail down for two seconds from the first send: rows pending meanwhile, tries spaced out, then paid once", Required: true, See: "bank scenario rails", run: railDown},
	{Name: "killed", Title: "the worker killed (SIGKILL) at each of its writes, started again: each row paid once", Required: true, See: "bank scenario rails", run: killed},
	{Name: "two-workers", Title: "two workers at once on ten rows: each row sent by one of them, paid once", Required: true, See: "bank scenario rails", run: twoWorkers},
	{Name: "refused", Title: "a payout the rail refuses (422): left pending, not sent again (recommended)", See: "bank scenario rails", run: refused},
}

func plain(t *trial) {
	t.startWorker()
	rows := t.add(3)
	t.waitDone(rows)
	t.paidOnce(rows)
	t.noteRail()
	t.Pass("each row paid once, under the reference stored in it, and done")
}

// firstRow is the amount of the first row a check writes.
const firstRow = 100_000

// thrown throws kind at the first POST of the first row, and passes the
// rest.
func thrown(kind faultKind) func(t *trial) {
	return func(t *trial) {
		t.serve(func(c call, n int) faultKind {
			if c.Kobo == firstRow && n == 1 {
				return kind
			}
			return pass
		})
		t.startWorker()
		rows := t.add(2)
		t.waitDone(rows)
		t.paidOnce(rows)
		t.noteCalls(forRow(t.rail.log(), firstRow))
		t.Pass("the rail's answer to the first row was not one the worker could trust; it asked before sending again, and every row was paid once")
	}
}

// downFor is how long the rail is down in rail-down; tightLoop is more
// tries of one row than a worker that waits at all makes in that time.
const (
	downFor   = 2 * time.Second
	tightLoop = 60
	tightGap  = 50 * time.Millisecond
	busyGap   = 200 * time.Millisecond
)

func msList(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, strconv.FormatInt(d.Milliseconds(), 10))
	}
	return strings.Join(s, ", ") + " ms"
}

func railDown(t *trial) {
	// Down from the first send of the first row until downFor after it:
	// however long the worker took to start and get there, it meets the
	// rail down for that long.
	var firstAt atomic.Int64
	t.serve(func(c call, n int) faultKind {
		if c.Kobo == firstRow {
			firstAt.CompareAndSwap(0, c.At.UnixNano())
		}
		if f := firstAt.Load(); f == 0 || c.At.UnixNano() < f+int64(downFor) {
			return down
		}
		return pass
	})
	t.startWorker()
	rows := t.add(2)
	deadline := pace.After(doneBound)
	for firstAt.Load() == 0 {
		if deadline.Passed() {
			t.noteRail()
			if deadline.Busy() {
				t.Unknown("the worker sent no row within %s, and the machine was too busy to tell whether it ever would", doneBound)
			}
			t.Fail(nil, "the worker sent no row within %s of its being written", doneBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
	until := time.Unix(0, firstAt.Load()).Add(downFor)
	for time.Now().Before(until) {
		if p := t.pending(rows); len(p) < len(rows) {
			t.noteRail()
			t.Fail(&mDoneEarly, "a row was marked done while the rail was down and had paid nothing")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var sent []time.Time
	for _, c := range forRow(t.rail.log(), firstRow) {
		if c.Method == http.MethodPost && c.At.Before(until) {
			sent = append(sent, c.At)
		}
	}
	tries := len(sent)
	var gaps []time.Duration
	for i := 1; i < len(sent); i++ {
		gaps = append(gaps, sent[i].Sub(sent[i-1]))
	}
	t.Note("the first row was tried %d times in the %s the rail was down; the gaps between its tries: %s", tries, downFor, msList(gaps))
	// A tight loop: many tries, most of them hard on each other's heels.
	// A busy machine spaces a tight loop's tries out as wide as a short
	// wait's: there, close tries cannot be told from short waits.
	median := time.Duration(0)
	if len(gaps) > 0 {
		sorted := slices.Sorted(slices.Values(gaps))
		median = sorted[len(sorted)/2]
	}
	switch {
	case tries > tightLoop:
		t.Fail(&mNoBackoff, "the first row was sent %d times in the %s the rail was down: a worker that waits between tries (longer each time, a second at most) sends it a handful of times", tries, downFor)
	case len(gaps) < 4 || median >= busyGap:
	case !pace.Busy() && median < tightGap:
		t.Fail(&mNoBackoff, "the first row was sent %d times in the %s the rail was down, half of them within %s of the one before: a worker waits between tries, longer each time", tries, downFor, tightGap)
	case pace.Busy():
		t.Unknown("the first row was sent %d times in the %s the rail was down, half of them within %s of the one before, but the machine was too busy to tell a tight loop from short waits", tries, downFor, busyGap)
	}
	t.waitDone(rows)
	t.paidOnce(rows)
	t.Pass("the rows stayed pending while the rail was down (the first tried %d times), then were paid once each", tries)
}

// payoutTakes is how long the rail takes over each payout in
// two-workers: the workers' drains overlap.
const payoutTakes = 100 * time.Millisecond

func twoWorkers(t *trial) {
	t.serve(nil)
	t.rail.latency = payoutTakes
	t.startWorker()
	t.startWorker()
	rows := t.add(10)
	t.waitDone(rows)
	t.paidOnce(rows)
	calls := t.rail.log()
	for _, r := range rows {
		doors := map[int]bool{}
		mine := forRow(calls, r.Kobo)
		for _, c := range mine {
			if c.Method == http.MethodPost {
				doors[c.Door] = true
			}
		}
		if len(doors) > 1 {
			t.noteCalls(mine)
			t.Fail(&mNoClaim, "row %d was sent by both workers (paid once, by luck or by the rail's refusal of a reference it had paid): each row must be sent by one worker only", r.ID)
		}
	}
	byDoor := map[int]int{}
	for _, c := range t.rail.log() {
		if c.Paid {
			byDoor[c.Door]++
		}
	}
	t.Pass("ten rows paid once each (worker 1 paid %d, worker 2 %d)", byDoor[1], byDoor[2])
}

func refused(t *trial) {
	t.serve(func(c call, n int) faultKind {
		if c.Kobo == firstRow {
			return refuse
		}
		return pass
	})
	t.startWorker()
	rows := t.add(2)
	t.waitDone(rows[1:])
	time.Sleep(pace.Stretch(time.Second)) // room for a resend
	if len(t.pending(rows[:1])) == 0 {
		t.noteRail()
		t.Fail(&mDoneEarly, "the row the rail refused was marked done")
	}
	sent := 0
	for _, c := range forRow(t.rail.log(), firstRow) {
		if c.Method == http.MethodPost {
			sent++
		}
	}
	if sent > 1 {
		t.noteRail()
		t.Fail(&mRetried, "the row the rail refused (422) was sent %d times", sent)
	}
	t.Pass("the refused row was sent once and left pending; the other was paid")
}

// maxKillAt bounds the writes the killed check kills the worker at.
const maxKillAt = 6

// heldBound is how long the grader waits for the worker to write.
const heldBound = 10 * time.Second

// killed writes a row with the worker stopped, shuts the witness's gate,
// starts the worker, lets k-1 of its transactions through, one at a time,
// and kills it at the k-th one's first write, for k = 1, 2, … until the
// row is done before its k-th; each time it starts the worker again,
// and the row must end done, paid once, the worker having asked about
// its reference before any resend.
func killed(t *trial) {
	if !t.witness {
		t.Unknown("the database has no witness, so the grader cannot stop the worker at its writes")
	}
	if t.rail == nil {
		t.serve(nil)
	}
	url, err := t.rail.open()
	t.Must(err)
	w := &worker{url: url}
	t.workers = append(t.workers, w)
	for k := 1; k <= maxKillAt; k++ {
		rows := t.add(1)
		g, err := witness.Close(t.ctx, t.db)
		t.Must(err)
		t.run(w)
		finished := false
		for step := 1; step <= k; step++ {
			if !t.waitHeld(g, rows[0]) {
				finished = true
				break
			}
			if step < k {
				t.step(g)
			}
		}
		if finished {
			g.Open(t.ctx)
			t.paidOnce(t.rows)
			if k == 1 {
				t.Fail(nil, "row %d was done without a single write of the worker's", rows[0].ID)
			}
			w.child.Kill()
			<-w.child.Exited()
			t.Pass("killed at each of its %d transaction(s) for a row; started again each time, it paid every row once", k-1)
		}
		w.child.Kill()
		<-w.child.Exited()
		t.kills = append(t.kills, time.Now())
		t.endHeld(g)
		g.Open(t.ctx)
		t.Note("killed (SIGKILL) at the first write of its transaction %d for row %d", k, rows[0].ID)
		t.run(w)
		t.waitDone(rows)
		w.child.Kill()
		<-w.child.Exited()
		t.paidOnce(t.rows)
	}
	t.Pass("killed at each of its first %d transactions for a row; started again each time, it paid every row once", maxKillAt)
}

// waitHeld waits until a transaction of the worker is held at the gate
// (true), or r is done (false).
func (t *trial) waitHeld(g *witness.Gate, r row) bool {
	deadline := pace.After(heldBound)
	for {
		held, err := g.Waiting(t.ctx, t.db)
		t.Must(err)
		switch {
		case len(held) > 0:
			return true
		case len(t.pending([]row{r})) == 0:
			return false
		case deadline.Passed():
			g.Open(t.ctx)
			t.noteRail()
			t.Unknown("the worker neither wrote nor finished row %d within %s", r.ID, heldBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// step lets the transactions held at the gate go on, and waits until the
// gate is shut again behind them.
func (t *trial) step(g *witness.Gate) {
	shut, err := g.Let(t.ctx, pace.Stretch(heldBound))
	t.Must(err)
	if !shut {
		g.Open(t.ctx)
		t.Unknown("a transaction of the worker's let through the gate did not end within %s", heldBound)
	}
}

// endHeld ends the sessions held at the gate, as a crash does.
func (t *trial) endHeld(g *witness.Gate) { t.Must(g.EndHeld(t.ctx, t.db)) }
