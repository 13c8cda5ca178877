package grade

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
)

// trial is one check's world: its database, its servers, the proxies in
// front of them, and the evidence it gathers.
type trial struct {
	ctx     context.Context
	cfg     *Config
	db      *pgxpool.Pool // the admin's: PostgreSQL's views, the witness, the gate (never the server's tables)
	bank    *pgxpool.Pool // the server's own role's: every read of the bank's tables
	url     string
	servers []*instance
	proxies []*proxy
	intents []intent
	res     *Result
	run     int              // which run of the check this is (--repeat), from 0
	rec     *record.Recorder // what happened, for the check's diagram
	// ownCount: the check counts transfers per intent itself (torture),
	// so the ledger may hold transfers the trial's intents do not name.
	ownCount bool
	// hasWitness: whether the database has the witness, once asked.
	hasWitness *bool
	// settledSent: when settle last sent its request; settled409: when
	// it last sent one answered 409.
	settledSent, settled409 time.Time
}

// intent is one transfer the check asked for, by its accounts and
// amount, and how many times it should have moved money.
type intent struct {
	label          string
	from, to, kobo int64
	want           int
}

func (t *trial) startServer() error {
	in, err := startInstance(t.ctx, t.cfg, t.url)
	if err != nil {
		return err
	}
	p, err := startProxy(in.base, serverName(len(t.servers)), t.rec)
	if err != nil {
		in.kill()
		return err
	}
	t.servers = append(t.servers, in)
	t.proxies = append(t.proxies, p)
	return nil
}

// kill ends server i at once (SIGKILL), stop the orderly way (SIGTERM),
// restart starts it again on its port, and pauseServer and resumeServer
// freeze it and let it go on (SIGSTOP, SIGCONT): each drawn as it is done.
func (t *trial) kill(i int) {
	t.rec.Arrow(record.ActorApp, serverName(i), "kill (SIGKILL)", "")
	t.servers[i].kill()
}

func (t *trial) stop(i int) {
	t.rec.Arrow(record.ActorApp, serverName(i), "stop (SIGTERM)", "")
	t.servers[i].stop()
}

func (t *trial) restart(i int) error {
	err := t.servers[i].restart(t.ctx)
	if err != nil {
		t.rec.Arrow(record.ActorApp, serverName(i), "start again: "+record.Clean(err.Error()), "error")
		return err
	}
	t.rec.Arrow(record.ActorApp, serverName(i), "start again (on its port): it listens", "")
	return nil
}

func (t *trial) pauseServer(i int) error {
	return t.signal(i, "pause (SIGSTOP)", t.servers[i].Child.Pause)
}

func (t *trial) resumeServer(i int) error {
	return t.signal(i, "resume (SIGCONT)", t.servers[i].Child.Resume)
}

func (t *trial) signal(i int, what string, send func() error) error {
	err := send()
	if err == nil {
		t.rec.Arrow(record.ActorApp, serverName(i), what, "")
	}
	return err
}

func (t *trial) close() {
	t.rec.Finish()
	for _, p := range t.proxies {
		p.close()
	}
	for _, in := range t.servers {
		in.kill()
	}
}

// serverName is how the evidence names instance i.
func serverName(i int) string { return "server " + string(rune('A'+i)) }

func (t *trial) note(format string, args ...any) {
	t.res.Evidence = append(t.res.Evidence, fmt.Sprintf(format, args...))
}

// fail marks the check failed; the first reason is the one on the card.
func (t *trial) fail(format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	if t.res.Verdict != Fail {
		t.res.Verdict, t.res.Why = Fail, why
	}
	t.note("FAIL: %s", why)
}

// failAs is fail with the lesson's mistake the evidence fits, and where
// to see it done right.
func (t *trial) failAs(m mistake, format string, args ...any) {
	if t.res.Verdict != Fail {
		t.res.Mistake, t.res.LooksLike, t.res.See = m.Name, m.Diagnosis, m.See
	}
	t.fail(format, args...)
}

// passed sets the card's line for a check that held (unless it failed).
func (t *trial) passed(format string, args ...any) {
	if t.res.Verdict == Pass {
		t.res.Why = fmt.Sprintf(format, args...)
	}
}

// unknown says the check could not tell: too slow a machine, or no way
// to see what it must see. It never overrides a failure.
func (t *trial) unknown(format string, args ...any) {
	if t.res.Verdict != Fail {
		t.res.Verdict, t.res.Why = Unknown, fmt.Sprintf(format, args...)
	}
	t.note("UNKNOWN: %s", fmt.Sprintf(format, args...))
}

// bound is how long a wait of d on a quiet machine may last on the
// machine as it is now (package pace).
func (t *trial) bound(d time.Duration) time.Duration { return pace.Stretch(d) }

// notApplicable says the check could not exercise what it is for.
func (t *trial) notApplicable(format string, args ...any) {
	if t.res.Verdict != Fail {
		t.res.Verdict, t.res.Why = NA, fmt.Sprintf(format, args...)
	}
}

func (t *trial) intent(label string, from, to, kobo int64, want int) {
	t.intents = append(t.intents, intent{label, from, to, kobo, want})
}

// settle resends a request, as a good client does (after 409, 429, 5xx or
// no answer, honouring Retry-After), until a definitive answer or the
// bound. It returns the last reply and whether it was definitive.
func (t *trial) settle(r request, bound time.Duration) (reply, bool) {
	return t.settleWatch(r, bound, time.Time{})
}

// settleWatch is settle that also stops at a 409 to a request sent after
// expired (when that is not zero): a lock the server still holds then.
func (t *trial) settleWatch(r request, bound time.Duration, expired time.Time) (reply, bool) {
	deadline := time.Now().Add(bound)
	var got reply
	var tries []int // where each try begins in the diagram, which draws only the first and the last
	defer func() { t.rec.Fold(tries) }()
	for n := 0; ; n++ {
		tries = append(tries, t.rec.Mark())
		t.settledSent = time.Now()
		got = t.sendQuiet(r)
		if got.Status == 409 {
			t.settled409 = t.settledSent
		}
		if got.definitive() || time.Now().After(deadline) || t.ctx.Err() != nil ||
			got.Status == 409 && !expired.IsZero() && t.settledSent.After(expired) {
			break
		}
		wait := 200 * time.Millisecond
		if s, err := strconv.Atoi(got.RetryAfter); err == nil && s > 0 {
			wait = min(time.Duration(s)*time.Second, time.Second)
		}
		time.Sleep(wait)
		if n == 0 {
			t.note("%s (resending until a definitive answer, at most %s)", t.describe(r, got), bound.Round(100*time.Millisecond))
		}
	}
	t.note("%s", t.describe(r, got))
	return got, got.definitive()
}

// holdRow locks Ada's account row in a transaction of the grader's own,
// so that a transfer from her account waits on it. release ends it.
func (t *trial) holdRow() (pid int, release func()) {
	pid, release, err := t.hold("Ada's row", "SELECT … FOR UPDATE", "SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE")
	t.must(err)
	return pid, release
}

// hold runs statements in a transaction of the grader's own and keeps it
// open, with the locks they took, until release; the diagram says what
// they lock, and how. It returns the session's pid, for
// pg_blocking_pids; an error of the statements (a lock_timeout, say) is
// returned with nothing held.
func (t *trial) hold(what, how string, stmts ...string) (pid int, release func(), err error) {
	conn, err := t.bank.Acquire(t.ctx)
	t.must(err)
	tx, err := conn.Begin(t.ctx)
	if err == nil {
		err = tx.QueryRow(t.ctx, "SELECT pg_backend_pid()").Scan(&pid)
	}
	for _, stmt := range stmts {
		if err == nil {
			_, err = tx.Exec(t.ctx, stmt)
		}
	}
	t.rec.Arrow(record.ActorApp, record.ActorDB, "lock "+what+" ("+how+")", "")
	done, held := false, err == nil
	release = func() {
		if !done {
			done = true
			if tx != nil {
				tx.Rollback(context.WithoutCancel(t.ctx))
			}
			conn.Release()
			if held {
				t.rec.Arrow(record.ActorApp, record.ActorDB, "ROLLBACK: lets go of "+what, "")
			}
		}
	}
	if err != nil {
		t.rec.Arrow(record.ActorDB, record.ActorApp, "not taken: "+record.Clean(err.Error()), "refused")
		release()
		return 0, nil, err
	}
	return pid, release, nil
}

// ownTables are the tables the server made for itself (its key table,
// and any other): every table in the database but the lesson's two.
func (t *trial) ownTables() []string {
	rows, err := t.db.Query(t.ctx, `SELECT format('%I.%I', n.nspname, c.relname)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND c.relpersistence <> 't'
		  AND n.nspname NOT IN ('information_schema', 'bank_witness') AND n.nspname NOT LIKE 'pg\_%'
		  AND NOT (n.nspname = 'public' AND c.relname IN ('accounts', 'transfers'))
		ORDER BY 1`)
	t.must(err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	t.must(err)
	return tables
}

// waitBlocked waits until a session waits on a lock held by session pid,
// and returns that session, or 0 if none did within the bound or the
// request was answered first.
func (t *trial) waitBlocked(pid int, p *pending, bound time.Duration) int {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) && !p.answered() {
		var blocked int
		err := t.db.QueryRow(t.ctx, "SELECT pid FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid)) LIMIT 1", pid).Scan(&blocked)
		if err == nil {
			return blocked
		}
		if err != pgx.ErrNoRows {
			t.must(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0
}

// waitGone waits, bounded, until session pid has ended.
func (t *trial) waitGone(pid int, bound time.Duration) bool {
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var alive bool
		t.must(t.db.QueryRow(t.ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", pid).Scan(&alive))
		if !alive {
			return true
		}
	}
	return false
}

// pending is a request sent in the background.
type pending struct {
	r    request
	done chan struct{}
	got  reply
}

func (t *trial) async(r request) *pending {
	p := &pending{r: r, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.got = t.sendQuiet(r)
	}()
	return p
}

func (p *pending) answered() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// await waits, bounded, for a background request's reply and records it.
func (t *trial) await(p *pending, bound time.Duration) (reply, bool) {
	select {
	case <-p.done:
		t.note("%s", t.describe(p.r, p.got))
		return p.got, true
	case <-time.After(bound):
		t.note("%s", strings.TrimSuffix(t.describe(p.r, reply{}), "0 ")+fmt.Sprintf("no answer within %s", bound))
		return reply{}, false
	}
}
