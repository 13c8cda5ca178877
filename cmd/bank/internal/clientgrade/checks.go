package clientgrade

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/zudojs/bank/bank/audit"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
)

// The mistakes a check can name, from the lab's one catalogue.
var (
	mNewKey        = mistakes.Must("new-key-per-attempt")
	mRetriedRefuse = mistakes.Must("retried-refusal")
	mNoRetry       = mistakes.Must("no-retry")
	mNoTimeout     = mistakes.Must("no-timeout")
	mRetryAfter    = mistakes.Must("ignored-retry-after")
	mNoBackoff     = mistakes.Must("no-backoff")
	mLockstep      = mistakes.Must("lockstep")
	mFailed        = mistakes.Must("failed-not-unknown")
	mNoLookup      = mistakes.Must("never-asked")
	mNotInDraft    = mistakes.Must("key-not-in-draft")
	mReusedKey     = mistakes.Must("reused-key")
)

// Checks are the faults, in the order the card lists them.
var Checks = []Check{
	{Name: "plain", Title: "a plain transfer: one request, a key of the right form, the body as given", Required: true, See: "bank scenario http", run: plain},
	{Name: "lost-reply", Title: "a reply lost after the commit: the retry under the same key gets the stored transfer", Required: true, See: "bank scenario retry-safe", run: lostReply},
	{Name: "hung", Title: "an attempt never answered: given up after ATTEMPT_TIMEOUT_MS, then retried under the same key", Required: true, See: "bank scenario unknown-outcome", run: hung},
	{Name: "busy", Title: "409 with Retry-After: 1: retried under the same key, not before a second", Required: true, See: "bank scenario concurrent", run: thrown(409, "1")},
	{Name: "rate-limited", Title: "429 with Retry-After: 1: retried under the same key, not before a second", Required: true, See: "bank scenario backoff", run: thrown(429, "1")},
	{Name: "server-error", Title: "500: retried under the same key", Required: true, See: "bank scenario http", run: thrown(500, "")},
	{Name: "unavailable", Title: "503 with Retry-After: 1: retried under the same key, not before a second", Required: true, See: "bank scenario backoff", run: thrown(503, "1")},
	{Name: "refused", Title: "a refusal (422, not enough money): not retried, reported refused with the server's reason", Required: true, See: "bank exercise should-retry", run: refused},
	{Name: "bad-request", Title: "a 400: not retried, reported refused", Required: true, See: "bank exercise should-retry", run: badRequest},
	{Name: "backoff", Title: "eight failures in a row: the waits between attempts grow", Required: true, See: "bank scenario backoff", run: backoff},
	{Name: "lockstep", Title: "twelve clients failing alike: their waits differ (jitter), so they do not retry in lockstep", Required: true, See: "bank scenario backoff", run: lockstep},
	{Name: "give-up", Title: "a server that never answers again, lookups included: the outcome unknown, never refused, within 10 attempts", Required: true, See: "bank scenario unknown-outcome", run: giveUp},
	{Name: "lookup", Title: "having given up, asks GET /transfers?key= and reports what became of it", Required: false, See: "bank scenario unknown-outcome", run: lookup},
	{Name: "restart", Title: "the client killed (SIGKILL) while it waits, started again: the same key, read from its draft", Required: true, See: "bank scenario one-key", run: restart},
	{Name: "one-key", Title: "two taps on Send, one after the other: two keys, two transfers", Required: true, See: "bank scenario one-key", run: oneKey},
}

// Ada's ₦10,000 to Bola: the lesson's transfer.
const adaFrom, adaTo, adaKobo = 1, 2, 1_000_000

var adaPaysBola = transfer(adaFrom, adaTo, adaKobo)

func adaIntent(label string, want int) audit.Intent {
	return audit.Intent{Label: label, From: adaFrom, To: adaTo, Kobo: adaKobo, Want: want}
}

// made checks that the run reported made, with the id of the one transfer
// the bank holds for the intent.
func (t *trial) made(o outcome, b audit.Books, in audit.Intent) {
	moved := b.Moved(in)
	if len(moved) == 0 {
		t.Fail(nil, "no transfer was made, but the client reported %s", o)
	}
	if o.Said != "made" {
		t.Fail(nil, "the transfer was made (transfer %d), but the client reported %s", moved[0].ID, o)
	}
	if len(moved) == 1 && o.Transfer != moved[0].ID {
		t.Fail(nil, "the client reported transferId %d, but the transfer made is %d", o.Transfer, moved[0].ID)
	}
}

// sameKeys fails the check when the POSTs of one intent did not all carry
// the first's key and body.
func (t *trial) sameKeys(posts []attempt, body string, from int64) {
	for _, a := range posts {
		if w := requestWords(a, body, from); w != "" && keyWords(a) == "" && a.Key == posts[0].Key {
			t.Fail(nil, "attempt %d: %s", a.N, w)
		}
		if a.Key != posts[0].Key {
			t.Fail(&mNewKey, "attempt %d came under the key %s, attempt 1 under %s: a retry must carry its intent's key", a.N, quoteKey(a.Key), quoteKey(posts[0].Key))
		}
	}
}

func plain(t *trial) {
	f := t.serve(nil)
	o := t.finish(t.launch(f, adaPaysBola, adaFrom, ""))
	t.noteAttempts(f)
	posts := f.posts()
	if len(posts) == 0 {
		t.Fail(nil, "the client sent no POST /transfers")
	}
	if w := requestWords(posts[0], adaPaysBola, adaFrom); w != "" {
		t.Fail(nil, "the request is not the contract's: %s", w)
	}
	b := t.books(adaIntent("Ada's tap", 1))
	t.made(o, b, adaIntent("", 1))
	if len(posts) > 1 {
		t.slowRetry(posts)
		t.Fail(nil, "%d POSTs for one transfer that was answered 201 at once: a 201 is not retried", len(posts))
	}
	t.Pass("one POST, the key %s, the body as given; reported made, transfer %d", quoteKey(posts[0].Key), o.Transfer)
}

func lostReply(t *trial) {
	f := t.serve(first(fault{kind: lose}))
	o := t.finish(t.launch(f, adaPaysBola, adaFrom, ""))
	t.noteAttempts(f)
	posts := f.posts()
	t.retried(posts, o, "the reply was lost")
	t.sameKeys(posts, adaPaysBola, adaFrom)
	b := t.books(adaIntent("Ada's tap", 1))
	t.made(o, b, adaIntent("", 1))
	t.Pass("retried under the same key after the lost reply; reported made, transfer %d, money moved once", o.Transfer)
}

// slowRetry ends the check unknown when the second attempt may have been
// the client's timeout, not a choice: on a busy machine, a retry that came
// half ATTEMPT_TIMEOUT_MS or more after the first may have left before the
// answer reached the client. A retry of an answer it read comes sooner.
func (t *trial) slowRetry(posts []attempt) {
	if gap := posts[1].At.Sub(posts[0].At); pace.Busy() && gap >= t.timeout/2 {
		t.Unknown("a second attempt came %dms after the first, which was answered at once: on a machine this busy the client may have given the first up (ATTEMPT_TIMEOUT_MS=%d) before its answer reached it", gap.Milliseconds(), t.timeout.Milliseconds())
	}
}

// retried fails the check when the client did not send a second attempt
// after the first failed (what).
func (t *trial) retried(posts []attempt, o outcome, what string) {
	switch {
	case len(posts) == 0:
		t.Fail(nil, "the client sent no POST /transfers")
	case len(posts) == 1 && o.Said == "refused":
		t.Fail(&mFailed, "%s, and the client reported refused without retrying: the outcome was not known", what)
	case len(posts) == 1:
		t.Fail(&mNoRetry, "%s, and the client did not retry (it reported %s)", what, o)
	}
}

func hung(t *trial) {
	f := t.serve(first(fault{kind: hold}))
	c := t.launch(f, adaPaysBola, adaFrom, "")
	timeout := t.timeout
	// The second attempt, or the client's end, within the timeout and
	// ample room for a first backoff.
	bound := pace.After(2*timeout + 10*time.Second)
	f.waitFor(bound.Limit(), c.exited(), func(as []attempt) bool { return len(postsOf(as)) >= 2 })
	posts := f.posts()
	if len(posts) == 1 && bound.Busy() {
		// Slow, or waiting for ever? Past hardBound, sixty times the
		// timeout, no machine is that slow.
		f.waitFor(time.Until(posts[0].At.Add(hardBound)), c.exited(), func(as []attempt) bool { return len(postsOf(as)) >= 2 })
		posts = f.posts()
	}
	if len(posts) < 2 {
		select {
		case <-c.exited():
		default:
			t.noteAttempts(f)
			c.kill()
			if len(posts) == 0 {
				t.Fail(nil, "the client sent no POST /transfers within %s", bound.Limit())
			}
			t.Fail(&mNoTimeout, "the first attempt got no answer, and %s later the client was still waiting on it (ATTEMPT_TIMEOUT_MS=%d)", time.Since(posts[0].At).Round(time.Second), timeout.Milliseconds())
		}
	}
	o := t.finish(c)
	t.noteAttempts(f)
	posts = f.posts()
	t.retried(posts, o, "the first attempt got no answer")
	first := posts[0]
	gaveUp := posts[1].At
	if !first.Gone.IsZero() && first.Gone.Before(gaveUp) {
		gaveUp = first.Gone
	}
	waited := gaveUp.Sub(first.At)
	t.Note("the first attempt was given up %dms after it was sent (ATTEMPT_TIMEOUT_MS=%d)", waited.Milliseconds(), timeout.Milliseconds())
	if limit := pace.Stretch(timeout + timeout/2 + 500*time.Millisecond); waited > limit {
		if pace.Busy() {
			t.Unknown("the first attempt was given up after %s, past %s, but the machine was too busy to tell whether the client or the machine was slow", waited.Round(time.Millisecond), limit)
		}
		t.Fail(&mNoTimeout, "the first attempt was given up only after %s: ATTEMPT_TIMEOUT_MS was %d", waited.Round(time.Millisecond), timeout.Milliseconds())
	}
	// Its timer may start before the request reaches the front: only a
	// wait far short of the timeout is too early.
	if waited < timeout/2 {
		t.Fail(nil, "the first attempt was given up after %s, before ATTEMPT_TIMEOUT_MS (%d) had passed", waited.Round(time.Millisecond), timeout.Milliseconds())
	}
	t.sameKeys(posts, adaPaysBola, adaFrom)
	b := t.books(adaIntent("Ada's tap", 1))
	t.made(o, b, adaIntent("", 1))
	t.Pass("gave the hung attempt up after %dms (ATTEMPT_TIMEOUT_MS=%d%s) and retried under the same key; reported made", waited.Milliseconds(), timeout.Milliseconds(), map[bool]string{true: ", stretched by the machine's load"}[timeout != t.cfg.AttemptTimeout])
}

// first is a plan that throws flt at the first POST and lets the others
// through to the bank.
func first(flt fault) func(n int, _ *attempt) fault {
	return func(n int, _ *attempt) fault {
		if n == 1 {
			return flt
		}
		return fault{}
	}
}

// hardBound is how long the hung check waits, on a busy machine, for a
// client to give up an attempt never answered: 60 times the default
// ATTEMPT_TIMEOUT_MS.
const hardBound = 60 * time.Second

func postsOf(as []attempt) []attempt {
	var out []attempt
	for _, a := range as {
		if a.Method == http.MethodPost {
			out = append(out, a)
		}
	}
	return out
}

// errorBody is the lesson's error body for a status the front throws.
func errorBody(status int) string {
	code := map[int]string{400: "invalid_request", 409: "request_in_progress", 429: "rate_limited", 500: "internal_error", 503: "unavailable"}[status]
	msg := map[int]string{400: "the request is not valid", 409: "a request with this key is being processed; retry later",
		429: "too many requests; retry later", 500: "something went wrong; retry", 503: "the service is unavailable; retry later"}[status]
	return fmt.Sprintf(`{"error":%q,"message":%q}`, code, msg)
}

// thrown is a check that answers the first attempt with status (and
// Retry-After: retry, when not ""), without the bank, then lets the
// retry through.
func thrown(status int, retry string) func(t *trial) {
	return func(t *trial) {
		f := t.serve(first(fault{kind: answer, status: status, retry: retry, body: errorBody(status)}))
		o := t.finish(t.launch(f, adaPaysBola, adaFrom, ""))
		t.noteAttempts(f)
		posts := f.posts()
		t.retried(posts, o, fmt.Sprintf("the first attempt was answered %d", status))
		t.sameKeys(posts, adaPaysBola, adaFrom)
		gap := posts[1].At.Sub(posts[0].Answered)
		if retry != "" {
			t.Note("the retry came %dms after the %d (Retry-After: %s)", gap.Milliseconds(), status, retry)
			if gap < time.Second-20*time.Millisecond {
				t.Fail(&mRetryAfter, "the retry came %dms after the %d, which said Retry-After: %s", gap.Milliseconds(), status, retry)
			}
		}
		b := t.books(adaIntent("Ada's tap", 1))
		t.made(o, b, adaIntent("", 1))
		t.Pass("retried under the same key %dms after the %d; reported made", gap.Milliseconds(), status)
	}
}

// refusedOnce checks a refusal's run: one POST, reported refused with
// status and, where the server gave one, its reason.
func (t *trial) refusedOnce(f *front, o outcome, status int) {
	posts := f.posts()
	if len(posts) == 0 {
		t.Fail(nil, "the client sent no POST /transfers")
	}
	if len(posts) > 1 {
		t.slowRetry(posts)
		t.Fail(&mRetriedRefuse, "the first attempt was answered %d, and the client sent it %d times: a %d fails the same way every time", status, len(posts), status)
	}
	if o.Said != "refused" {
		t.Fail(nil, "the server refused the transfer (%d), but the client reported %s", status, o)
	}
	if o.Status != status {
		t.Fail(nil, "the client reported the status %d; the server answered %d", o.Status, status)
	}
	// The contract's error: the server's code, or its message.
	var said struct{ Error, Message string }
	_ = json.Unmarshal([]byte(posts[0].Answer), &said)
	if o.Error == "" || !strings.Contains(o.Error, said.Error) && !strings.Contains(o.Error, said.Message) {
		t.Fail(nil, "the client reported the error %q; the server's was %s (%s)", o.Error, said.Error, said.Message)
	}
}

func refused(t *trial) {
	// Bola's ₦10,000 to Ada: she has ₦5,000.
	body := transfer(2, 1, adaKobo)
	f := t.serve(nil)
	o := t.finish(t.launch(f, body, 2, ""))
	t.noteAttempts(f)
	t.refusedOnce(f, o, 422)
	t.books(audit.Intent{Label: "Bola's tap", From: 2, To: 1, Kobo: adaKobo, Want: 0})
	t.Pass("one attempt, reported refused: 422 %s", o.Error)
}

func badRequest(t *trial) {
	f := t.serve(first(fault{kind: answer, status: 400, body: errorBody(400)}))
	o := t.finish(t.launch(f, adaPaysBola, adaFrom, ""))
	t.noteAttempts(f)
	t.refusedOnce(f, o, 400)
	t.books(adaIntent("Ada's tap", 0))
	t.Pass("one attempt, reported refused: 400 %s", o.Error)
}

// giveUpWithin is the contract's bound on a run that gives up.
const giveUpWithin = 60 * time.Second

// giveUpFront makes the transfer at the first attempt, loses its answer,
// and closes every later one unanswered: with lookups, a GET
// /transfers?key= is answered by the bank, else closed unanswered too.
func giveUpFront(t *trial, lookups bool) *front {
	f := t.serve(func(n int, _ *attempt) fault {
		if n == 1 {
			return fault{kind: lose}
		}
		return fault{kind: drop}
	})
	f.mu.Lock()
	f.dropOthers = !lookups
	f.mu.Unlock()
	return f
}

// gaveUp runs the give-up checks' client and judges what both require.
func (t *trial) gaveUp(lookups bool) (*front, outcome, audit.Books) {
	f := giveUpFront(t, lookups)
	o := t.finish(t.launch(f, adaPaysBola, adaFrom, ""))
	t.noteAttempts(f)
	posts := f.posts()
	t.retried(posts, o, "the reply was lost")
	t.sameKeys(posts, adaPaysBola, adaFrom)
	b := t.books(adaIntent("Ada's tap", 1))
	switch {
	case len(posts) > 10:
		t.Fail(nil, "%d attempts: the contract allows 10 at most", len(posts))
	case o.Took > pace.Stretch(giveUpWithin) && pace.Busy():
		t.Unknown("it gave up after %s, past the contract's %s, but the machine was too busy to tell whether the client or the machine was slow", o.Took.Round(time.Second), giveUpWithin)
	case o.Took > pace.Stretch(giveUpWithin):
		t.Fail(nil, "it gave up only after %s: the contract's client gives up within %s", o.Took.Round(time.Second), giveUpWithin)
	case o.Said == "refused":
		t.Fail(&mFailed, "the transfer was made, and the server never said otherwise, but the client reported refused: %s", o)
	case o.Said == "made":
		t.made(o, b, adaIntent("", 1))
	}
	return f, o, b
}

func giveUp(t *trial) {
	_, o, _ := t.gaveUp(false)
	t.Pass("gave up after its attempts and reported %s", o)
}

func lookup(t *trial) {
	f, o, _ := t.gaveUp(true)
	posts := f.posts()
	asked := false
	for _, a := range f.all() {
		if a.Method == http.MethodGet && strings.HasPrefix(a.Path, "/transfers?") && strings.Contains(a.Path, "key="+posts[0].Key) {
			asked = true
		}
	}
	if !asked {
		t.Fail(&mNoLookup, "it never asked GET /transfers?key=%s, so it could not learn that the transfer was made (it reported %s)", posts[0].Key, o)
	}
	if o.Said != "made" {
		t.Fail(nil, "it asked GET /transfers?key=, which said the transfer was made, but reported %s", o)
	}
	t.Pass("asked GET /transfers?key= and reported made, transfer %d", o.Transfer)
}

func restart(t *trial) {
	f := t.serve(first(fault{kind: holdAfter}))
	first := t.launch(f, adaPaysBola, adaFrom, "")
	// Killed once the bank has made the transfer and while the client
	// waits on its answer.
	ok := f.waitFor(pace.Stretch(20*time.Second), first.exited(), func(as []attempt) bool {
		p := postsOf(as)
		return len(p) > 0 && p[0].Bank != 0
	})
	first.kill()
	if !ok {
		t.noteAttempts(f)
		t.Fail(nil, "the client's first run sent no transfer the bank made (its first attempt: %v)", f.posts())
	}
	t.Note("the first run was killed (SIGKILL) once the bank had made the transfer, while it waited on the answer")
	o := t.finish(t.launch(f, adaPaysBola, adaFrom, ""))
	t.noteAttempts(f)
	posts := f.posts()
	var again []attempt
	for _, a := range posts {
		if a.Run == 2 {
			again = append(again, a)
		}
	}
	if len(again) == 0 {
		t.Fail(nil, "the second run sent no POST /transfers (it reported %s): it must resend its draft", o)
	}
	if again[0].Key != posts[0].Key {
		t.noteBooks()
		t.Fail(&mNotInDraft, "the second run sent the key %s, the first %s: the same intent, after a restart, came as a new transfer", quoteKey(again[0].Key), quoteKey(posts[0].Key))
	}
	t.sameKeys(posts, adaPaysBola, adaFrom)
	b := t.books(adaIntent("Ada's tap", 1))
	t.made(o, b, adaIntent("", 1))
	t.Pass("the second run resent the draft's key %s; reported made, transfer %d, money moved once", quoteKey(posts[0].Key), o.Transfer)
}

func oneKey(t *trial) {
	f := t.serve(nil)
	one := t.finish(t.launch(f, adaPaysBola, adaFrom, ""))
	if one.Said != "made" {
		t.noteAttempts(f)
		t.Fail(nil, "the first tap was reported %s, not made", one)
	}
	two := t.finish(t.launch(f, adaPaysBola, adaFrom, ""))
	t.noteAttempts(f)
	posts := f.posts()
	keys := map[int]string{}
	for _, a := range posts {
		if _, ok := keys[a.Run]; !ok {
			keys[a.Run] = a.Key
		}
	}
	if keys[1] == keys[2] {
		t.noteBooks()
		t.Fail(&mReusedKey, "both taps came under the key %s: the second, a new transfer, was answered with the first's receipt (transfer %d)", quoteKey(keys[1]), two.Transfer)
	}
	b := t.books(adaIntent("the two taps", 2))
	moved := b.Moved(adaIntent("", 2))
	if two.Said != "made" || two.Transfer == one.Transfer || len(moved) != 2 || two.Transfer != moved[1].ID {
		t.Fail(nil, "the second tap was reported %s; the bank holds transfers %v", two, moved)
	}
	t.Pass("two taps, two keys (%s, %s), two transfers (%d, %d)", quoteKey(keys[1]), quoteKey(keys[2]), one.Transfer, two.Transfer)
}
