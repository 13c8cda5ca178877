package payoutgrade

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/cmd/bank/internal/served"
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
	{Name: "refused", Title: "a payout the rail refuses (422): left pending, not sent again", See: "bank scenario rails", run: refused},
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
	// tightSleep: a worker asleep less than this per try, on average,
	// while the rail was down, does not wait between tries (it sleeps
	// only while the rail's answer is on its way); waitSleep: one asleep
	// this long a try or more waits. Measured quiet and beside stress-ng
	// --cpu 8 and 24 (load to 26 on 2 cores): tight loops asleep 0-12 ms
	// a try (Node.js and Python, main thread; Go, all threads), and 14 ms
	// (a Node.js loop at load 11 in CI); workers that wait 145-480 ms.
	tightSleep = 30 * time.Millisecond
	waitSleep  = 60 * time.Millisecond
	busyGap    = 200 * time.Millisecond
	fewTries   = 20
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
		t.Must(t.ctx.Err())
		if err := t.exited(); err != nil {
			t.noteRail()
			t.Fail(nil, "the worker exited (%s) before it sent a row", err)
		}
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
	from := time.Now()
	before, witnessed := t.wanting()
	for time.Now().Before(until) {
		p := t.pending(rows)
		if len(p) == len(rows) {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		// A row read done. On a busy machine the read may have come
		// after the rail was up again and paid it: the rail's record,
		// read after, says whether it had.
		calls := t.rail.log()
		for _, r := range rows {
			if slices.Contains(p, r.ID) {
				continue
			}
			if !slices.ContainsFunc(forRow(calls, r.Kobo), func(c call) bool { return c.Paid }) {
				t.noteRail()
				t.Fail(&mDoneEarly, "row %d was marked done while the rail was down, and the rail had paid nothing for it", r.ID)
			}
		}
		break
	}
	after, still := t.wanting()
	to := time.Now()
	use := wanted{main: after.main - before.main, all: after.all - before.all, of: to.Sub(from), known: witnessed && still}
	use.free = use.of - onRail(t.rail.log(), from, to)
	if use.known {
		t.Note("while the rail was down (%s), the worker's requests waited on the rail %s; its main thread ran or waited for a core %s, all its threads together %s (asleep the rest)", use.of.Round(time.Millisecond), (use.of - use.free).Round(time.Millisecond), use.main.Round(time.Millisecond), use.all.Round(time.Millisecond))
	}
	var sent []time.Time
	for _, c := range forRow(t.rail.log(), firstRow) {
		if c.Method == http.MethodPost && c.At.Before(until) {
			sent = append(sent, c.Sent)
		}
	}
	slices.SortFunc(sent, time.Time.Compare) // logged in the order the rail read them
	tries := len(sent)
	var gaps []time.Duration
	for i := 1; i < len(sent); i++ {
		gaps = append(gaps, sent[i].Sub(sent[i-1]))
	}
	t.Note("the first row was tried %d times in the %s the rail was down; the gaps between its tries: %s", tries, downFor, msList(gaps))
	t.spacedOut(tries, gaps, use)
	if flat(gaps) && !pace.Busy() {
		t.Note("its waits did not grow: the gaps went from %s to %s; the lesson backs off, waiting longer after each failure (noted, not graded)", msList(gaps[:1]), msList(gaps[len(gaps)-1:]))
	}
	t.waitDone(rows)
	t.paidOnce(rows)
	t.Pass("the rows stayed pending while the rail was down (the first tried %d times), then were paid once each", tries)
}

// spacedOut ends the check failed when the worker tried the down rail in
// a tight loop. Where it can be read (Linux), the worker's own use of the
// processor says so: a worker that waits between tries sleeps, however
// busy the machine, at least its wait a try; one that does not sleeps only
// while it waits on the rail (or its database). Asleep is the time its
// threads neither ran nor waited for a core; its main thread (where an
// event loop, or a program's only thread, runs) tells a loop that never
// sleeps, all its threads together (a runtime's others compile, collect
// garbage, or run its goroutines) a worker that does. A loop is known by
// how little it slept at most, its waits on the rail counted in; a worker
// that waits, by how long it slept at least while no request of its was
// at the rail (a busy machine makes the rail's answers slow, and a loop
// sleeps through them). Where it cannot be read, or falls between the
// two, the gaps between the tries say so, on a quiet machine: a busy one
// spaces a tight loop's tries out as wide as short waits.
func (t *trial) spacedOut(tries int, gaps []time.Duration, use wanted) {
	median := time.Duration(0)
	if len(gaps) > 0 {
		median = slices.Sorted(slices.Values(gaps))[len(gaps)/2]
	}
	mainMost := use.asleep(use.of, use.main, tries)
	mainLeast, allLeast := use.asleep(use.free, use.main, tries), use.asleep(use.free, use.all, tries)
	slept := use.known && (mainLeast >= waitSleep || allLeast >= waitSleep)
	switch {
	case tries > tightLoop:
		t.Fail(&mNoBackoff, "the first row was sent %d times in the %s the rail was down: a worker that waits between tries (longer each time, a second at most) sends it a handful of times", tries, downFor)
	// A handful of tries: a loop makes hundreds on a quiet machine; on a
	// busy one, only the witness tells.
	case len(gaps) < 4 && (!pace.Busy() || slept):
	case len(gaps) < 4:
		t.Unknown("the first row was sent %d times in the %s the rail was down, and the machine was too busy to tell a worker that waits from a loop kept from running", tries, downFor)
	case use.known && mainMost < tightSleep:
		t.Fail(&mNoBackoff, "the first row was sent %d times in the %s the rail was down, and the worker hardly slept between its tries: %s a try on average; a worker waits between tries, longer each time", tries, downFor, mainMost.Round(time.Millisecond))
	case use.known && allLeast >= waitSleep:
	case !pace.Busy() && median < tightGap:
		t.Fail(&mNoBackoff, "the first row was sent %d times in the %s the rail was down, half of them within %s of the one before: a worker waits between tries, longer each time", tries, downFor, tightGap)
	case !pace.Busy():
	// Busy: the main thread slept a wait a try, while the others worked.
	// A loop spread over threads makes hundreds of tries in the time,
	// even on a busy machine.
	case use.known && mainLeast >= waitSleep && median >= busyGap && tries <= fewTries:
	default:
		t.Unknown("the first row was sent %d times in the %s the rail was down, but the machine was too busy to tell a tight loop from waits by the gaps between them (%s)", tries, downFor, msList(gaps))
	}
}

// flat reports whether three gaps or more between tries stayed short of a
// second, the later half's median not half again the earlier half's: a
// wait that does not back off. (A note only: random waits can look flat
// over a few tries.)
func flat(gaps []time.Duration) bool {
	if len(gaps) < 3 {
		return false
	}
	median := func(d []time.Duration) time.Duration { return slices.Sorted(slices.Values(d))[len(d)/2] }
	half := len(gaps) / 2
	return slices.Max(gaps) < 800*time.Millisecond && median(gaps[half:]) < median(gaps[:half])*3/2
}

// wanted is how long a check's workers wanted the processor (ran, or
// waited for a core) in a span of time (of): their main threads, and all
// their threads; free is the part of the span when no request of theirs
// was at the rail.
type wanted struct {
	main, all, of, free time.Duration
	known               bool
}

// asleep is how long, a try, threads that wanted d of span were asleep.
func (w wanted) asleep(span, d time.Duration, tries int) time.Duration {
	return max(0, span-d) / time.Duration(max(1, tries))
}

// wanting is how long the workers' processes have wanted the processor
// so far (pace.GroupWanting), and whether that can be read here.
func (t *trial) wanting() (wanted, bool) {
	var sum wanted
	for _, w := range t.workers {
		main, all, ok := pace.GroupWanting(w.child.PID())
		if !ok {
			return wanted{}, false
		}
		sum.main += main
		sum.all += all
	}
	return sum, true
}

// payoutTakes is how long the rail takes over each payout in
// two-workers: the workers' drains overlap.
const payoutTakes = 100 * time.Millisecond

func twoWorkers(t *trial) {
	t.serve(nil)
	t.rail.latency = payoutTakes
	t.startWorker()
	t.startWorker()
	// Both at work on the outbox before the rows are written: a worker
	// that started late would find them drained, and no claim be needed.
	both := t.polling(t.workers)
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
	if !both && (byDoor[1] == 0 || byDoor[2] == 0) {
		t.Unknown("one worker paid every row, and the grader never saw both read the outbox before the rows were written: whether the rows are claimed cannot be told (the grader tells a worker's sessions by their application_name; a driver that drops it from DATABASE_URL hides them)")
	}
	t.Pass("ten rows paid once each (worker 1 paid %d, worker 2 %d)", byDoor[1], byDoor[2])
}

// pollBound is how long the grader waits to see every worker read the
// outbox.
const pollBound = 10 * time.Second

// polling waits until each of workers has been seen reading the outbox,
// and reports whether each was, within pollBound. A session is a worker's
// when that worker's processes hold its end of the connection (its
// client_port), or, where the grader cannot read whose sockets are whose,
// when it keeps the application_name the grader gave it; it has read the
// outbox when its last statement names payout_outbox.
func (t *trial) polling(workers []*worker) bool {
	seen := map[*worker]bool{}
	for deadline := pace.After(pollBound); !deadline.Passed(); time.Sleep(10 * time.Millisecond) {
		rows, err := t.db.Query(t.ctx, `SELECT coalesce(client_port, -1), application_name FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE '%payout_outbox%'`)
		t.Must(err)
		sessions, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
			Port int
			App  string
		}])
		t.Must(err)
		for _, w := range workers {
			ports, known := served.LocalPorts(w.child.PID())
			for _, s := range sessions {
				if ports[s.Port] || !known && s.App == w.app {
					seen[w] = true
				}
			}
		}
		if len(seen) == len(workers) {
			t.Note("both workers were seen reading the outbox before the rows were written")
			return true
		}
		if err := t.exited(); err != nil {
			t.noteRail()
			t.Fail(nil, "a worker exited (%s) before the rows were written", err)
		}
	}
	t.Note("the grader did not see both workers read the outbox within %s", pollBound)
	return false
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
	t.pause(pace.Stretch(time.Second)) // room for a resend
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
	w := t.newWorker(url)
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
		t.timeline.Now("the grader kills worker 1 (SIGKILL), held at the first write of its transaction %d", k)
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
