package hookgrade

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/cmd/bank/internal/grade"
	"github.com/zudojs/bank/cmd/bank/internal/grade/record"
	"github.com/zudojs/bank/cmd/bank/internal/grade/verdict"
	"github.com/zudojs/bank/cmd/bank/internal/pace"
	"github.com/zudojs/bank/cmd/bank/internal/served"
	"github.com/zudojs/bank/cmd/bank/internal/witness"
)

// trial is one run of one check: a fresh database, the consumer started
// on it, the provider delivering to it, and the card's line being written.
type trial struct {
	ctx          context.Context
	cfg          *Config
	db           *pgxpool.Pool // the grader's: the books, the witness, the gate
	consumer     *served.Process
	prov         *provider
	verdict.Line                // the check's line of the card
	witness      bool           // the database has the witness
	want         map[string]int // each payment delivered: the credits it must have (0 or 1)
	events       map[string]event
	start        time.Time
	paid         int              // payments made up so far, for their references
	timeline     *record.Timeline // what the grader did, for the diagram
	deliveries   []delivery       // every delivery over, for the diagram
}

// runCheck runs one check once, on a fresh database and consumer.
func runCheck(ctx context.Context, cfg *Config, c Check, n int) (res grade.Result, err error) {
	url, consumerURL, drop, err := cfg.NewDatabase(ctx, fmt.Sprintf("hook-%s-%d", c.Name, n))
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
	t := &trial{ctx: ctx, cfg: cfg, db: pool, want: map[string]int{}, events: map[string]event{}, start: now, timeline: record.NewTimeline(now),
		Line: verdict.New(c.Name, c.Title, c.Required, c.See)}
	t.witness, err = witness.Installed(ctx, pool)
	if err != nil {
		return res, err
	}
	secret, key := newSecret()
	t.consumer, err = served.Start(ctx, served.Spec{Command: cfg.Command, StartTimeout: cfg.StartTimeout,
		What: "consumer", Vars: "DATABASE_URL, PORT and WEBHOOK_SECRET",
		Env: []string{"DATABASE_URL=" + consumerURL, "WEBHOOK_SECRET=" + secret}})
	if err != nil {
		return res, err
	}
	defer t.consumer.Kill()
	t.prov = &provider{url: t.consumer.Base() + "/webhooks", key: key}
	t.Run(func() { c.run(t) })
	if ctx.Err() != nil {
		return t.Result, ctx.Err()
	}
	t.Result.Recording = t.drawing(c)
	if out := t.consumer.Output.LastLines(6); out != "" && t.Result.Verdict != grade.Pass {
		t.Note("the consumer's last output: %s", strings.Join(strings.Split(strings.TrimSpace(out), "\n"), " | "))
	}
	return t.Result, nil
}

// payment makes up the next payment of the check: ₦5,000 to Bola, ₦3,000
// to Ada, by turns, each with its own reference, and its event, with
// id evt_N, told at.
func (t *trial) payment(at time.Time) event {
	t.paid++
	e := event{ID: fmt.Sprintf("evt_%d", t.paid), Payment: fmt.Sprintf("pay_%d", 100+t.paid), Account: 2, Kobo: 500_000, At: at}
	if t.paid%2 == 0 {
		e.Account, e.Kobo = 1, 300_000
	}
	t.events[e.ID] = e
	return e
}

// twin is a second event, with an id of its own, about e's payment.
func (t *trial) twin(e event) event {
	t.paid++
	tw := e
	tw.ID = fmt.Sprintf("evt_%d", t.paid)
	t.events[tw.ID] = tw
	return tw
}

// owe says how many times e's payment must be credited by the end.
func (t *trial) owe(e event, n int) { t.want[e.Payment] = n }

// deliver posts e, signed now, and notes what came of it.
func (t *trial) deliver(e event) delivery { return t.deliverAs(e, time.Time{}, false) }

// deliverAs posts e signed at signedAt (now when zero), forged or not.
func (t *trial) deliverAs(e event, signedAt time.Time, forged bool) delivery {
	d := t.prov.deliver(t.ctx, e, signedAt, forged, pace.Stretch(providerTimeout))
	t.noteDelivery(d)
	return d
}

func (t *trial) noteDelivery(d delivery) {
	t.deliveries = append(t.deliveries, d)
	how := ""
	switch {
	case d.Forged:
		how = ", signed with another key"
	case time.Since(d.SignedAt) > time.Minute:
		how = fmt.Sprintf(", webhook-timestamp %s old", time.Since(d.SignedAt).Round(time.Minute))
	}
	t.Note("%s delivered %s (%s to account %d%s): %s", t.since(d.Sent), d.Event.ID, naira(d.Event.Kobo), d.Event.Account, how, d.answer())
}

// since is when at came in the check, as the evidence writes it: +Nms
// from its start.
func (t *trial) since(at time.Time) string {
	return fmt.Sprintf("+%dms", at.Sub(t.start).Milliseconds())
}

// answer is what the consumer answered, in words.
func (d delivery) answer() string {
	switch {
	case d.Status != 0:
		return fmt.Sprintf("answered %d", d.Status) + bodyWords(d.Body)
	case d.Err != "":
		return "no answer: " + d.Err
	}
	return "no answer"
}

func bodyWords(b string) string {
	b = strings.TrimSpace(b)
	if b == "" {
		return ""
	}
	if len(b) > 80 {
		b = b[:80] + "…"
	}
	return " " + b
}

func naira(kobo int64) string { return bank.Naira(kobo) }

// pending is a delivery under way.
type pending struct {
	done chan struct{}
	d    delivery
}

// async delivers e in the background, giving up after timeout.
func (t *trial) async(e event, timeout time.Duration) *pending {
	p := &pending{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.d = t.prov.deliver(t.ctx, e, time.Time{}, false, timeout)
	}()
	return p
}

// answered reports whether p's delivery is over (answered or not).
func (p *pending) answered() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for p's delivery to be over, and notes it.
func (t *trial) wait(p *pending) delivery {
	<-p.done
	t.noteDelivery(p.d)
	return p.d
}

// send delivers e as the provider does: again, signed anew, while the
// answer is a 5xx or none, three times at most. It returns the last
// delivery.
func (t *trial) send(e event) delivery {
	var d delivery
	for range 3 {
		if d = t.deliver(e); d.Status != 0 && d.Status < 500 {
			break
		}
	}
	return d
}

// settle delivers e again, signed anew, until it is answered 2xx, at
// most three times: the last delivery.
func (t *trial) settle(e event) delivery {
	var d delivery
	for range 3 {
		if d = t.deliver(e); d.ok() {
			break
		}
	}
	return d
}
