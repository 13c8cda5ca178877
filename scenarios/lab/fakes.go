package lab

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/zudojs/bank/bank"
)

// The outside world, simulated: systems the bank calls but cannot roll
// back. Each keeps its own record of what reached it, which is what the
// invariant checks count.

// SMS is the story's SMS provider, drawn in the pictures.
func (l *Lab) SMS() *SMSProvider { return &SMSProvider{lab: l} }

// Rail is the story's payment rail, drawn in the pictures.
func (l *Lab) Rail() *Rail { return &Rail{lab: l} }

// Queue is the story's message queue, drawn in the pictures.
func (l *Lab) Queue() *Queue { return &Queue{lab: l} }

// SMSProvider delivers text messages. Given an idempotency key, it
// delivers each key once, as real providers do; without one it delivers
// every request.
type SMSProvider struct {
	lab       *Lab // draws each request, if set
	mu        sync.Mutex
	delivered []string // the texts, in order
	keys      map[string]bool
}

// Send delivers text, sent by the server, unless key was seen before.
func (p *SMSProvider) Send(key, to, text string) (delivered bool) {
	return p.SendAs(actorServer, key, to, text)
}

// SendAs is Send for a sender of another name (an outbox worker), drawn
// in a lane of its own.
func (p *SMSProvider) SendAs(who, key, to, text string) (delivered bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	req := "send " + to + ": " + text
	if key != "" {
		req += ", key " + KeyName(key)
	}
	p.lab.draw(who, actorSMS, req, "")
	if key != "" {
		if p.keys == nil {
			p.keys = map[string]bool{}
		}
		if p.keys[key] {
			p.lab.draw(actorSMS, who, "seen this key: not sent again", "replayed")
			return false
		}
		p.keys[key] = true
	}
	p.delivered = append(p.delivered, to+": "+text)
	p.lab.draw(actorSMS, who, "delivered", "")
	return true
}

// Count is how many messages with this text reached phones.
func (p *SMSProvider) Count(text string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, d := range p.delivered {
		if d == text {
			n++
		}
	}
	return n
}

// errRailTimeout is what the bank sees when the rail accepted a payment
// but its answer never came back.
var errRailTimeout = errors.New("the rail did not answer in time")

// Rail is another bank's payment system: it pays every reference it is
// given, once per reference, and can lose its answer after accepting.
type Rail struct {
	lab      *Lab // draws each request, if set
	mu       sync.Mutex
	paid     map[string]int64 // reference -> kobo
	order    []string
	loseNext int
	dropNext int
}

// LoseAnswers loses the answer of the next n payments, after paying them.
func (r *Rail) LoseAnswers(n int) { r.mu.Lock(); r.loseNext = n; r.mu.Unlock() }

// DropRequests loses the next n requests on the way, before the rail
// sees them.
func (r *Rail) DropRequests(n int) { r.mu.Lock(); r.dropNext = n; r.mu.Unlock() }

// Pay pays reference, once.
func (r *Rail) Pay(_ context.Context, reference string, amountKobo int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	req := fmt.Sprintf("pay %s, reference %s", bank.Naira(amountKobo), reference)
	if r.dropNext > 0 {
		r.dropNext--
		r.lab.draw(actorServer, actorRail, req+" (never arrived)", "lost")
		return errRailTimeout // it never got there: nothing was paid
	}
	r.lab.draw(actorServer, actorRail, req, "")
	if r.paid == nil {
		r.paid = map[string]int64{}
	}
	answer := "already paid this reference: not paid again"
	if _, ok := r.paid[reference]; !ok {
		r.paid[reference] = amountKobo
		r.order = append(r.order, reference)
		answer = "paid"
	}
	if r.loseNext > 0 {
		r.loseNext--
		r.lab.draw(actorRail, actorServer, answer+" (answer lost: timeout)", "lost")
		return errRailTimeout
	}
	r.lab.draw(actorRail, actorServer, answer, "")
	return nil
}

// Seen answers a status enquiry.
func (r *Rail) Seen(_ context.Context, reference string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.paid[reference]
	r.lab.draw(actorServer, actorRail, "status of "+reference+"?", "")
	r.lab.draw(actorRail, actorServer, map[bool]string{true: "paid", false: "never seen"}[ok], "")
	return ok, nil
}

// Paid is how much the rail paid out, in all.
func (r *Rail) Paid() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sum int64
	for _, kobo := range r.paid {
		sum += kobo
	}
	return sum
}

// Payments is how many payments the rail made whose reference starts with
// prefix (one intent's attempt family, or its attempts).
func (r *Rail) Payments(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ref := range r.order {
		if len(ref) >= len(prefix) && ref[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

// Queue delivers messages at least once: a message stays until it is
// acknowledged, and every consumer that asks gets the unacknowledged ones.
type Queue struct {
	lab   *Lab // draws what it is given, if set
	mu    sync.Mutex
	msgs  map[string]string // id -> body
	acked map[string]bool
}

// Body is the body of message id.
func (q *Queue) Body(id string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.msgs[id]
}

// Publish adds a message.
func (q *Queue) Publish(id, body string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.msgs == nil {
		q.msgs, q.acked = map[string]string{}, map[string]bool{}
	}
	q.msgs[id] = body
	q.lab.draw(actorServer, actorQueue, "publish "+id, "")
}

// Pending delivers the unacknowledged message ids, in order.
func (q *Queue) Pending() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var ids []string
	for id := range q.msgs {
		if !q.acked[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		q.lab.draw(actorQueue, actorConsumer, "deliver "+id, "")
	}
	return ids
}

// Ack removes a message for good.
func (q *Queue) Ack(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.acked[id] = true
	q.lab.draw(actorConsumer, actorQueue, "ack "+id, "")
}
