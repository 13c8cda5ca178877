package grade

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
)

// Checks are the faults the grader throws, in the order it throws them.
var Checks = []Check{
	{Name: "plain", Title: "a plain transfer", Required: true, See: "bank scenario atomic", run: plain},
	{Name: "lost-response", Title: "a lost reply, retried with the same key", Required: true, See: "bank scenario retry-safe", run: lostResponse},
	{Name: "replayed", Title: "a replay says so (Idempotent-Replayed: true) and repeats the body", See: "bank scenario retry-safe", run: replayed},
	{Name: "reordered", Title: "the retry with its JSON keys in another order", Required: true, See: "bank scenario key-misuse", run: reordered},
	{Name: "other-body", Title: "the same key with another body", Required: true, See: "bank mistake no-fingerprint", run: otherBody},
	{Name: "other-user", Title: "the same key from another user", Required: true, See: "bank mistake unscoped-keys", run: otherUser},
	{Name: "no-key", Title: "no Idempotency-Key", Required: true, See: "bank scenario key-misuse", run: noKey},
	{Name: "refusal", Title: "a refusal (insufficient funds) replayed, not re-run", Required: true, See: "bank scenario key-misuse", run: refusal},
	{Name: "outage", Title: "a brief outage: the server's statement cancelled mid-transfer, then the retry", Required: true, See: "bank mistake replay-500", run: outage},
	{Name: "double-tap", Title: "a double tap: two copies at once", Required: true, See: "bank scenario concurrent", run: doubleTap},
	{Name: "storm", Title: "a storm of 50 copies at once", Required: true, See: "bank scenario concurrent", run: storm},
	{Name: "crash", Title: "the server killed (SIGKILL) mid-transfer, restarted, then the retry", Required: true, See: "bank scenario crash", run: crash},
	{Name: "crash-on-store", Title: "the answer stored in the transfer's own transaction, and a kill right after its commit", Required: true, See: "bank mistake second-transaction", run: crashOnStore},
	{Name: "pause", Title: "a server paused (SIGSTOP) past its lock while a retry goes to another", Required: true, Servers: 2, See: "bank mistake no-fencing", run: pause},
	{Name: "restart", Title: "keys kept across a restart of the server", Required: true, See: "bank mistake memory-keys", run: restart},
	{Name: "lookup", Title: "GET /transfers?key= says what became of a key", See: "bank scenario unknown-outcome", run: lookup},
	{Name: "torture", Title: "a short torture run: every fault at once, at two instances", Required: true, Servers: 2,
		See: "bank torture (the lab's server, which holds; --mistake NAME shows a mistake failing)", run: tortureRun},
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
// Money moved twice is the mistake twice names: the one this check's
// faults can cause.
func (t *trial) receipt(got reply, from, to, kobo int64, twice mistake) {
	if n := t.count(from, to, kobo); n > 1 {
		t.failAs(twice, "the copy ran the transfer again: money moved %s", bank.Times(n))
		return
	}
	var id int64
	if err := t.bank.QueryRow(t.ctx, "SELECT min(id) FROM transfers WHERE from_account = $1 AND to_account = $2 AND amount_kobo = $3", from, to, kobo).Scan(&id); err != nil {
		t.failAs(mTransfer, "the 201 was sent, but no transfer of %s from account %d to %d was recorded", bank.Naira(kobo), from, to)
		return
	}
	if got.TransferID != id {
		t.failAs(mTransfer, "the 201's transferId is %d, but the transfer recorded is %d (the contract's body carries the transfers row's id)", got.TransferID, id)
		return
	}
	if missing := missingFields(got.Body, from, to, kobo); missing != "" {
		m := mTransfer
		if got.Replayed {
			m = mReplayDiffers
		}
		t.failAs(m, "the 201 (%s) %s: the contract's body is at least {\"transferId\",\"from\",\"to\",\"amountKobo\"}", got.Body, missing)
	}
}

// missingFields says which of the contract's fields a 201's body lacks
// or gets wrong ("" when it has them all).
func missingFields(body string, from, to, kobo int64) string {
	var b map[string]any
	if json.Unmarshal([]byte(body), &b) != nil {
		return "is not a JSON object"
	}
	var wrong []string
	for _, f := range []struct {
		name string
		want int64
	}{{"from", from}, {"to", to}, {"amountKobo", kobo}} {
		n, ok := b[f.name].(float64)
		switch {
		case !ok:
			wrong = append(wrong, "has no "+f.name)
		case n != float64(f.want):
			wrong = append(wrong, fmt.Sprintf("says %s %v, not %d", f.name, n, f.want))
		}
	}
	return strings.Join(wrong, ", ")
}

func plain(t *trial) {
	r := t.adaPaysBola("grade-plain-0000001")
	got := t.sendFirst(r)
	if got.Status != 201 {
		t.failAs(mTransfer, "a valid transfer got %s, not 201", got.short())
		return
	}
	t.receipt(got, 1, 2, tenThousand, mTransfer)
	t.passed("201, with the transfer's id, accounts and amount; money moved once")
}

func lostResponse(t *trial) {
	r := t.adaPaysBola("grade-lost-0000001")
	t.proxies[0].loseNext.Store(1)
	t.note("the proxy will lose the next reply, after the server has sent it")
	t.send(r)
	claimBy := time.Now()
	var first *reply
	if lost := t.proxies[0].lostReplies(); len(lost) > 0 {
		first = &lost[0]
		t.note("the reply the proxy lost: %s", lost[0])
	}
	if t.retryGetsStored(r, first, claimBy, "the lost reply", mNoIdempotency) {
		t.passed("the retry got the stored 201, the answer the network lost; money moved once")
	}
}

// retryGetsStored resends Ada's ₦10,000 as a good client does, until a
// definitive answer (t.retry), and wants the 201 of the one transfer it
// made: the first answer again, status and body, where the grader saw it
// (first; nil when the server died before answering). A retry that made
// the transfer again is the mistake twice names. claimBy is the latest
// moment the key can have been claimed.
func (t *trial) retryGetsStored(r request, first *reply, claimBy time.Time, after string, twice mistake) bool {
	got, ok := t.retry(r, claimBy, after)
	if !ok {
		return false
	}
	switch {
	case got.Status == 201 && first != nil && t.count(1, 2, tenThousand) == 1 && !(first.Status == got.Status && sameJSON(first.Body, got.Body)):
		t.failAs(mReplayDiffers, "the retry got %s %s, but the server's first answer, which the client never saw, was %s %s: a replay must repeat the stored answer whole", got.short(), got.Body, first.short(), first.Body)
	case got.Status == 201:
		t.receipt(got, 1, 2, tenThousand, twice)
	case got.Status/100 == 4 && t.count(1, 2, tenThousand) == 1:
		t.fail("the retry after %s was refused (%s %s), though it is the same request under the same key: the transfer was made once, but the client is told it failed; a copy must get the stored 201", after, got.short(), got.Body)
	default:
		t.fail("the retry after %s got %s, not 201", after, got.short())
	}
	return t.res.Verdict == Pass
}

// retry resends r as a good client does, until a definitive answer (see
// settle), and returns it, ok; or it judges why none came, and returns
// not ok. A 409 to a request sent once every lock claimed by claimBy has
// expired (LOCK_TTL_MS, and a tenth of it for the server's clock) is the
// server's own word that the lock outlives LOCK_TTL_MS, however slow the
// machine: the grader follows the key further, to say how long the lock
// lasts, if it ever ends, and fails the check. No definitive answer for
// another reason (no answer, 5xx) fails it on a quiet machine, and on a
// busy one says it could not tell.
func (t *trial) retry(r request, claimBy time.Time, after string) (reply, bool) {
	bound := t.cfg.LockTTL + t.bound(5*time.Second)
	expired := claimBy.Add(t.cfg.LockTTL + max(t.cfg.LockTTL/10, 100*time.Millisecond))
	got, ok := t.settleWatch(r, bound, expired)
	if ok {
		return got, true
	}
	switch {
	case got.Status == 409 && t.settledSent.After(expired):
		return t.lockLasts(r, claimBy, after)
	case pace.Busy():
		t.unknown("the retry after %s was still answered %s %s later, on a machine too busy to tell whether it ever would be", after, got.short(), bound.Round(time.Second))
	case got.Status == 409:
		t.failAs(mNoExpiry, "the retry after %s was still answered %s %s later: the key is stuck in progress", after, got.short(), bound.Round(time.Second))
	default:
		t.fail("the retry after %s was still answered %s %s later", after, got.short(), bound.Round(time.Second))
	}
	return got, false
}

// lockLasts follows a key still answered 409 once the lock it was
// claimed with must have expired: it resends r, as a client would, until
// the key is let go or 35 s have passed since the claim (a common
// default lock, 30 s, shows), and fails the check either way, naming
// what was seen: a lock that lasted longer than LOCK_TTL_MS, or one that
// did not expire while the grader watched.
func (t *trial) lockLasts(r request, claimBy time.Time, after string) (reply, bool) {
	watch := max(35*time.Second, 3*t.cfg.LockTTL)
	t.note("the server still answered 409 to a request sent after the key's lock must have expired (LOCK_TTL_MS=%d): the grader goes on resending, for at most %s from the claim, to see how long the lock lasts", t.cfg.LockTTL.Milliseconds(), watch)
	got, ok := t.settle(r, time.Until(claimBy.Add(watch)))
	lasted := t.settledSent.Sub(claimBy)
	switch {
	case !ok && t.settled409.Sub(claimBy) > watch*3/4:
		t.failAs(mNoExpiry, "the retry after %s was still answered 409 %s after the key was claimed (the last answer: %s): the key is stuck in progress; its lock does not expire, or not for far longer than LOCK_TTL_MS=%d", after, t.settled409.Sub(claimBy).Round(time.Second), got.short(), t.cfg.LockTTL.Milliseconds())
	case ok:
		t.failAs(mLockTTL, "the retry after %s was answered 409 until about %s after the key was claimed (then %s): the lock lasted about %s, not the %s LOCK_TTL_MS gives", after, lasted.Round(time.Second), got.short(), lasted.Round(time.Second), t.cfg.LockTTL)
	default:
		t.fail("the retry after %s was answered 409 after the key's lock must have expired, then %s", after, got.short())
	}
	return got, false
}

func replayed(t *trial) {
	r := t.adaPaysBola("grade-replay-000001")
	first := t.sendFirst(r)
	again := t.send(r)
	switch {
	case first.Status != 201:
		t.fail("the first request got %s, not 201", first.short())
	case again.Status != 201:
		t.fail("the copy got %s, not the stored 201", again.short())
	case t.count(1, 2, tenThousand) > 1:
		t.failAs(mNoIdempotency, "the copy ran the transfer again (its 201 names transfer %d, the first's %d): nothing was replayed", again.TransferID, first.TransferID)
	case !again.Replayed:
		t.failAs(mNotMarked, "the copy got 201 without Idempotent-Replayed: true, so a client cannot tell a replay from a new transfer")
	case !sameJSON(first.Body, again.Body):
		t.failAs(mReplayDiffers, "the replay's body (%s) differs from the first answer's (%s)", again.Body, first.Body)
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

// refused is a 4xx that says no to the request itself: not 409 (in
// progress) or 429 (slow down), which ask for a retry.
func refused(got reply) bool {
	return got.Status/100 == 4 && got.Status != 409 && got.Status != 429
}

// reordered sends an identical copy first, then one with its keys in
// another order: only a fingerprint over the raw bytes tells them apart.
func reordered(t *trial) {
	r := t.adaPaysBola("grade-reorder-00001")
	first := t.sendFirst(r)
	if first.Status != 201 {
		t.fail("the first request got %s, not 201", first.short())
		return
	}
	same := t.send(r)
	r.body = `{ "amountKobo": 1000000, "to": 2, "from": 1 }`
	got := t.send(r)
	switch {
	case got.Status == 201:
		t.receipt(got, 1, 2, tenThousand, mNoIdempotency)
	case refused(got) && same.Status == 201:
		t.failAs(mRawFingerprint, "the identical copy got the stored 201, but the same request with its keys reordered was refused (%s %s)", got.short(), got.Body)
	case refused(got) && refused(same):
		t.fail("even the identical copy was refused (%s), and the reordered one too (%s): a copy under the same key must get the stored 201", same.short(), got.short())
	default:
		t.fail("the same request with its keys reordered got %s, not the stored 201", got.short())
	}
	t.passed("the reordered copy got the stored 201; money moved once")
}

func otherBody(t *trial) {
	r := t.adaPaysBola("grade-otherbody-001")
	t.intent("the reused key's ₦20,000", 1, 2, 2_000_000, 0)
	t.sendFirst(r)
	same := t.send(r)
	r.body = body(1, 2, 2_000_000) // Ada can afford it: only the key may refuse it
	got := t.send(r)
	switch {
	case same.Status == 201 && t.count(1, 2, tenThousand) > 1:
		t.failAs(mNoIdempotency, "even the identical copy ran the transfer again (%s): the server does not look at the key at all", same.short())
	case got.Status == 422:
		t.passed("422: the key was refused for a different request; no money moved")
	case refused(got) && t.count(1, 2, 2_000_000) == 0:
		t.passed("%d: the key was refused for a different request; no money moved (the lesson and the IETF draft answer 422)", got.Status)
	case got.Status == 201 && got.Replayed, got.Status == 201 && got.TransferID != 0 && t.count(1, 2, 2_000_000) == 0:
		t.failAs(mNoFingerprint, "the first request's 201 was replayed to a different one (%s %s): the client believes ₦20,000 left, but only ₦10,000 did", got.short(), got.Body)
	case got.Status == 201:
		t.fail("the key's other request was run as a new transfer (%s): a key must belong to one request, and another request under it be refused with 422", got.short())
	default:
		t.fail("a key reused for another request got %s, not 422", got.short())
	}
}

func otherUser(t *trial) {
	const key = "grade-otheruser-01"
	t.intent("Bola's own ₦1,000 to Ada", 2, 1, 100_000, 1)
	t.sendFirst(t.adaPaysBola(key))
	got := t.sendFirst(request{user: "bola", key: key, body: body(2, 1, 100_000)})
	switch {
	case got.Status == 201 && !got.Replayed && t.count(2, 1, 100_000) > 0:
		t.receipt(got, 2, 1, 100_000, mTransfer)
		t.passed("201: Bola's key is Bola's own; both transfers happened")
	case got.Replayed || got.Status == 201:
		t.failAs(mUnscoped, "Bola got Ada's stored answer (%s %s): keys are shared between users", got.short(), got.Body)
	case refused(got) || got.Status == 409:
		t.failAs(mUnscoped, "Bola's own request was refused (%s %s) because Ada had used the same key: keys are shared between users", got.short(), got.Body)
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
		t.failAs(mKeyOptional, "a transfer without an Idempotency-Key was carried out (%s): a retry of it could never be recognised", got.short())
	default:
		t.fail("a request without an Idempotency-Key got %s, not 400", got.short())
	}
}

func refusal(t *trial) {
	tooMuch := request{user: "ada", key: "grade-refusal-00001", body: body(1, 2, 5_200_000)}
	t.intent("Ada's ₦52,000, more than she has", 1, 2, 5_200_000, 0)
	t.intent("Bola's ₦3,000 to Ada", 2, 1, 300_000, 1)
	first := t.send(tooMuch)
	if !refused(first) {
		t.fail("a transfer of more than Ada has got %s, not a refusal (422)", first.short())
		return
	}
	if got := t.sendFirst(request{user: "bola", key: "grade-refusal-00002", body: body(2, 1, 300_000)}); got.Status != 201 {
		t.fail("Bola's ₦3,000 to Ada got %s, not 201", got.short())
		return
	}
	t.note("Ada now has ₦53,000: a re-run of the refused request would succeed")
	got := t.send(tooMuch)
	switch {
	case got.Status == first.Status && sameJSON(got.Body, first.Body):
		t.passed("the retry got the stored refusal (%s), not a new run", got.short())
	case got.Status == 201:
		t.failAs(mRefusalRerun, "the refused request was run again on retry, and this time it moved ₦52,000: refusals must be stored and replayed")
	default:
		t.fail("the retry of a refusal got %s %s, not the stored %d", got.short(), got.Body, first.Status)
	}
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
	claimBy := time.Now()
	var cancelled bool
	t.rec.Arrow(record.ActorApp, record.ActorDB, "cancel server A's statement (pg_cancel_backend)", "")
	t.must(t.db.QueryRow(t.ctx, "SELECT pg_cancel_backend($1)", blocked).Scan(&cancelled))
	if !cancelled {
		t.rec.Arrow(record.ActorDB, record.ActorApp, "not cancelled", "refused")
		release()
		t.await(p, 10*time.Second)
		t.notApplicable("the grader could not cancel the server's statement (pg_cancel_backend refused: another role's session?)")
		return
	}
	t.note("the server's session waits on Ada's row: the grader cancels its statement (pg_cancel_backend), as a brief outage would")
	release()
	first, _ := t.await(p, 10*time.Second)
	if first.Status == 201 {
		t.receipt(first, 1, 2, tenThousand, mTransfer)
		t.passed("the server got over the cancelled statement by itself and answered 201; money moved once")
		return
	}
	got := t.send(r)
	if got.Status >= 500 && got.Replayed {
		t.failAs(mReplay500, "the retry got the failure back, marked Idempotent-Replayed: true: it was stored under the key as if it were the request's answer")
		return
	}
	ok = got.definitive()
	bound := t.cfg.LockTTL + t.bound(5*time.Second)
	if !ok {
		got, ok = t.settleWatch(r, bound, claimBy.Add(t.cfg.LockTTL+max(t.cfg.LockTTL/10, 100*time.Millisecond)))
	}
	switch {
	case ok && got.Status == 201:
		t.receipt(got, 1, 2, tenThousand, mNoIdempotency)
		t.passed("the failure (%s) was not kept: the retry got 201; money moved once", first.short())
	case got.Status == 409 && t.settledSent.After(claimBy.Add(t.cfg.LockTTL+max(t.cfg.LockTTL/10, 100*time.Millisecond))):
		t.lockLasts(r, claimBy, "the failure")
	case got.Status == 409 && pace.Busy():
		t.unknown("after the failure (%s) the retry was still answered 409 %s later, on a machine too busy to tell whether it ever would be", first.short(), bound.Round(time.Second))
	case got.Status == 409:
		t.failAs(mNoExpiry, "after the failure (%s) the retry was still answered 409 %s later: the key is stuck in progress", first.short(), bound.Round(time.Second))
	case got.Status >= 500 || ok:
		// The same key keeps failing: is the server down, or is the failure stored?
		t.intent("Ada's ₦1 to Bola, under a new key", 1, 2, 100, 1)
		fresh := t.send(request{user: "ada", key: "grade-outage-fresh01", body: body(1, 2, 100)})
		if fresh.Status == 201 {
			t.failAs(mReplay500, "the retry got %s again and again while a new key goes through: the failure was stored under the key and replayed", got.short())
		} else {
			t.failAs(mNoRecovery, "after the failure (%s) every request fails, a new key's too (%s)", first.short(), fresh.short())
		}
	default:
		t.fail("the retry after the failure (%s) got %s, not 201", first.short(), got.short())
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return s
}
