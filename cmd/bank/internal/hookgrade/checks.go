package hookgrade

import (
	"time"

	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
)

// The catalogue's mistakes a consumer's evidence can fit.
var (
	mNoEventDedupe   = mistakes.Must("no-event-dedupe")
	mNoPaymentDedupe = mistakes.Must("no-payment-dedupe")
	mDedupeRace      = mistakes.Must("dedupe-race")
	mOutside         = mistakes.Must("event-outside-transaction")
	mUnsigned        = mistakes.Must("signature-not-checked")
	mStale           = mistakes.Must("stale-accepted")
	mAckEarly        = mistakes.Must("ack-before-commit")
	mOrder           = mistakes.Must("order-assumed")
	mDupRefused      = mistakes.Must("duplicate-refused")
)

// Checks are the provider's ways of delivering, each with what a good
// consumer does, in the order they run.
var Checks = []Check{
	{Name: "plain", Title: "one event, delivered once: credited, the event recorded in the credit's transaction", Required: true, See: "bank scenario webhook", run: plain},
	{Name: "redelivered", Title: "the same delivery again, byte for byte: answered 2xx, credited once", Required: true, See: "bank scenario webhook", run: redelivered},
	{Name: "lost-ack", Title: "its 2xx lost: delivered again, signed anew: answered 2xx, credited once", Required: true, See: "bank scenario webhook", run: lostAck},
	{Name: "twin", Title: "a second event, another id, about the same payment: answered 2xx, credited once", Required: true, See: "bank scenario webhook", run: twin},
	{Name: "at-once", Title: "a second copy while the first is mid-transaction: credited once", Required: true, See: "bank scenario webhook", run: atOnce},
	{Name: "out-of-order", Title: "an event older than one already processed: credited all the same", Required: true, See: "bank scenario webhook", run: outOfOrder},
	{Name: "killed", Title: "the consumer killed (SIGKILL) at each of its writes, started again, the event delivered again: credited once", Required: true, See: "bank scenario webhook", run: killed},
	{Name: "forged", Title: "a delivery signed with another key: refused (4xx), nothing credited", Required: true, See: "bank grade webhook --contract", run: forged},
	{Name: "stale", Title: "a delivery signed ten minutes ago: refused (4xx), nothing credited", Required: true, See: "bank grade webhook --contract", run: stale},
	{Name: "slow", Title: "the first delivery held past the provider's timeout, delivered again while it runs: credited once", Required: true, See: "bank scenario webhook", run: slowFirst},
}

func plain(t *trial) {
	e := t.payment(time.Now())
	t.owe(e, 1)
	d := t.send(e)
	t.books(t.twiceBecause(e, &mDedupeRace))
	if !d.ok() {
		t.Fail(nil, "a good delivery, and the provider's redeliveries of it, were never answered 2xx (last: %s)", d.answer())
	}
	t.recordedWith(e)
	t.Pass("answered %d; %s credited once, the event recorded in the credit's transaction", d.Status, e.Payment)
}

// again delivers e a second time (byte for byte when same), and judges
// what both checks require.
func (t *trial) again(e event, same bool) {
	t.owe(e, 1)
	first := t.send(e)
	if !first.ok() {
		t.books(t.twiceBecause(e, &mDedupeRace))
		t.Fail(nil, "the first delivery, and the provider's redeliveries of it, were never answered 2xx (last: %s)", first.answer())
	}
	var second delivery
	if same {
		second = t.deliverAs(e, first.SignedAt, false)
	} else {
		second = t.deliver(e)
	}
	t.books(t.twiceBecause(e, &mDedupeRace))
	if !second.ok() {
		t.Fail(&mDupRefused, "the second delivery of %s was %s: a duplicate must be answered 2xx, or the provider delivers it again and again", e.ID, second.answer())
	}
	t.recordedWith(e)
}

func redelivered(t *trial) {
	e := t.payment(time.Now())
	t.again(e, true)
	t.Pass("both deliveries answered 2xx; %s credited once", e.Payment)
}

func lostAck(t *trial) {
	e := t.payment(time.Now())
	t.again(e, false)
	t.Pass("the redelivery answered 2xx; %s credited once", e.Payment)
}

func twin(t *trial) {
	e := t.payment(time.Now())
	tw := t.twin(e)
	t.owe(e, 1)
	first := t.send(e)
	second := t.send(tw)
	t.books(t.twiceBecause(e, &mNoPaymentDedupe))
	if !first.ok() || !second.ok() {
		t.Fail(&mDupRefused, "the deliveries were %s and %s: both must be 2xx, the twin's too (it is processed: its payment is credited already)", first.answer(), second.answer())
	}
	t.recordedWith(e)
	t.Pass("%s and its twin %s answered 2xx; %s credited once", e.ID, tw.ID, e.Payment)
}

func outOfOrder(t *trial) {
	older := t.payment(time.Now().Add(-time.Hour))
	newer := t.payment(time.Now())
	t.owe(older, 1)
	t.owe(newer, 1)
	d1 := t.send(newer)
	d2 := t.send(older)
	t.quiet()
	if c := t.readCredits(); c.rows[older.Payment] == 0 && c.rows[newer.Payment] > 0 && d2.ok() {
		t.Note("the bank after: %s; deposits %s", c.line, depositsLine(c.rows))
		t.Fail(&mOrder, "%s, whose event is an hour older than %s's, was answered %d but never credited", older.Payment, newer.Payment, d2.Status)
	}
	t.books(t.twiceBecause(newer, &mDedupeRace))
	if !d1.ok() || !d2.ok() {
		t.Fail(nil, "the deliveries were %s and %s, not 2xx", d1.answer(), d2.answer())
	}
	t.Pass("both credited once, the older event after the newer")
}

func forged(t *trial) { t.refused(t.payment(time.Now()), time.Time{}, true, &mUnsigned) }

func stale(t *trial) {
	t.refused(t.payment(time.Now()), time.Now().Add(-10*time.Minute), false, &mStale)
}

// refused delivers e signed at signedAt, forged or not: it must be
// refused with a 4xx, and nothing credited.
func (t *trial) refused(e event, signedAt time.Time, forge bool, m *mistakes.Mistake) {
	t.owe(e, 0)
	d := t.deliverAs(e, signedAt, forge)
	t.books(m)
	if d.Status/100 != 4 {
		t.Fail(m, "it was %s: a delivery the provider did not sign now must be refused with a 4xx", d.answer())
	}
	t.Pass("refused: %d; nothing credited", d.Status)
}

func atOnce(t *trial)    { t.race(false) }
func slowFirst(t *trial) { t.race(true) }

// race holds the first delivery's transaction at its first write (the
// witness's gate), sends a second copy of the event while it is held
// (after the provider gave up on the first, when timeout), waits until the
// second is held too, or waits behind the first, or is answered, and then
// lets both go: the payment must be credited once.
func (t *trial) race(timeout bool) {
	e := t.payment(time.Now())
	t.owe(e, 1)
	g := t.gate()
	defer g.Open(t.ctx)
	wait := 3 * pace.Stretch(providerTimeout)
	if timeout {
		wait = pace.Stretch(providerTimeout)
	}
	first := t.async(e, wait)
	if !t.waitHeld(g, first) {
		t.wait(first)
		t.books(nil)
		t.Fail(nil, "the first delivery was answered without a write: the payment must be credited in a transaction")
	}
	t.Note("the first delivery's transaction is held at its first write")
	t.answeredEarly(first, e)
	if timeout {
		<-first.done
		t.Note("the provider gave up on it after %s (its %s, stretched by the machine's load), and delivers the event again", wait.Round(100*time.Millisecond), providerTimeout)
	}
	second := t.async(e, 3*pace.Stretch(providerTimeout))
	deadline := pace.After(heldBound)
	for t.waiting() < 2 && !second.answered() && !deadline.Passed() {
		time.Sleep(10 * time.Millisecond)
	}
	if second.answered() {
		t.Note("the second delivery was answered while the first was held")
	} else {
		t.Note("the second delivery waits too (held at its first write, or behind the first's)")
	}
	g.Open(t.ctx)
	d1, d2 := t.wait(first), t.wait(second)
	last := d2
	if !d2.ok() {
		last = t.settle(e)
	}
	t.books(t.twiceBecause(e, &mDedupeRace))
	if !d1.ok() && !last.ok() {
		t.Fail(nil, "no delivery of %s was answered 2xx", e.ID)
	}
	if !last.ok() {
		t.Fail(&mDupRefused, "the copy delivered while the first ran, and its redeliveries, were never answered 2xx (last: %s)", last.answer())
	}
	t.recordedWith(e)
	t.Pass("the first copy: %s; the second: %s; %s credited once", d1.answer(), d2.answer(), e.Payment)
}

// twiceBecause is the mistake e's payment credited more than once in
// this check fits: m, unless one more delivery of the very same event,
// alone, credits it again; then the consumer dedupes on nothing.
func (t *trial) twiceBecause(e event, m *mistakes.Mistake) *mistakes.Mistake {
	t.quiet()
	before := t.readCredits().rows[e.Payment]
	if before <= t.want[e.Payment] {
		return m
	}
	t.deliver(e)
	t.quiet()
	if t.readCredits().rows[e.Payment] > before {
		if m == &mNoPaymentDedupe {
			t.Note("delivered once more, alone, %s was credited again: this consumer dedupes neither on the event id nor on the payment; mend the event id's first (the redelivered check's), then the payment's (this one's)", e.ID)
		} else {
			t.Note("delivered once more, alone, %s was credited again", e.ID)
		}
		return &mNoEventDedupe
	}
	return m
}

// answeredEarly fails the check when p's delivery was answered 2xx while
// a transaction of the consumer is held at the gate (after a moment for
// the answer to come): answered before its commit.
func (t *trial) answeredEarly(p *pending, e event) {
	time.Sleep(50 * time.Millisecond)
	if p.answered() && p.d.ok() {
		t.wait(p)
		t.Fail(&mAckEarly, "the delivery of %s was answered %d while the consumer's transaction was still open (held at its first write): the provider took it as done", e.ID, p.d.Status)
	}
}

// maxKillAt bounds the writes the killed check kills the consumer at.
const maxKillAt = 6

// killed delivers a new payment's event, lets k-1 of the consumer's
// transactions through, one at a time, and kills it (SIGKILL) at the k-th
// one's first write, for k = 1, 2, … until a delivery finishes before its
// k-th; each time it starts it again and delivers the event again, which
// must credit the payment once.
func killed(t *trial) {
	for k := 1; k <= maxKillAt; k++ {
		e := t.payment(time.Now())
		t.owe(e, 1)
		g := t.gate()
		p := t.async(e, 3*pace.Stretch(providerTimeout))
		finished := false
		for step := 1; step <= k; step++ {
			if !t.waitHeld(g, p) {
				finished = true
				break
			}
			if step < k {
				t.step(g)
			}
		}
		if finished {
			g.Open(t.ctx)
			d := t.wait(p)
			t.books(nil)
			if k == 1 {
				t.Fail(nil, "the delivery was %s without a single write: the credit must be written", d.answer())
			}
			t.Pass("killed at each of its %d transaction(s); after each restart the event, delivered again, was credited once", k-1)
		}
		t.answeredEarly(p, e)
		killedAt := time.Now()
		t.timeline.Now("the grader kills the consumer (SIGKILL), held at the first write of its transaction %d", k)
		t.consumer.Kill()
		<-t.consumer.Child.Exited()
		t.endHeld(g)
		g.Open(t.ctx)
		cut := ""
		if d := t.wait(p); d.Status == 0 {
			cut = ": the delivery sent at " + t.since(d.Sent) + " was left unanswered"
		}
		t.Note("%s killed (SIGKILL) at the first write of its transaction %d for %s%s", t.since(killedAt), k, e.ID, cut)
		t.timeline.Now("the grader starts the consumer again")
		t.Must(t.consumer.Restart(t.ctx))
		d := t.settle(e)
		t.books(t.twiceBecause(e, &mDedupeRace))
		c := t.readCredits()
		if c.rows[e.Payment] == 0 {
			t.Fail(&mOutside, "after the restart the event %s, delivered again, was %s, and its payment was never credited: what the consumer committed before it was killed said it was done", e.ID, d.answer())
		}
		if !d.ok() {
			t.Fail(&mDupRefused, "after the restart the event %s, delivered again, was %s", e.ID, d.answer())
		}
		t.recordedWith(e)
	}
	t.Pass("killed at each of its first %d transactions; each time the event, delivered again, was credited once", maxKillAt)
}
