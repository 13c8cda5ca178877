package scenarios

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// A rewards service consumes "transfer made" events from a queue and gives
// a point per ₦1,000 sent. The queue delivers at least once: a consumer
// that crashes after its effect and before its acknowledgement gets the
// message again. Without a record of processed events the points are
// given twice; with one, written in the same transaction as the points,
// the redelivery is acknowledged and does nothing.
var Consumer = &lab.Scenario{
	Name:    "consumer",
	Summary: "a queue redelivers an event after the consumer crashed before acknowledging it",
	Section: "Event consumers: processed_events in the effect's transaction",
	Fix:     "the safe part above: processed_events written in the effect's transaction",
	Blind:   map[lab.Check]string{lab.TotalKept: "reward points are not money", lab.LedgerAgrees: "reward points are not in the books"},
	Explain: map[string]string{
		"broken: no record of processed events": "The consumer commits the points, then crashes before acknowledging the message.",
		"safe: processed_events":                "The event id is recorded in the transaction that gives the points.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		queue := lab.Queue()
		points := func(account, per int64) func(context.Context) (int, error) {
			return lab.Counting("SELECT COALESCE((SELECT points FROM rewards WHERE account_id = $1), 0) / $2", account, per)
		}
		send := func(user int64, req bank.Request) {
			lab.Must(pgx.BeginFunc(ctx, lab.DB, func(tx pgx.Tx) error {
				r := receipt(lab)(bank.Transfer(ctx, tx, user, req))
				msg, _ := json.Marshal(r)
				queue.Publish(fmt.Sprintf("transfer-%d", r.TransferID), string(msg))
				lab.Say("%s's transfer %d (%s to %s) made; event transfer-%d published", holder[r.From], r.TransferID, bank.Naira(r.AmountKobo), holder[r.To], r.TransferID)
				return nil
			}))
		}

		lab.Say("a rewards service, the consumer, reads \"transfer made\" events from a queue and gives a point per ₦1,000 sent. The queue delivers each message until the consumer acknowledges it (says it is done with it), so a consumer that crashes before acknowledging gets the message again.")
		lab.Part("broken: no record of processed events")
		lab.Intent("Ada's ₦10,000 transfer", 1, 2, 1_000_000, 1)
		lab.Effect("Ada's reward for her ₦10,000 transfer (10 points, one per ₦1,000 sent)", 1, points(1, 10)).ShownBroken()
		send(1, bank.Request{From: 1, To: 2, AmountKobo: 1_000_000})
		consume(ctx, lab, queue, "points only", true, rewardWithoutRecord)
		consume(ctx, lab, queue, "points only", false, rewardWithoutRecord)

		lab.Part("safe: processed_events")
		lab.Say("processed_events is a table of the event ids the consumer has applied: it records the id in the same transaction as the points, and skips an id it already holds.")
		lab.Intent("Bola's ₦2,000 transfer", 2, 1, 200_000, 1)
		lab.Effect("Bola's reward for his ₦2,000 transfer (2 points)", 1, points(2, 2))
		send(2, bank.Request{From: 2, To: 1, AmountKobo: 200_000})
		safe := func(ctx context.Context, tx pgx.Tx, id string, r bank.Receipt) (bool, error) {
			first, err := idem.FirstDelivery(ctx, tx, idem.Delivery{Consumer: "rewards", EventID: id, Now: lab.Clock.Now()})
			if err != nil || !first {
				return false, err
			}
			return true, bank.Reward(ctx, tx, r.From, r.AmountKobo/100_000)
		}
		consume(ctx, lab, queue, "with processed_events", true, safe)
		consume(ctx, lab, queue, "with processed_events", false, safe)
		var ada, bola int64
		lab.Query(ctx, "SELECT COALESCE((SELECT points FROM rewards WHERE account_id = 1), 0), COALESCE((SELECT points FROM rewards WHERE account_id = 2), 0)", nil, &ada, &bola)
		lab.Say("points: Ada %d (for ₦10,000 sent), Bola %d (for ₦2,000 sent)", ada, bola)
		lab.Balances(ctx, "")
		return nil
	},
}

type effect func(ctx context.Context, tx pgx.Tx, id string, r bank.Receipt) (applied bool, err error)

// consume runs one consumer over the pending messages; crash makes it die
// after each effect commits and before it acknowledges.
func consume(ctx context.Context, lab *lab.Lab, q *lab.Queue, name string, crash bool, apply effect) {
	for _, id := range q.Pending() {
		var r bank.Receipt
		lab.Must(json.Unmarshal([]byte(q.Body(id)), &r))
		var applied bool
		lab.Must(pgx.BeginFunc(ctx, lab.DB, func(tx pgx.Tx) (err error) {
			applied, err = apply(ctx, tx, id, r)
			return err
		}))
		what := "effect already applied, nothing done"
		if applied {
			what = fmt.Sprintf("+%d points for %s", r.AmountKobo/100_000, holder[r.From])
		}
		if crash {
			lab.Say("consumer (%s) got %s: %s; crashed before acknowledging", name, id, what)
			return
		}
		q.Ack(id)
		lab.Say("consumer (%s) got %s again: %s; acknowledged", name, id, what)
	}
}

// rewardWithoutRecord is BROKEN ON PURPOSE: it applies every delivery.
func rewardWithoutRecord(ctx context.Context, tx pgx.Tx, _ string, r bank.Receipt) (bool, error) {
	return true, bank.Reward(ctx, tx, r.From, r.AmountKobo/100_000)
}
