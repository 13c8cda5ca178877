package grade

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
)

// pause checks the lesson's fencing token, and that the instances share
// their keys. Server A is frozen (SIGSTOP) inside its transfer, its key
// claimed and Ada's row taken in PostgreSQL; a copy goes to server B, and
// is sent again, as a good client does, until B takes A's expired key
// over and its own transfer waits on A's. Then A is let go: its late work
// must not commit a second transfer.
//
// Every fact the verdict rests on is PostgreSQL's, not the grader's
// clock: when A's claim committed (the witness), when B's transaction
// began to wait on A's (pg_locks' waitstart), whether B's transaction had
// written the server's own tables by then (its locks), and which
// transaction's transfer committed in the end (the witness). A copy that
// B answers with 409, and one B makes wait (in PostgreSQL or in its own
// code) and then takes over, both pass.
//
// It is long because it is the check's choreography in the order it
// happens (claim, pause, retry, resume), each step with what it proves.
func pause(t *trial) {
	if runtime.GOOS == "windows" {
		t.notApplicable("pausing a process needs SIGSTOP, which Windows does not have")
		return
	}
	// A first request to each server opens its connections, so that the
	// one the check is about reaches its claim at once.
	t.intent("Bola's ₦1 to Ada, to warm server A up", 2, 1, 100, 1)
	t.intent("Bola's ₦2 to Ada, to warm server B up", 2, 1, 200, 1)
	t.send(request{server: 0, user: "bola", key: "grade-pause-warm-a1", body: body(2, 1, 100)})
	t.send(request{server: 1, user: "bola", key: "grade-pause-warm-b1", body: body(2, 1, 200)})
	r := t.adaPaysBola("grade-pause-000001")
	var mark int64
	if t.witnessed() {
		mark = t.lastWrite()
	}
	sent := time.Now()
	a, pa, release, ok := t.blockOnAdasRow(r, "server A's transfer")
	defer release()
	if !ok {
		return
	}
	blockedAt := time.Now()
	t.must(t.pauseServer(0))
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			t.must(t.resumeServer(0))
			t.note("server A is resumed")
		}
	}
	defer func() {
		if !resumed {
			t.resumeServer(0)
		}
	}()
	t.note("server A's session waits on Ada's row: server A is paused (SIGSTOP)")
	release()
	t.note("the grader lets go of the row: A's transaction goes on in PostgreSQL, with A itself frozen")
	if !t.takenBy(a, t.bound(5*time.Second)) {
		t.unknown("server A's session had not taken Ada's row %s after the grader let go of it: too slow to tell", t.bound(5*time.Second))
		return
	}
	t.rec.Arrow(serverName(0), record.ActorDB, "A's transaction takes Ada's row, A itself frozen", "")
	claim := t.claimOf(r.key, mark, sent, blockedAt)
	t.note("%s", claim)

	rb := r
	rb.server = 1
	b := t.copiesToB(rb, a, claim)
	finish := func() (reply, bool) { // A let go, every copy answered: B's last answer
		resume()
		t.await(pa, t.bound(15*time.Second))
		if b.pending != nil {
			t.await(b.pending, t.bound(15*time.Second))
		}
		return t.settle(rb, t.cfg.LockTTL+t.bound(5*time.Second))
	}
	if b.waiter == nil {
		got, _ := finish()
		switch n := t.count(1, 2, tenThousand); {
		case n > 1 && b.madeEarly && !b.saw409:
			t.failAs(mKeysNotShared, "server B never saw the key server A had claimed: to a copy sent while A's lock was still valid, B answered with a transfer of its own, without a 409; A, resumed, committed its transfer too: money moved %s", bank.Times(n))
			return
		case n > 1:
			t.fail("server A, resumed, committed its transfer, and server B made another: money moved %s", bank.Times(n))
			return
		}
		t.notApplicable("%s; A was let go and finished, and B's last answer was %s: no takeover was put to the test, so fencing was not", b.why, got.short())
		return
	}
	w := b.waiter
	after := w.since.Sub(sent)
	if !w.onAccounts {
		// B waits on a row of the server's own tables that A's open
		// transaction holds.
		t.rec.Arrow(serverName(1), record.ActorDB, "waits on the key's row A's transaction holds", "in-progress")
		t.note("server B's session waits on A's transaction at the server's own tables (B's statement: %s)", oneLine(w.query))
		got, _ := finish()
		if n := t.count(1, 2, tenThousand); n > 1 {
			t.fail("a copy sent to server B waited on A's key and then ran the transfer again: money moved %s", bank.Times(n))
			return
		}
		if !claim.witnessed {
			t.notApplicable("the claim is not committed before the work, so a copy waits on the first request instead of seeing its lock, and no lock is left to take over: fencing was not put to the test (B then got %s)", got.short())
			return
		}
		t.passed("B's takeover waited on A's transaction, which holds the key's row while it transfers: A cannot lose its key while its work is open, so its late work cannot race a takeover; B then got %s; money moved once", got.short())
		return
	}
	t.note("server B's session began waiting on A's transaction at Ada's row %s after the request was first sent%s", after.Round(10*time.Millisecond),
		map[bool]string{true: ", its transaction having written the server's own tables", false: ", its transaction having written nothing of the server's own tables"}[w.wroteOwn])
	tookOver := b.saw409 || w.wroteOwn || t.takenOver(r.key, mark, claim, w.since)
	if w.since.Before(sent.Add(t.cfg.LockTTL - 50*time.Millisecond)) {
		// Before any lock A can have taken could expire.
		finish()
		n := t.count(1, 2, tenThousand)
		if tookOver {
			t.failAs(mLockTTL, "server B took A's key over and ran the transfer %s after the request was first sent, before A's lock could expire (LOCK_TTL_MS=%d): the lock does not last what the server was given; money moved %s", after.Round(10*time.Millisecond), t.cfg.LockTTL.Milliseconds(), bank.Times(n))
		} else {
			kept := "" // where the key ended up, if in the database
			if rows := t.rowsNaming(r.key); len(rows) > 0 {
				kept = "; the key's answer is in the database now (" + strings.SplitN(rows[0], " ", 2)[0] + "), so what the instances do not share is the key while it is in progress: its claim, or its lock, is held in one process"
			}
			t.failAs(mKeysNotShared, "server B never saw the key server A had claimed: %s after the request was first sent, with A's lock still valid, B ran the transfer (it waited on Ada's row) without a 409 and without writing anything of the key's to the database; money moved %s%s", after.Round(10*time.Millisecond), bank.Times(n), kept)
		}
		return
	}
	t.rec.Arrow(serverName(1), record.ActorDB, "B's transfer waits on the rows A's transaction holds: B took the key over", "takeover")
	t.rec.Fencing(serverName(0))
	resume()
	aGot, _ := t.await(pa, t.bound(15*time.Second))
	if b.pending != nil {
		t.await(b.pending, t.bound(15*time.Second))
	}
	got, ok := t.settle(rb, t.cfg.LockTTL+t.bound(5*time.Second))
	t.fenced(mark, a, w.pid, aGot, got, ok, tookOver)
}

// takenOver reports whether the witness saw a write of the key's,
// committed by another transaction than A's claim, before B's wait: a
// takeover committed on its own.
func (t *trial) takenOver(key string, mark int64, c claim, before time.Time) bool {
	if !t.witnessed() || !c.witnessed {
		return false
	}
	for _, w := range t.writesSince(mark) {
		if w.Names(key) && !lessonTable(w.Table) && w.Xact != c.xact && w.At.Before(before) {
			return true
		}
	}
	return false
}

// fenced reads, once A is let go and B has answered, whose transfer
// committed (the witness says which session inserted it), and says what
// the evidence shows.
func (t *trial) fenced(mark int64, aPID, bPID int, aGot, bGot reply, bOK, tookOver bool) {
	n := t.count(1, 2, tenThousand)
	switch {
	case n > 1 && tookOver:
		t.failAs(mNoFencing, "server A, resumed after server B had taken its expired key over, still committed its transfer, and B made another: money moved %s", bank.Times(n))
		return
	case n > 1:
		t.fail("server B's first copy ran the transfer once A's lock could have expired, and A, resumed, committed its own too: money moved %s; nothing shows whether B saw A's key (no 409 from B, nothing of the key's written to the database)", bank.Times(n))
		return
	case !bOK || bGot.Status != 201:
		t.fail("the retry to server B ended with %s, not 201", bGot.short())
		return
	case n == 0:
		t.fail("no transfer was made, though server B answered %s", bGot.short())
		return
	case !t.witnessed():
		t.passed("after B took A's expired key over and A was let go, money moved once")
		return
	}
	x, _ := transferRow(t.writesSince(mark), 1, 2, tenThousand)
	switch x.PID {
	case bPID:
		t.note("the witness: the transfer was inserted by B's session, in transaction %d; A's session inserted none, and A answered %s", x.Xact, aGot.short())
		t.passed("A's late work was rolled back once B had taken its key over (its fencing token); B made the transfer; money moved once")
	case aPID:
		t.note("the witness: the transfer was inserted by A's session, in transaction %d, after B had taken A's key over; B's session inserted none, and B answered %s", x.Xact, bGot.short())
		t.passed("A, resumed after B had taken its key over, still committed its transfer, and B's retry, lined up behind it on Ada's row, then found it done: money moved once (a fencing token checked at A's commit would have rolled A back; here the row lock ordered them)")
	default:
		t.note("the witness: the transfer was inserted in transaction %d, by a session that is neither A's transfer's nor B's first", x.Xact)
		t.passed("after B took A's expired key over and A was let go, money moved once")
	}
}

// claim is what the grader knows of when A claimed the key: the write
// the witness saw, or, where it saw none, the window in which A must have
// claimed it (between sending and its transfer's wait on Ada's row).
type claim struct {
	at        time.Time // the claim, or the latest it can have been
	earliest  time.Time // the claim, or the earliest it can have been (the request's sending)
	witnessed bool
	xact      uint64 // its transaction, when witnessed
	text      string
}

func (c claim) String() string { return c.text }

// claimOf finds A's claim of key in the witness's record: the first
// committed write that names it.
func (t *trial) claimOf(key string, mark int64, sent, blocked time.Time) claim {
	c := claim{at: blocked, earliest: sent, text: "no committed write of the server's names the key: the grader takes A's claim to have come between the request and its wait on Ada's row"}
	if !t.witnessed() {
		return c
	}
	for _, w := range t.writesSince(mark) {
		if w.Names(key) && !lessonTable(w.Table) {
			c.at, c.earliest, c.witnessed, c.xact = w.At, w.At, true, w.Xact
			c.text = fmt.Sprintf("the witness: A's claim, transaction %d, wrote %s (%s)", w.Xact, w.Table, w.Op)
			break
		}
	}
	return c
}

// bSide is how server B took the copies sent to it while A was frozen.
type bSide struct {
	waiter  *waiter  // B's session, waiting on A's transaction (nil: it never did)
	pending *pending // the copy B has not answered yet
	why     string   // when B never waited on A: what it did
	saw409  bool     // B answered a copy 409: it saw A's key
	// madeEarly: B answered a copy with a new transfer (201, not a replay)
	// to a copy sent before any lock A took could expire.
	madeEarly bool
}

// waiter is a session waiting on another's transaction, as PostgreSQL
// shows it.
type waiter struct {
	pid        int
	since      time.Time // when it began to wait (waitstart; before PostgreSQL 14, when first seen)
	onAccounts bool      // its transaction has opened accounts: it is at the transfer
	wroteOwn   bool      // its transaction has written the server's own tables
	query      string
}

// copiesToB sends the copy to server B, and sends it again after each
// 409 (or other answer a client retries), as a good client does, until
// B's session waits on A's transaction, B answers for good, or A's lock
// has been expired for a while without B taking it over.
func (t *trial) copiesToB(rb request, a int, c claim) bSide {
	giveUp := c.at.Add(t.cfg.LockTTL + t.bound(5*time.Second))
	expired := c.at.Add(t.cfg.LockTTL + max(t.cfg.LockTTL/10, 100*time.Millisecond)) // every lock A can hold has expired
	sentAt := time.Now()
	p := t.async(rb)
	saw409 := false
	last := "" // B's last answer
	for {
		if w, ok := t.waiterOn(a); ok {
			return bSide{waiter: &w, pending: p, saw409: saw409}
		}
		if p.answered() {
			got := p.got
			t.note("%s", t.describe(rb, got))
			saw409 = saw409 || got.Status == 409
			last = got.short()
			if got.Replayed {
				t.must(&unsureError{"server B replayed a finished transfer while server A was paused: A was not frozen in time"})
			}
			if got.definitive() {
				early := got.Status == 201 && !got.Replayed && sentAt.Before(c.earliest.Add(t.cfg.LockTTL))
				return bSide{saw409: saw409, madeEarly: early, why: fmt.Sprintf("server B answered %s without waiting on A's transaction", got.short())}
			}
			if got.Status == 409 && sentAt.After(expired) {
				return bSide{saw409: true, why: fmt.Sprintf("server B answered 409 to a copy sent %s after A's claim, when any lock A took must have expired (LOCK_TTL_MS=%d): the lock outlives LOCK_TTL_MS, so it could not be taken over in time (the crash check measures how long it lasts)",
					sentAt.Sub(c.at).Round(100*time.Millisecond), t.cfg.LockTTL.Milliseconds())}
			}
			if time.Now().After(giveUp) {
				return bSide{saw409: saw409, why: fmt.Sprintf("server B still answered %s %s after A's claim (LOCK_TTL_MS=%d), and never took the key over", got.short(), time.Since(c.at).Round(100*time.Millisecond), t.cfg.LockTTL.Milliseconds())}
			}
			wait := 200 * time.Millisecond
			if s, err := strconv.Atoi(got.RetryAfter); err == nil && s > 0 {
				wait = min(time.Duration(s)*time.Second, time.Second)
			}
			time.Sleep(wait)
			sentAt = time.Now()
			p = t.async(rb)
			continue
		}
		if time.Now().After(giveUp) {
			why := fmt.Sprintf("server B had neither answered nor begun a transfer %s after A's claim (LOCK_TTL_MS=%d)", time.Since(c.at).Round(100*time.Millisecond), t.cfg.LockTTL.Milliseconds())
			if last != "" {
				why = fmt.Sprintf("server B still answered %s %s after A's claim (LOCK_TTL_MS=%d), and never took the key over", last, time.Since(c.at).Round(100*time.Millisecond), t.cfg.LockTTL.Milliseconds())
			}
			return bSide{pending: p, saw409: saw409, why: why}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waiterOn finds a session that waits on session pid's transaction, and
// what its own transaction holds.
func (t *trial) waiterOn(pid int) (waiter, bool) {
	since := "(SELECT min(l.waitstart) FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted)"
	if t.pgVersion() < 140000 {
		since = "clock_timestamp()"
	}
	var w waiter
	own := t.ownTables()
	err := t.db.QueryRow(t.ctx, `SELECT a.pid, COALESCE(`+since+`, clock_timestamp()),
		EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'relation' AND l.relation = 'public.accounts'::regclass),
		EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'relation' AND l.mode = 'RowExclusiveLock'
			AND l.relation = ANY (SELECT c::regclass::oid FROM unnest($2::text[]) c)),
		COALESCE(a.query, '')
		FROM pg_stat_activity a WHERE $1::int = ANY (pg_blocking_pids(a.pid)) ORDER BY a.pid LIMIT 1`, pid, own).
		Scan(&w.pid, &w.since, &w.onAccounts, &w.wroteOwn, &w.query)
	if err == pgx.ErrNoRows {
		return waiter{}, false
	}
	t.must(err)
	return w, true
}

// takenBy waits, bounded, until session pid, woken from a wait on Ada's
// row, has taken it: the row's xmax is a transaction of that session's,
// its own or a savepoint's (each holds the lock of its own id).
func (t *trial) takenBy(pid int, bound time.Duration) bool {
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var xmax string
		var taken bool
		t.must(t.bank.QueryRow(t.ctx, "SELECT xmax::text FROM accounts WHERE id = 1").Scan(&xmax))
		t.must(t.db.QueryRow(t.ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'transactionid'
			AND l.pid = $1 AND l.granted AND l.transactionid = $2::xid)`, pid, xmax).Scan(&taken))
		if taken {
			return true
		}
	}
	return false
}

// pgVersion is the server's version number (150004 for 15.4).
func (t *trial) pgVersion() int {
	var v int
	t.must(t.db.QueryRow(t.ctx, "SELECT current_setting('server_version_num')::int").Scan(&v))
	return v
}
