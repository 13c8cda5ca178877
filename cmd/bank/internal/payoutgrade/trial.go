package payoutgrade

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
	"github.com/zudojs/bank/cmd/bank/internal/grade/verdict"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/cmd/bank/internal/witness"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
	"github.com/zudojs/bank/scenarios/lab/procs"
)

// trial is one run of one check: a fresh database, the rail, the workers
// started on them, and the card's line being written.
type trial struct {
	ctx          context.Context
	cfg          *Config
	db           *pgxpool.Pool // the grader's: the outbox, the witness, the gate
	workerURL    string
	rail         *rail
	workers      []*worker
	verdict.Line // the check's line of the card
	witness      bool
	timeout      time.Duration // RAIL_TIMEOUT_MS, stretched by the load
	rows         []row
	start        time.Time
	kills        []time.Time      // when the grader killed a worker
	timeline     *record.Timeline // what the grader did, for the diagram
}

// worker is one process of the learner's worker, and its door to the rail.
type worker struct {
	child  *procs.Child
	output *procs.Tail
	url    string // its door
	n      int    // worker 1, 2, …: its door's number too
	app    string // the application_name of its database sessions
}

// row is one payout the grader wrote into the outbox.
type row struct {
	ID            int64
	Account, Kobo int64
}

// runCheck runs one check once, on a fresh database.
func runCheck(ctx context.Context, cfg *Config, c Check, n int) (res grade.Result, err error) {
	url, workerURL, drop, err := cfg.NewDatabase(ctx, fmt.Sprintf("payout-%s-%d", c.Name, n))
	if err != nil {
		return res, err
	}
	defer drop()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	now := time.Now()
	t := &trial{ctx: ctx, cfg: cfg, db: pool, workerURL: workerURL, start: now, timeline: record.NewTimeline(now), timeout: pace.Stretch(cfg.RailTimeout).Round(time.Millisecond),
		Line: verdict.New(c.Name, c.Title, c.Required, c.See)}
	if t.witness, err = witness.Installed(ctx, pool); err != nil {
		return res, err
	}
	defer func() {
		for _, w := range t.workers {
			w.child.Kill()
		}
		if t.rail != nil {
			t.rail.close()
		}
	}()
	t.Run(func() { c.run(t) })
	if t.rail != nil {
		t.Result.Recording = t.drawing(c)
	}
	if ctx.Err() != nil {
		return t.Result, ctx.Err()
	}
	return t.Result, nil
}

// serve makes the check's rail, with its plan.
func (t *trial) serve(plan func(c call, n int) faultKind) { t.rail = newRail(plan) }

// startWorker starts one more process of the worker, with a door of its
// own to the rail.
func (t *trial) startWorker() *worker {
	if t.rail == nil {
		t.serve(nil)
	}
	url, err := t.rail.open()
	t.Must(err)
	w := t.newWorker(url)
	t.run(w)
	t.workers = append(t.workers, w)
	return w
}

// newWorker is one more worker, behind the rail's door url.
func (t *trial) newWorker(url string) *worker {
	n := len(t.workers) + 1
	return &worker{url: url, n: n, app: "bank " + workerLane(n)}
}

// run starts w's process (again).
func (t *trial) run(w *worker) {
	spec := procs.Spec{Path: t.cfg.Command[0], Args: t.cfg.Command[1:], Group: true, StopGrace: 5 * time.Second, Env: []string{
		"DATABASE_URL=" + witness.Tagged(t.workerURL, w.app), "RAIL_URL=" + w.url, "RAIL_TIMEOUT_MS=" + strconv.FormatInt(t.timeout.Milliseconds(), 10)}}
	if len(t.workers) == 0 && w.child == nil && t.timeout != t.cfg.RailTimeout {
		t.Note("RAIL_TIMEOUT_MS=%d: %s, stretched by the machine's load", t.timeout.Milliseconds(), t.cfg.RailTimeout)
	}
	t.timeline.Now("the grader starts %s", workerLane(w.n))
	child, err := spec.Start(context.WithoutCancel(t.ctx))
	if err != nil {
		t.Fail(nil, "cannot start %s: %v; check the command after --", t.cfg.Command[0], err)
	}
	w.child, w.output = child, spec.Output
}

// add writes n rows into the outbox: ₦1,000, ₦1,001, … to Bola, each
// amount the grader's way of telling the rows apart at the rail.
func (t *trial) add(n int) []row {
	var rows []row
	for range n {
		r := row{Account: 2, Kobo: int64(100_000 + 100*len(t.rows))}
		t.Must(t.db.QueryRow(t.ctx, "INSERT INTO payout_outbox (account_id, amount_kobo) VALUES ($1, $2) RETURNING id", r.Account, r.Kobo).Scan(&r.ID))
		t.rows = append(t.rows, r)
		rows = append(rows, r)
	}
	if n == 1 {
		t.timeline.Now("the grader writes row %d into the outbox: pay %s to account %d", rows[0].ID, bank.Naira(rows[0].Kobo), rows[0].Account)
	} else if n > 1 {
		t.timeline.Now("the grader writes rows %d to %d into the outbox: pay %s, %s, … to account %d", rows[0].ID, rows[n-1].ID, bank.Naira(rows[0].Kobo), bank.Naira(rows[1].Kobo), rows[0].Account)
	}
	return rows
}

// doneBound is how long the rows may take to be done (stretched on a busy
// machine).
const doneBound = 20 * time.Second

// waitDone waits until every row of rows is done; when one is not in
// time, the check fails (unknown when the machine was busy).
func (t *trial) waitDone(rows []row) {
	deadline := pace.After(doneBound)
	for {
		pending := t.pending(rows)
		if len(pending) == 0 {
			return
		}
		if t.exited() != nil {
			t.noteRail()
			t.Fail(nil, "the worker exited (%s) with rows %v still pending", t.exited(), pending)
		}
		if deadline.Passed() {
			// What the rail saw may say already why they are not done.
			for _, r := range rows {
				t.askedFirst(r, forRow(t.rail.log(), r.Kobo))
			}
			t.noteRail()
			if deadline.Busy() {
				t.Unknown("rows %v were not done within %s, and the machine was too busy to tell whether they ever would be", pending, doneBound)
			}
			t.Fail(nil, "rows %v were not done within %s of being written", pending, doneBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pause waits d, or ends the check when the grade is stopped (Ctrl-C).
func (t *trial) pause(d time.Duration) {
	select {
	case <-time.After(d):
	case <-t.ctx.Done():
		t.Must(t.ctx.Err())
	}
}

// exited says how a worker that ended by itself ended, or nil.
func (t *trial) exited() error {
	for _, w := range t.workers {
		select {
		case <-w.child.Exited():
			return fmt.Errorf("%s", exitWords(w.child.Err()))
		default:
		}
	}
	return nil
}

func exitWords(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// pending lists the ids of rows not done. It never waits on the worker's
// locks (a worker may hold its table locked in a transaction the gate
// holds): a row it cannot read now counts as pending.
func (t *trial) pending(rows []row) []int64 {
	var out []int64
	for _, r := range rows {
		var status string
		err := pgx.BeginFunc(t.ctx, t.db, func(tx pgx.Tx) error {
			if _, err := tx.Exec(t.ctx, "SET LOCAL lock_timeout = '200ms'"); err != nil {
				return err
			}
			return tx.QueryRow(t.ctx, "SELECT status FROM payout_outbox WHERE id = $1", r.ID).Scan(&status)
		})
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
			status = "locked"
		} else {
			t.Must(err)
		}
		if status != "done" {
			out = append(out, r.ID)
		}
	}
	return out
}

// paidOnce checks each row: paid exactly once at the rail, under one
// reference (the one stored in the row), sent by one worker only, and
// asked about before any reference was sent again after an outcome the
// worker could not know.
func (t *trial) paidOnce(rows []row) {
	calls := t.rail.log()
	for _, r := range rows {
		var ref *string
		var status string
		t.Must(t.db.QueryRow(t.ctx, "SELECT reference, status FROM payout_outbox WHERE id = $1", r.ID).Scan(&ref, &status))
		mine := forRow(calls, r.Kobo)
		refs, paid, doors := map[string]bool{}, 0, map[int]bool{}
		for _, c := range mine {
			if c.Method == http.MethodPost {
				refs[c.Reference] = true
				doors[c.Door] = true
			}
			if c.Paid {
				paid++
			}
		}
		switch {
		case paid > 1 && len(doors) > 1:
			t.noteCalls(mine)
			t.Fail(&mNoClaim, "row %d (%s) was paid %d times, sent by %d workers: each row must be sent by one worker only", r.ID, bank.Naira(r.Kobo), paid, len(doors))
		case paid > 1:
			t.noteCalls(mine)
			t.Fail(t.newRefs(r, mine), "row %d (%s) was paid %d times, under %d references: one reference per row, the same on every attempt, lets the rail pay it once", r.ID, bank.Naira(r.Kobo), paid, len(refs))
		case paid == 0:
			t.noteCalls(mine)
			t.Fail(&mDoneEarly, "row %d (%s) is %s, but the rail never paid it", r.ID, bank.Naira(r.Kobo), status)
		case len(refs) > 1:
			t.noteCalls(mine)
			t.Fail(t.newRefs(r, mine), "row %d was sent under %d references: one reference per row, the same on every attempt", r.ID, len(refs))
		case ref == nil || !refs[*ref]:
			t.noteCalls(mine)
			t.Fail(nil, "row %d's reference column is %s, not the reference the rail paid", r.ID, quoted(ref))
		}
		t.askedFirst(r, mine)
	}
}

// newRefs is the mistake a row sent under several references fits: the
// reference not stored before its first send, when the witness saw one
// of them written into the row only after it went to the rail (or never),
// else a new reference made on purpose for each attempt.
func (t *trial) newRefs(r row, mine []call) *mistakes.Mistake {
	if !t.witness {
		return &mNewReference
	}
	writes, err := witness.Since(t.ctx, t.db, 0)
	t.Must(err)
	for _, c := range mine {
		if c.Method != http.MethodPost {
			continue
		}
		stored := false
		for _, w := range writes {
			if isTable(w.Table, "payout_outbox") && w.Op == "UPDATE" && strings.Contains(w.New, `"reference": "`+c.Reference+`"`) && w.At.Before(c.At) {
				stored = true
			}
		}
		if !stored {
			t.Note("the reference %s went to the rail before any committed write stored it in row %d", c.Reference, r.ID)
			return &mNotStored
		}
	}
	return &mNewReference
}

// isTable reports whether the witness's table name (schema.table) is name.
func isTable(qualified, name string) bool {
	_, tbl, _ := strings.Cut(qualified, ".")
	return strings.Trim(tbl, `"`) == name
}

// askedFirst fails the check when, after a POST of the row whose outcome
// the worker could not know (no answer, a 5xx, a 409, or the worker
// killed since), the next request about its reference is another POST.
func (t *trial) askedFirst(r row, mine []call) {
	unknown, sent := map[string]bool{}, map[string]time.Time{}
	for _, c := range mine {
		switch {
		case c.Method == http.MethodPost && (unknown[c.Reference] || t.killedBetween(sent[c.Reference], c.At)):
			t.noteCalls(mine)
			t.Fail(&mResent, "row %d's reference %s was sent again after an answer that did not say whether it was paid (or after the worker was killed), without asking GET /payouts/%s first", r.ID, c.Reference, c.Reference)
		case c.Method == http.MethodPost:
			unknown[c.Reference] = c.Status == 0 || c.Status >= 500 || c.Status == http.StatusConflict
			sent[c.Reference] = c.At
		case c.Method == http.MethodGet:
			unknown[c.Reference], sent[c.Reference] = false, time.Time{}
		}
	}
}

// killedBetween reports whether the grader killed a worker after from
// (not zero) and before to.
func (t *trial) killedBetween(from, to time.Time) bool {
	for _, k := range t.kills {
		if !from.IsZero() && k.After(from) && k.Before(to) {
			return true
		}
	}
	return false
}

func quoted(s *string) string {
	if s == nil {
		return "NULL"
	}
	return strconv.Quote(*s)
}

func (t *trial) noteCalls(calls []call) {
	for _, c := range calls {
		t.Note("+%dms %s", c.At.Sub(t.start).Milliseconds(), c)
	}
}

// noteRail notes every call the rail got, and the workers' last output.
func (t *trial) noteRail() {
	if t.rail != nil {
		t.noteCalls(t.rail.log())
	}
	for i, w := range t.workers {
		if out := strings.TrimSpace(w.output.LastLines(6)); out != "" {
			t.Note("worker %d's last output: %s", i+1, strings.Join(strings.Split(out, "\n"), " | "))
		}
	}
}
