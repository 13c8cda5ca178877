package scenarios

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/scenarios/lab"
)

// A transfer must also send an SMS, and the database cannot un-send one.
// Sent inside the transaction, the SMS goes out even when the commit then
// fails. Sent after the commit, it is lost if the server dies first. The
// outbox writes the message in the transfer's own transaction; a worker
// sends it and marks it sent. A worker that dies between the two sends it
// again, and the provider, given the outbox row's id as idempotency key,
// delivers it once.
var Outbox = &lab.Scenario{
	Name:    "outbox",
	Summary: "an SMS per transfer: sending it inside the transaction, or after the commit, goes wrong; the outbox delivers it once",
	Section: "Side effects outside the database",
	Fix:     "the safe part above: the message written in the transfer's transaction, sent with its own key",
	Blind:   map[lab.Check]string{lab.TotalKept: "an SMS is not money", lab.LedgerAgrees: "an SMS is not in the books"},
	Explain: map[string]string{
		"broken: send inside the transaction": "The SMS is sent before COMMIT. The server's connection to PostgreSQL then dies, and the transfer rolls back.",
		"broken: send after the commit":       "The transfer commits, then the server dies before it sends the SMS.",
		"safe: the outbox":                    "The outbox is a table of messages to send. The transfer and its outbox row (the SMS to send) commit together; a worker, a separate process, sends what the outbox holds. Worker 1 sends, then its connection dies before it marks the row sent; worker 2 sends again with the same key.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		sms := lab.SMS()
		delivered := func(text string) func(context.Context) (int, error) {
			return func(context.Context) (int, error) { return sms.Count(text), nil }
		}

		lab.Say("each transfer must also send Ada an SMS, \"You sent ... to Bola\", through an SMS provider; a rollback cannot un-send an SMS.")
		lab.Part("broken: send inside the transaction")
		lab.Intent("the ₦10,000 transfer whose commit failed", 1, 2, 1_000_000, 0)
		lab.Effect("the SMS for the failed ₦10,000 transfer", 0, delivered("Ada: You sent ₦10,000 to Bola")).ShownBroken()
		rolledBack := sendInsideTransaction(ctx, lab, lab.Session(ctx), sms)
		lab.Balances(ctx, "")

		lab.Part("broken: send after the commit")
		lab.Intent("the ₦2,000 transfer", 1, 2, 200_000, 1)
		lab.Effect("the SMS for the ₦2,000 transfer", 1, delivered("Ada: You sent ₦2,000 to Bola")).ShownBroken()
		lab.Arrow("server", postgres, "BEGIN; transfer ₦2,000 1→2; COMMIT", "")
		id := transferOnItsOwn(ctx, lab, bank.Request{From: 1, To: 2, AmountKobo: 200_000}, nil)
		lab.Say("transfer %d (₦2,000 to Bola) committed; the server crashed before sending its SMS", id)

		lab.Part("safe: the outbox")
		lab.Intent("the ₦5,000 transfer", 1, 2, 500_000, 1)
		lab.Effect("the SMS for the ₦5,000 transfer", 1, delivered("Ada: You sent ₦5,000 to Bola"))
		lab.Say("the outbox is a table: the transfer's own transaction writes the SMS into it, and a worker, a separate process, sends what it holds, each with the row's id as the provider's idempotency key, and marks it sent.")
		lab.Arrow("server", postgres, "BEGIN; transfer ₦5,000 1→2 + outbox row; COMMIT", "")
		transferOnItsOwn(ctx, lab, bank.Request{From: 1, To: 2, AmountKobo: 500_000}, func(tx pgx.Tx, r bank.Receipt) error {
			lab.Say("transfer %d (%s to Bola) and its outbox message committed together", r.TransferID, bank.Naira(r.AmountKobo))
			return bank.Notice(ctx, tx, r)
		})
		worker1 := lab.Session(ctx)
		_, err := bank.DeliverOne(ctx, worker1, func(ctx context.Context, m bank.Message) error {
			lab.Arrow("worker 1", postgres, fmt.Sprintf("BEGIN; take unsent message %d", m.ID), "")
			sms.SendAs("worker 1", m.Key(), m.Recipient, m.Text)
			lab.Say("worker 1 sent message %d (key %s), then its connection died before marking it sent", m.ID, m.Key())
			lab.Arrow("worker 1", postgres, "crash: its session ends; the message stays unsent", "error")
			return lab.KillSession(ctx, worker1)
		})
		if err == nil {
			return errors.New("worker 1 should not have been able to mark the message sent")
		}
		for {
			m, err := bank.DeliverOne(ctx, lab.DB, func(ctx context.Context, m bank.Message) error {
				lab.Arrow("worker 2", postgres, fmt.Sprintf("BEGIN; take unsent message %d", m.ID), "")
				if sms.SendAs("worker 2", m.Key(), m.Recipient, m.Text) {
					lab.Say("worker 2 sent message %d: delivered", m.ID)
				} else {
					lab.Say("worker 2 sent message %d again: the provider already had key %s, no second SMS", m.ID, m.Key())
				}
				return nil
			})
			if errors.Is(err, bank.ErrOutboxEmpty) {
				lab.Arrow("worker 2", postgres, "take the next unsent message: none", "")
				lab.Say("worker 2: the outbox is empty")
				break
			}
			lab.Must(err)
			lab.Arrow("worker 2", postgres, fmt.Sprintf("mark message %d sent; COMMIT", m.ID), "")
		}
		lab.Say("SMS delivered for the ₦5,000 transfer: %d", sms.Count("Ada: You sent ₦5,000 to Bola"))
		var standing string
		lab.Query(ctx, "SELECT string_agg(id::text, ' and ' ORDER BY id) FROM transfers", nil, &standing)
		lab.Say("transfers standing: %s; the ₦10,000 one (id %d) was rolled back", standing, rolledBack)
		lab.Balances(ctx, "")
		return nil
	},
}

// sendInsideTransaction is BROKEN ON PURPOSE: the SMS leaves before the
// commit, and the commit then fails. It returns the id the transfer took
// before its rollback.
func sendInsideTransaction(ctx context.Context, lab *lab.Lab, app *pgx.Conn, sms *lab.SMSProvider) int64 {
	tx, err := app.Begin(ctx)
	lab.Must(err)
	lab.Arrow("server", postgres, "BEGIN; transfer ₦10,000 1→2", "")
	r := receipt(lab)(bank.Transfer(ctx, tx, 1, bank.Request{From: 1, To: 2, AmountKobo: 1_000_000}))
	sms.Send("", "Ada", fmt.Sprintf("You sent %s to Bola", bank.Naira(r.AmountKobo)))
	lab.Say("SMS sent: \"You sent ₦10,000 to Bola\" (before COMMIT)")
	lab.Must(lab.KillSession(ctx, app))
	if tx.Commit(ctx) == nil {
		lab.Must(errors.New("the commit should have failed"))
	}
	lab.Arrow("server", postgres, "COMMIT: the connection was lost; rolled back", "error")
	lab.Say("COMMIT failed: the connection to the database was lost; the transfer rolled back")
	lab.Say("SMS delivered for a transfer that never happened: %d", sms.Count("Ada: You sent ₦10,000 to Bola"))
	return r.TransferID
}

// transferOnItsOwn makes one transfer in a transaction of its own, with
// also (when not nil) in the same transaction, and returns its id.
func transferOnItsOwn(ctx context.Context, lab *lab.Lab, req bank.Request, also func(pgx.Tx, bank.Receipt) error) int64 {
	var id int64
	lab.Must(pgx.BeginFunc(ctx, lab.DB, func(tx pgx.Tx) error {
		r := receipt(lab)(bank.Transfer(ctx, tx, 1, req))
		id = r.TransferID
		if also == nil {
			return nil
		}
		return also(tx, r)
	}))
	return id
}
