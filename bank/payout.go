package bank

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Rail is a payment rail or processor that moves money to other banks.
// Like any remote call, Pay can fail after the rail accepted the payment.
type Rail interface {
	Pay(ctx context.Context, reference string, amountKobo int64) error
	// Seen answers a status enquiry: has the rail received this reference?
	Seen(ctx context.Context, reference string) (bool, error)
}

// PayoutResult says how a payout went.
type PayoutResult struct {
	Attempts  int  // calls to Pay
	Enquiries int  // calls to Seen
	Paid      bool // the rail has the payment
}

// Payout sends money out of account through the rail, once. The debit and
// the payout row, with its reference, commit before the first call: the
// reference names the attempt family and never changes. When a call
// fails, a status enquiry decides: a reference the rail has seen is paid
// (no retry); one it has not seen is retried with the same reference.
// The reference is unique in the ledger, the last line of defence.
func Payout(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
	DB
}, rail Rail, account, amountKobo int64, reference string, attempts int) (PayoutResult, error) {
	var res PayoutResult
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE accounts SET balance_kobo = balance_kobo - $1 WHERE id = $2 AND balance_kobo >= $1", amountKobo, account)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errors.New("insufficient funds")
		}
		_, err = tx.Exec(ctx, "INSERT INTO payouts (account_id, amount_kobo, reference) VALUES ($1, $2, $3)", account, amountKobo, reference)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("recording payout %s: %w", reference, err)
	}
	for res.Attempts < attempts {
		res.Attempts++
		if err := rail.Pay(ctx, reference, amountKobo); err == nil {
			res.Paid = true
			break
		}
		res.Enquiries++
		seen, err := rail.Seen(ctx, reference)
		if err != nil {
			continue // cannot tell: ask again on the next round, never pay blind
		}
		if seen {
			res.Paid = true
			break
		}
	}
	if !res.Paid {
		return res, fmt.Errorf("payout %s: the rail did not confirm it; it stays 'sending' for a later status enquiry", reference)
	}
	_, err = db.Exec(ctx, "UPDATE payouts SET status = 'paid' WHERE reference = $1", reference)
	return res, err
}
