package bank

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// Notice writes the SMS for a transfer into the outbox, in the transfer's
// own transaction: the message exists if and only if the transfer
// committed. Nothing is sent here.
func Notice(ctx context.Context, tx DB, r Receipt) error {
	_, err := tx.Exec(ctx, `INSERT INTO outbox (transfer_id, recipient, message)
		SELECT $1, split_part(sender.holder, ' ', 1), 'You sent ' || $2 || ' to ' || split_part(recipient.holder, ' ', 1)
		FROM accounts sender, accounts recipient WHERE sender.id = $3 AND recipient.id = $4`,
		r.TransferID, Naira(r.AmountKobo), r.From, r.To)
	if err != nil {
		return fmt.Errorf("writing the outbox: %w", err)
	}
	return nil
}

// Message is one outbox row on its way out.
type Message struct {
	ID         int64
	TransferID int64
	Recipient  string
	Text       string
}

// Key is the idempotency key the provider gets with the message: the same
// for every resend of one outbox row.
func (m Message) Key() string { return "outbox-" + strconv.FormatInt(m.ID, 10) }

// ErrOutboxEmpty means there is nothing left to send.
var ErrOutboxEmpty = errors.New("the outbox is empty")

// DeliverOne sends the oldest unsent message and marks it sent, in one
// transaction that holds the row. If the worker dies after sending and
// before the commit, the row stays unsent and is sent again, with the same
// key, by the next worker: the provider must dedupe on that key.
func DeliverOne(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, send func(context.Context, Message) error) (Message, error) {
	var m Message
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT id, transfer_id, recipient, message FROM outbox
			WHERE NOT sent ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&m.ID, &m.TransferID, &m.Recipient, &m.Text)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrOutboxEmpty
		}
		if err != nil {
			return err
		}
		if err := send(ctx, m); err != nil {
			return fmt.Errorf("sending message %d: %w", m.ID, err)
		}
		_, err = tx.Exec(ctx, "UPDATE outbox SET sent = true WHERE id = $1", m.ID)
		return err
	})
	return m, err
}

// Deposit credits money that arrived from outside (a provider's "payment
// received"), with its record. Run it in the transaction that records the
// event, so a redelivered event cannot credit twice.
func Deposit(ctx context.Context, tx DB, account, amountKobo int64, source string) error {
	if _, err := tx.Exec(ctx, "UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2", amountKobo, account); err != nil {
		return fmt.Errorf("crediting: %w", err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO deposits (account_id, amount_kobo, source) VALUES ($1, $2, $3)", account, amountKobo, source); err != nil {
		return fmt.Errorf("recording deposit: %w", err)
	}
	return nil
}

// Reward adds loyalty points: the effect of the rewards consumer.
func Reward(ctx context.Context, tx DB, account, points int64) error {
	_, err := tx.Exec(ctx, `INSERT INTO rewards (account_id, points) VALUES ($1, $2)
		ON CONFLICT (account_id) DO UPDATE SET points = rewards.points + excluded.points`, account, points)
	return err
}
