package grade

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zudojs/bank/bank"
)

// Checks are the faults the grader throws, in the order it throws them.
var Checks = []Check{
	{Name: "plain", Title: "a plain transfer", Required: true,
		LooksLike: "the transfer itself is wrong, before any fault",
		See:       "bank scenario atomic", run: plain},
	{Name: "lost-response", Title: "a lost reply, retried with the same key", Required: true,
		LooksLike: "no idempotency: the retry ran the transfer again instead of replaying the stored answer",
		See:       "bank scenario retry-safe", run: lostResponse},
	{Name: "replayed", Title: "a replay says so (Idempotent-Replayed: true) and repeats the body", Required: false,
		LooksLike: "the stored answer is not sent back as it was first sent",
		See:       "bank scenario retry-safe", run: replayed},
	{Name: "reordered", Title: "the retry with its JSON keys in another order", Required: true,
		LooksLike: "the fingerprint hashes the raw bytes, so the same request written differently looks like another",
		See:       "bank scenario key-misuse", run: reordered},
	{Name: "other-body", Title: "the same key with another body", Required: true,
		LooksLike: "no fingerprint: a key's stored answer is replayed to whatever request comes with it",
		See:       "bank mistake no-fingerprint", run: otherBody},
	{Name: "other-user", Title: "the same key from another user", Required: true,
		LooksLike: "keys not scoped to their user: one user's key answers another user's request",
		See:       "bank mistake unscoped-keys", run: otherUser},
	{Name: "no-key", Title: "no Idempotency-Key", Required: true,
		LooksLike: "a transfer without a key cannot be retried safely, so the API must refuse it",
		See:       "bank scenario key-misuse", run: noKey},
	{Name: "refusal", Title: "a refusal (insufficient funds) replayed, not re-run", Required: true,
		LooksLike: "only successes are stored: a refused request runs again on retry, and may now succeed",
		See:       "bank scenario key-misuse", run: refusal},
	{Name: "outage", Title: "a brief outage: the server's statement cancelled mid-transfer, then the retry", Required: true,
		LooksLike: "a server error stored under the key and replayed: one brief outage became the key's answer for ever",
		See:       "bank mistake replay-500", run: outage},
	{Name: "double-tap", Title: "a double tap: two copies at once", Required: true,
		LooksLike: "check, then insert: both copies found no key and both ran; claim the key atomically",
		See:       "bank scenario concurrent", run: doubleTap},
	{Name: "storm", Title: "a storm of 50 copies at once", Required: true,
		LooksLike: "check, then insert: several copies found no key and ran; claim the key atomically",
		See:       "bank scenario concurrent", run: storm},
	{Name: "crash", Title: "the server killed (SIGKILL) mid-transfer, restarted, then the retry", Required: true,
		LooksLike: "a lock that never expires: the crashed request's key stays in progress for ever",
		See:       "bank mistake no-lock-expiry", run: crash},
	{Name: "crash-on-store", Title: "the server killed (SIGKILL) while it stores its answer, then the retry", Required: true,
		LooksLike: "the answer stored in a second transaction: the transfer committed first, so a crash in between left a done transfer with no stored answer",
		See:       "bank mistake second-transaction", run: crashOnStore},
	{Name: "pause", Title: "a server paused (SIGSTOP) past its lock while a retry goes to another", Required: true, Servers: 2,
		LooksLike: "no fencing token (or one checked only after the work committed): the server that lost its lock still committed its work",
		See:       "bank mistake no-fencing", run: pause},
	{Name: "restart", Title: "keys kept across a restart of the server", Required: true,
		LooksLike: "keys kept in the server's memory: a restart forgets them",
		See:       "bank mistake memory-keys", run: restart},
	{Name: "lookup", Title: "GET /transfers?key= says what became of a key", Required: false,
		LooksLike: "no way for a client to ask what became of a request it lost the answer to",
		See:       "bank scenario unknown-outcome", run: lookup},
	{Name: "torture", Title: "a short torture run: every fault at once, at two instances", Required: true, Servers: 2,
		LooksLike: "one of the mistakes above, showing under load (the violations name the keys)",
		See:       "bank torture (the lab's server, which holds; --break NAME shows a mistake failing)", run: tortureRun},
}

// body is a transfer request as the lesson writes it.
func body(from, to, kobo int64) string {
	return fmt.Sprintf(`{"from":%d,"to":%d,"amountKobo":%d}`, from, to, kobo)
}

const tenThousand = 1_000_000 // ₦10,000 in kobo, the lesson's transfer

// adaPaysBola is the lesson's request, Ada's ₦10,000 to Bola, which must
// move money once.
func (t *trial) adaPaysBola(key string) request {
	t.intent("Ada's ₦10,000 to Bola", 1, 2, tenThousand, 1)
	return request{user: "ada", key: key, body: body(1, 2, tenThousand)}
}

// receipt checks that a 201 names the transfer the database recorded.
func (t *trial) receipt(got reply, from, to, kobo int64) {
	if n := t.count(from, to, kobo); n > 1 {
		t.fail("the copy ran the transfer again: money moved %s", bank.Times(n))
		return
	}
	var id int64
	if err := t.db.QueryRow(t.ctx, "SELECT min(id) FROM transfers WHERE from_account = $1 AND to_account = $2 AND amount_kobo = $3", from, to, kobo).Scan(&id); err != nil {
		t.fail("the 201 was sent, but no transfer of %s from account %d to %d was recorded", bank.Naira(kobo), from, to)
		return
	}
	if got.TransferID != id {
		t.fail("the 201's transferId is %d, but the transfer recorded is %d (the contract's body carries the transfers row's id)", got.TransferID, id)
	}
}

func plain(t *trial) {
	r := t.adaPaysBola("grade-plain-0000001")
	got := t.send(r)
	if got.Status != 201 {
		t.fail("a valid transfer got %s, not 201", got.short())
		return
	}
	t.receipt(got, 1, 2, tenThousand)
	t.passed("201, with the transfer's id; money moved once")
}

func lostResponse(t *trial) {
	r := t.adaPaysBola("grade-lost-0000001")
	t.proxies[0].loseNext.Store(1)
	t.note("the proxy will lose the next reply, after the server has sent it")
	t.send(r)
	if t.retryGetsStored(r, 10*time.Second, "the lost reply") {
		t.passed("the retry got the stored 201; money moved once")
	}
}

// retryGetsStored resends Ada's ₦10,000 as a good client does, until a
// definitive answer, and wants the 201 of the one transfer it made.
func (t *trial) retryGetsStored(r request, bound time.Duration, after string) bool {
	got, ok := t.settle(r, bound)
	switch {
	case !ok && got.Status == 409:
		t.failAs("a lock that never expires: the crashed request's key stays in progress for ever", "bank mistake no-lock-expiry",
			"the retry after %s was still answered %s %s later: the key is stuck in progress", after, got.short(), bound)
	case !ok:
		t.fail("the retry after %s was still answered %s %s later", after, got.short(), bound)
	case got.Status != 201:
		t.fail("the retry after %s got %s, not 201", after, got.short())
	default:
		t.receipt(got, 1, 2, tenThousand)
	}
	return t.res.Verdict == Pass
}

func replayed(t *trial) {
	r := t.adaPaysBola("grade-replay-000001")
	first := t.send(r)
	again := t.send(r)
	switch {
	case first.Status != 201:
		t.fail("the first request got %s, not 201", first.short())
	case again.Status != 201:
		t.fail("the copy got %s, not the stored 201", again.short())
	case !again.Replayed:
		t.fail("the copy got 201 without Idempotent-Replayed: true, so a client cannot tell a replay from a new transfer")
	case !sameJSON(first.Body, again.Body):
		t.fail("the replay's body differs from the first answer's")
	default:
		t.passed("the copy got the same 201, marked Idempotent-Replayed: true")
	}
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	return reflect.DeepEqual(x, y)
}

func reordered(t *trial) {
	r := t.adaPaysBola("grade-reorder-00001")
	first := t.send(r)
	if first.Status != 201 {
		t.fail("the first request got %s, not 201", first.short())
		return
	}
	r.body = `{ "amountKobo": 1000000, "to": 2, "from": 1 }`
	got := t.send(r)
	if got.Status != 201 {
		t.fail("the same request with its keys reordered got %s, not the stored 201", got.short())
		return
	}
	t.receipt(got, 1, 2, tenThousand)
	t.passed("the reordered copy got the stored 201; money moved once")
}

func otherBody(t *trial) {
	r := t.adaPaysBola("grade-otherbody-001")
	t.intent("the reused key's ₦20,000", 1, 2, 2_000_000, 0)
	t.send(r)
	r.body = body(1, 2, 2_000_000) // Ada can afford it: only the key may refuse it
	got := t.send(r)
	switch {
	case got.Status == 422:
		t.passed("422: the key was refused for a different request; no money moved")
	case got.Status == 201 && got.Replayed:
		t.fail("the first request's 201 was replayed to a different one: the client believes ₦20,000 left, but only ₦10,000 did")
	default:
		t.fail("a key reused for another request got %s, not 422", got.short())
	}
}

func otherUser(t *trial) {
	const key = "grade-otheruser-01"
	t.intent("Bola's own ₦1,000 to Ada", 2, 1, 100_000, 1)
	t.send(t.adaPaysBola(key))
	got := t.send(request{user: "bola", key: key, body: body(2, 1, 100_000)})
	switch {
	case got.Status == 201 && !got.Replayed:
		t.receipt(got, 2, 1, 100_000)
		t.passed("201: Bola's key is Bola's own; both transfers happened")
	case got.Replayed:
		t.fail("Bola got Ada's stored answer (%s): keys are shared between users", got.short())
	default:
		t.fail("Bola's own request, under a key Ada also used, got %s, not 201", got.short())
	}
}

func noKey(t *trial) {
	t.intent("Ada's ₦1 with no key", 1, 2, 100, 0)
	got := t.send(request{user: "ada", body: body(1, 2, 100)})
	switch {
	case got.Status == 400:
		t.passed("400: refused without a key; no money moved")
	case got.Status/100 == 2:
		t.fail("a transfer without an Idempotency-Key was carried out (%s): a retry of it could never be recognised", got.short())
	default:
		t.fail("a request without an Idempotency-Key got %s, not 400", got.short())
	}
}

func refusal(t *trial) {
	tooMuch := request{user: "ada", key: "grade-refusal-00001", body: body(1, 2, 5_200_000)}
	t.intent("Ada's ₦52,000, more than she has", 1, 2, 5_200_000, 0)
	t.intent("Bola's ₦3,000 to Ada", 2, 1, 300_000, 1)
	first := t.send(tooMuch)
	if first.Status/100 != 4 || first.Status == 409 || first.Status == 429 {
		t.fail("a transfer of more than Ada has got %s, not a refusal (422)", first.short())
		return
	}
	if got := t.send(request{user: "bola", key: "grade-refusal-00002", body: body(2, 1, 300_000)}); got.Status != 201 {
		t.fail("Bola's ₦3,000 to Ada got %s, not 201", got.short())
		return
	}
	t.note("Ada now has ₦53,000: a re-run of the refused request would succeed")
	got := t.send(tooMuch)
	switch {
	case got.Status == first.Status && sameJSON(got.Body, first.Body):
		t.passed("the retry got the stored refusal (%s), not a new run", got.short())
	case got.Status == 201:
		t.fail("the refused request was run again on retry, and this time it moved ₦52,000: refusals must be stored and replayed")
	default:
		t.fail("the retry of a refusal got %s %s, not the stored %d", got.short(), got.Body, first.Status)
	}
}

func doubleTap(t *trial) { copies(t, 2, "grade-doubletap-01") }

func storm(t *trial) { copies(t, 50, "grade-storm-000001") }

// copies sends n copies of one request at once: money must move once,
// and each copy gets the transfer's 201 or a 409 to retry later.
func copies(t *trial, n int, key string) {
	r := t.adaPaysBola(key)
	replies := make([]reply, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			replies[i] = t.sendQuiet(r)
		}()
	}
	close(start)
	wg.Wait()
	tally := map[string]int{}
	var order []string
	created, bad := 0, ""
	var ids []int64
	for _, got := range replies {
		s := got.short()
		if tally[s] == 0 {
			order = append(order, s)
		}
		tally[s]++
		switch {
		case got.Status == 201:
			created++
			ids = append(ids, got.TransferID)
		case got.Status == 409:
		default:
			bad = s
		}
	}
	line := fmt.Sprintf("%d copies of POST /transfers as ada, key %s, %s →", n, key, r.body)
	for _, s := range order {
		line += fmt.Sprintf(" %d × %s;", tally[s], s)
	}
	t.note("%s", line[:len(line)-1])
	switch n := t.count(1, 2, tenThousand); {
	case n > 1:
		t.fail("the copies ran the transfer %s", bank.Times(n))
	case bad != "":
		t.fail("a copy got %s: each copy should get the transfer's 201 (or its replay) or a 409 to retry later", bad)
	case created == 0:
		t.fail("no copy got 201")
	}
	for _, id := range ids {
		if id != ids[0] {
			t.fail("the 201s name different transfers (%d and %d)", ids[0], id)
			break
		}
	}
	t.passed("money moved once:%s", line[strings.Index(line, "→")+len("→"):len(line)-1])
}

func crash(t *trial) {
	r := t.adaPaysBola("grade-crash-000001")
	blocked, p, release, ok := t.blockOnAdasRow(r, "the transfer")
	defer release()
	if !ok {
		return
	}
	t.servers[0].kill()
	t.note("the server's session waits on Ada's row: the server is killed (SIGKILL)")
	t.await(p, 10*time.Second)
	release()
	if !t.waitGone(blocked, 10*time.Second) {
		t.note("the killed server's database session is still there after 10 s")
	}
	t.must(t.servers[0].restart(t.ctx))
	t.note("the server is started again")
	if t.retryGetsStored(r, t.cfg.LockTTL+5*time.Second, "the crash") {
		t.passed("the retry after the crash got 201; money moved once")
	}
	if t.count(1, 2, tenThousand) > 1 {
		t.failAs("the crashed request's work survived it, and the retry ran it again", "bank scenario crash",
			"the crashed transfer and the retry both moved money")
	}
}

// blockOnAdasRow locks Ada's account row, sends r in the background, and
// waits until the server's session waits on that row: the moment a fault
// is thrown at. It returns that session, the pending request and the
// row's release; ok is false, and the check failed, when the transfer
// never waited on the row.
func (t *trial) blockOnAdasRow(r request, who string) (blocked int, p *pending, release func(), ok bool) {
	us, release := t.holdRow()
	t.note("the grader locks Ada's account row, so %s will wait on it", who)
	p = t.async(r)
	if blocked = t.waitBlocked(us, p, 10*time.Second); blocked == 0 {
		release()
		got, _ := t.await(p, 10*time.Second)
		t.fail("the transfer never waited on Ada's account row (it answered %s): it does not lock or update the sender's account", got.short())
		return 0, p, release, false
	}
	return blocked, p, release, true
}

// outage cancels the server's statement while its transfer waits on
// Ada's row, as a brief database outage would fail it. Nothing moved, so
// the failure is no answer to keep: the retry must get the transfer made.
func outage(t *trial) {
	r := t.adaPaysBola("grade-outage-000001")
	blocked, p, release, ok := t.blockOnAdasRow(r, "the transfer")
	defer release()
	if !ok {
		return
	}
	var cancelled bool
	t.must(t.db.QueryRow(t.ctx, "SELECT pg_cancel_backend($1)", blocked).Scan(&cancelled))
	if !cancelled {
		release()
		t.await(p, 10*time.Second)
		t.notApplicable("the grader could not cancel the server's statement (pg_cancel_backend refused: another role's session?)")
		return
	}
	t.note("the server's session waits on Ada's row: the grader cancels its statement (pg_cancel_backend), as a brief outage would")
	release()
	first, _ := t.await(p, 10*time.Second)
	if first.Status == 201 {
		t.receipt(first, 1, 2, tenThousand)
		t.passed("the server got over the cancelled statement by itself and answered 201; money moved once")
		return
	}
	got := t.send(r)
	if got.Status >= 500 && got.Replayed {
		t.fail("the retry got the failure back, marked Idempotent-Replayed: true: it was stored under the key as if it were the request's answer")
		return
	}
	ok = got.definitive()
	if !ok {
		got, ok = t.settle(r, t.cfg.LockTTL+5*time.Second)
	}
	switch {
	case ok && got.Status == 201:
		t.receipt(got, 1, 2, tenThousand)
		t.passed("the failure (%s) was not kept: the retry got 201; money moved once", first.short())
	case got.Status == 409:
		t.failAs("a lock that never expires: the failed request's key stays in progress for ever", "bank mistake no-lock-expiry",
			"after the failure (%s) the retry was still answered 409 %s later: the key is stuck in progress", first.short(), t.cfg.LockTTL+5*time.Second)
	case got.Status >= 500 || ok:
		// The same key keeps failing: is the server down, or is the failure stored?
		t.intent("Ada's ₦1 to Bola, under a new key", 1, 2, 100, 1)
		fresh := t.send(request{user: "ada", key: "grade-outage-fresh01", body: body(1, 2, 100)})
		if fresh.Status == 201 {
			t.fail("the retry got %s again and again while a new key goes through: the failure was stored under the key and replayed", got.short())
		} else {
			t.failAs("a server that does not get over a cancelled statement", "bank scenario atomic",
				"after the failure (%s) every request fails, a new key's too (%s)", first.short(), fresh.short())
		}
	default:
		t.fail("the retry after the failure (%s) got %s, not 201", first.short(), got.short())
	}
}

// crashOnStore kills the server while it writes its answer to its own
// tables: the grader holds a SHARE lock on them, which that write waits
// on. Stored in the transfer's own transaction, the answer and the
// transfer die together; stored in a second one, the transfer has
// already committed, and the retry makes it again.
func crashOnStore(t *trial) {
	r := t.adaPaysBola("grade-storecrash-01")
	_, p, release, ok := t.blockOnAdasRow(r, "the transfer")
	defer release()
	if !ok {
		return
	}
	tables := t.ownTables()
	if len(tables) == 0 {
		release()
		t.await(p, 10*time.Second)
		t.notApplicable("the server keeps no table of its own in the database, so it stores no answer there to be caught storing (the restart check tests where keys live)")
		return
	}
	list := strings.Join(tables, ", ")
	them, unlock, err := t.hold("SET LOCAL lock_timeout = '5s'", "LOCK TABLE "+list+" IN SHARE MODE")
	if err != nil {
		release()
		t.await(p, 10*time.Second)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
			t.notApplicable("the server's transaction writes to its own tables (%s) before its transfer, so the grader cannot let the transfer through while holding its answer back", list)
		} else {
			t.notApplicable("the grader could not lock the server's own tables (%s): %v", list, err)
		}
		return
	}
	defer unlock()
	t.note("the grader holds a SHARE lock on the server's own tables (%s): writing to them will wait", list)
	release()
	t.note("the grader lets go of Ada's row: the transfer goes on")
	storing := t.waitBlocked(them, p, 10*time.Second)
	if storing == 0 {
		unlock()
		got, _ := t.await(p, 10*time.Second)
		t.notApplicable("the transfer finished (%s) without writing to the server's own tables after it, so there was no storing to crash in", got.short())
		return
	}
	done := t.count(1, 2, tenThousand)
	t.servers[0].kill()
	t.note("the server's session waits to write its answer: the server is killed (SIGKILL), %s", map[bool]string{
		true:  "with its transfer already committed",
		false: "before its transfer committed"}[done > 0])
	t.await(p, 10*time.Second)
	unlock()
	if !t.waitGone(storing, 10*time.Second) {
		t.note("the killed server's database session is still there after 10 s")
	}
	t.must(t.servers[0].restart(t.ctx))
	t.note("the server is started again")
	if done > 0 {
		t.fail("the transfer had committed before its answer was stored, in a transaction of its own: the crash in between left a done transfer with no stored answer")
	}
	if t.retryGetsStored(r, t.cfg.LockTTL+5*time.Second, "the crash") {
		t.passed("killed while storing its answer, the server had not committed the transfer either; the retry got 201; money moved once")
	}
}

func pause(t *trial) {
	if runtime.GOOS == "windows" {
		t.notApplicable("pausing a process needs SIGSTOP, which Windows does not have")
		return
	}
	r := t.adaPaysBola("grade-pause-000001")
	a, pa, release, ok := t.blockOnAdasRow(r, "server A's transfer")
	defer release()
	if !ok {
		return
	}
	claimed := time.Now()
	A := t.servers[0]
	t.must(A.g.Pause())
	resumed := false
	defer func() {
		if !resumed {
			A.g.Resume()
		}
	}()
	t.note("server A's session waits on Ada's row: server A is paused (SIGSTOP)")
	release()
	t.note("the grader lets go of the row: A's transaction goes on in PostgreSQL, with A itself frozen")
	time.Sleep(time.Until(claimed.Add(t.cfg.LockTTL + 300*time.Millisecond)))
	t.note("%s later, past A's lock (LOCK_TTL_MS=%d), the retry goes to server B", t.cfg.LockTTL+300*time.Millisecond, t.cfg.LockTTL.Milliseconds())
	rb := r
	rb.server = 1
	pb := t.async(rb)
	tookOver := t.waitBlocked(a, pb, 5*time.Second) != 0
	early := reply{} // B's answer, when it came without waiting on A
	if tookOver {
		t.note("server B's retry waits on the rows A's transaction holds")
	} else if got, answered := t.await(pb, 5*time.Second); !answered {
		early = reply{Lost: true}
	} else if got.Replayed {
		// A's transaction cannot have committed while A was frozen.
		t.must(&unsureError{"server B replayed a finished transfer while server A was paused: A was not frozen in time"})
	} else if early = got; got.Status == 409 {
		// Still locked: give it until the bound, then let A go on.
		got, ok := t.settle(rb, 3*time.Second)
		if !ok {
			A.g.Resume()
			resumed = true
			t.await(pa, 15*time.Second)
			t.settle(rb, t.cfg.LockTTL+5*time.Second)
			t.notApplicable("server B refused the retry (%s) while A was frozen, long after A's lock should have expired: the lock was never taken over, so fencing was not exercised (the crash check tests expiry)", got.short())
			return
		}
	}
	t.must(A.g.Resume())
	resumed = true
	t.note("server A is resumed")
	t.await(pa, 15*time.Second)
	if tookOver {
		t.await(pb, 15*time.Second)
	}
	got, ok := t.settle(rb, t.cfg.LockTTL+5*time.Second)
	if !ok || got.Status != 201 {
		t.fail("the retry to server B ended with %s, not 201", got.short())
	}
	if n := t.count(1, 2, tenThousand); n > 1 {
		t.fail("server A, resumed after the retry had gone to server B, still committed its transfer, and B made another: money moved %s", bank.Times(n))
		return
	}
	if !tookOver {
		t.notApplicable("server B answered the retry (%s) without waiting on A's transaction, so no takeover was put to the test", early.short())
		return
	}
	t.passed("A's late work was refused once B had taken the key over; money moved once")
}

func restart(t *trial) {
	r := t.adaPaysBola("grade-restart-00001")
	first := t.send(r)
	if first.Status != 201 {
		t.fail("the first request got %s, not 201", first.short())
		return
	}
	t.servers[0].stop()
	t.must(t.servers[0].restart(t.ctx))
	t.note("the server is stopped (SIGTERM) and started again")
	if t.retryGetsStored(r, 10*time.Second, "the restart") {
		t.passed("after the restart the copy got the stored 201; money moved once")
	}
}

func lookup(t *trial) {
	const key = "grade-lookup-000001"
	t.send(t.adaPaysBola(key))
	got := t.get("ada", "/transfers?key="+key)
	var rec struct {
		Status string `json:"status"`
	}
	if got.Status != 200 || json.Unmarshal([]byte(got.Body), &rec) != nil || rec.Status != "completed" {
		t.fail(`asking about a completed key got %s, not 200 with "status":"completed"`, got.short())
		return
	}
	if unknown := t.get("ada", "/transfers?key=grade-never-sent-0001"); unknown.Status != 404 {
		t.fail("asking about a key never sent got %s, not 404", unknown.short())
		return
	}
	t.passed(`200 "completed" for a key it has, 404 for one it never got`)
}
