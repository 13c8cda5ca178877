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
			return func(ctx context.Context) (int, error) {
				var p int64
				err := lab.DB.QueryRow(ctx, "SELECT COALESCE((SELECT points FROM rewards WHERE account_id = $1), 0)", account).Scan(&p)
				return int(p / per), err
			}
		}
		send := func(user int64, r bank.Request) error {
			return pgx.BeginFunc(ctx, lab.DB, func(tx pgx.Tx) error {
				o, err := bank.Transfer(ctx, tx, user, r)
				if err != nil || o.Receipt == nil {
					return fmt.Errorf("transfer: %v %v", err, o.Refusal)
				}
				msg, _ := json.Marshal(o.Receipt)
				queue.Publish(fmt.Sprintf("transfer-%d", o.Receipt.TransferID), string(msg))
				lab.Say("transfer %d made; event transfer-%d published", o.Receipt.TransferID, o.Receipt.TransferID)
				return nil
			})
		}

		lab.Part("broken: no record of processed events")
		lab.Intent("Ada's ₦10,000 transfer", 1, 2, 1_000_000, 1)
		lab.Effect("Ada's 10 points for it", 1, points(1, 10)).ShownBroken()
		if err := send(1, bank.Request{From: 1, To: 2, AmountKobo: 1_000_000}); err != nil {
			return err
		}
		if err := consume(ctx, lab, queue, "points only", true, rewardWithoutRecord); err != nil {
			return err
		}
		if err := consume(ctx, lab, queue, "points only", false, rewardWithoutRecord); err != nil {
			return err
		}

		lab.Part("safe: processed_events")
		lab.Intent("Bola's ₦2,000 transfer", 2, 1, 200_000, 1)
		lab.Effect("Bola's 2 points for it", 1, points(2, 2))
		if err := send(2, bank.Request{From: 2, To: 1, AmountKobo: 200_000}); err != nil {
			return err
		}
		safe := func(ctx context.Context, tx pgx.Tx, id string, r bank.Receipt) (bool, error) {
			first, err := idem.FirstDelivery(ctx, tx, idem.Delivery{Consumer: "rewards", EventID: id, Now: lab.Clock.Now()})
			if err != nil || !first {
				return false, err
			}
			return true, bank.Reward(ctx, tx, r.From, r.AmountKobo/100_000)
		}
		if err := consume(ctx, lab, queue, "with processed_events", true, safe); err != nil {
			return err
		}
		if err := consume(ctx, lab, queue, "with processed_events", false, safe); err != nil {
			return err
		}
		var ada, bola int64
		lab.DB.QueryRow(ctx, "SELECT COALESCE((SELECT points FROM rewards WHERE account_id = 1), 0), COALESCE((SELECT points FROM rewards WHERE account_id = 2), 0)").Scan(&ada, &bola)
		lab.Say("points: Ada %d (for ₦10,000 sent), Bola %d (for ₦2,000 sent)", ada, bola)
		return lab.Balances(ctx, "")
	},
}

type effect func(ctx context.Context, tx pgx.Tx, id string, r bank.Receipt) (applied bool, err error)

// consume runs one consumer over the pending messages; crash makes it die
// after each effect commits and before it acknowledges.
func consume(ctx context.Context, lab *lab.Lab, q *lab.Queue, name string, crash bool, apply effect) error {
	for _, id := range q.Pending() {
		body := q.Body(id)
		var r bank.Receipt
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			return err
		}
		var applied bool
		err := pgx.BeginFunc(ctx, lab.DB, func(tx pgx.Tx) (err error) {
			applied, err = apply(ctx, tx, id, r)
			return err
		})
		if err != nil {
			return err
		}
		what := "effect already applied, nothing done"
		if applied {
			what = fmt.Sprintf("+%d points for account %d", r.AmountKobo/100_000, r.From)
		}
		if crash {
			lab.Say("consumer (%s) got %s: %s; crashed before acknowledging", name, id, what)
			return nil
		}
		q.Ack(id)
		lab.Say("consumer (%s) got %s again: %s; acknowledged", name, id, what)
	}
	return nil
}

// rewardWithoutRecord is BROKEN ON PURPOSE: it applies every delivery.
func rewardWithoutRecord(ctx context.Context, tx pgx.Tx, _ string, r bank.Receipt) (bool, error) {
	return true, bank.Reward(ctx, tx, r.From, r.AmountKobo/100_000)
}
