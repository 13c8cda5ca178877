package bank

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the bank's functions need: a pool, a connection or a
// transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Request is a transfer request: from one account to another, in whole
// kobo. How it arrived (a JSON body, a lesson's literal) is the caller's
// business; the rules it must meet are the bank's (see Validate).
type Request struct {
	From, To, AmountKobo int64
}

// Receipt is what a transfer that went through leaves behind.
type Receipt struct {
	TransferID  int64
	From, To    int64
	AmountKobo  int64
	BalanceKobo int64 // the sender's balance after the debit
}

// Code names a rule of the bank that refused a transfer. Codes are
// stable: callers match on them (the API maps each to its status), and
// transcripts print them.
type Code string

// The bank's refusals, in the order a transfer checks them.
const (
	InvalidAmount        Code = "invalid_amount"
	SameAccount          Code = "same_account"
	AccountNotFound      Code = "account_not_found"
	AccountNotActive     Code = "account_not_active"
	RecipientUnavailable Code = "recipient_unavailable"
	InsufficientFunds    Code = "insufficient_funds"
)

// Refusal is the bank saying no: which rule, and a message for people.
// It is an answer, not an error: a refused request is final and is
// answered the same way every time, while an error means something went
// wrong and the transaction must roll back.
type Refusal struct {
	Code    Code
	Message string
}

// String is the code and the message, for logs and error messages.
func (r Refusal) String() string { return string(r.Code) + ": " + r.Message }

// Outcome is the bank's answer to a transfer request: a receipt, or a
// refusal. Exactly one is set, except alongside an error, when neither is.
type Outcome struct {
	Receipt *Receipt
	Refusal *Refusal
}

func refuse(code Code, format string, args ...any) Outcome {
	return Outcome{Refusal: &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// Validate checks what the bank can tell from the request alone: an
// amount above zero, and two different accounts.
func (r Request) Validate() *Refusal {
	switch {
	case r.AmountKobo <= 0:
		return refuse(InvalidAmount, "amountKobo must be a whole number of kobo above 0").Refusal
	case r.From == r.To:
		return refuse(SameAccount, "an account cannot send money to itself").Refusal
	}
	return nil
}

// lockedAccount is what a transfer reads of an account it locks.
type lockedAccount struct {
	ID, Owner int64
	Status    string
}

// A transfer's statements, exported so that a benchmark can run the very
// same SQL without Go or HTTP (bank bench).
const (
	// LockAccountsSQL locks both accounts, lower id first: $1 from, $2 to.
	LockAccountsSQL = `SELECT id, owner_id, status FROM accounts
		WHERE id IN ($1::bigint, $2::bigint) ORDER BY id FOR UPDATE`
	// DebitSQL checks the balance and debits in one statement: $1 amount, $2 from.
	DebitSQL = `UPDATE accounts SET balance_kobo = balance_kobo - $1
		WHERE id = $2 AND balance_kobo >= $1 RETURNING balance_kobo`
	// CreditSQL credits the recipient: $1 amount, $2 to.
	CreditSQL = "UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2"
	// RecordSQL records the transfer: $1 from, $2 to, $3 amount.
	RecordSQL = "INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES ($1, $2, $3) RETURNING id"
)

// Transfer moves money for the authenticated user, checking everything it
// can before the first write. Run it inside a transaction: if anything
// after the first write fails, the caller's rollback undoes it all.
func Transfer(ctx context.Context, tx DB, userID int64, r Request) (Outcome, error) {
	if refused := r.Validate(); refused != nil {
		return Outcome{Refusal: refused}, nil
	}
	// Lock both accounts, lower id first. Every transfer takes its locks
	// in that one order, so two transfers in opposite directions queue
	// behind each other instead of each holding the row the other needs
	// (which PostgreSQL would end with a deadlock error). One round trip;
	// the checks below still come in the lesson's order.
	rows, err := tx.Query(ctx, LockAccountsSQL, r.From, r.To)
	if err != nil {
		return Outcome{}, fmt.Errorf("locking accounts: %w", err)
	}
	locked, err := pgx.CollectRows(rows, pgx.RowToStructByPos[lockedAccount])
	if err != nil {
		return Outcome{}, fmt.Errorf("locking accounts: %w", err)
	}
	var sender, recipient *lockedAccount
	for i := range locked {
		if locked[i].ID == r.From {
			sender = &locked[i]
		} else {
			recipient = &locked[i]
		}
	}
	if sender == nil || sender.Owner != userID {
		// A stranger's account and a missing one look the same.
		return refuse(AccountNotFound, "account %d was not found", r.From), nil
	}
	if sender.Status != "active" {
		return refuse(AccountNotActive, "account %d is %s", r.From, sender.Status), nil
	}
	if recipient == nil || recipient.Status != "active" {
		return refuse(RecipientUnavailable, "account %d cannot receive transfers", r.To), nil
	}

	// The balance check and the debit are one statement.
	var balance int64
	err = tx.QueryRow(ctx, DebitSQL, r.AmountKobo, r.From).Scan(&balance)
	if errors.Is(err, pgx.ErrNoRows) {
		return refuse(InsufficientFunds, "the balance is too low for this transfer"), nil
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("debit: %w", err)
	}
	if _, err := tx.Exec(ctx, CreditSQL, r.AmountKobo, r.To); err != nil {
		return Outcome{}, fmt.Errorf("credit: %w", err)
	}
	var id int64
	if err := tx.QueryRow(ctx, RecordSQL,
		r.From, r.To, r.AmountKobo).Scan(&id); err != nil {
		return Outcome{}, fmt.Errorf("recording transfer: %w", err)
	}
	return Outcome{Receipt: &Receipt{
		TransferID: id, From: r.From, To: r.To, AmountKobo: r.AmountKobo, BalanceKobo: balance,
	}}, nil
}

// LedgerKeySchema gives the ledger its own copy of the idempotency key,
// unique: the last line of defence (the outline's "ledger entry unique on
// the key too"). Should a second code path or a bug bypass the key store,
// the database still refuses a second transfer for the same key.
const LedgerKeySchema = `ALTER TABLE transfers ADD COLUMN idempotency_key text;
CREATE UNIQUE INDEX transfers_idempotency_key ON transfers (idempotency_key)`

// StampKey writes the request's key on its transfer row, in the
// transfer's transaction: with LedgerKeySchema, a second transfer under
// the same key fails with a unique violation (23505) and rolls back.
func StampKey(ctx context.Context, tx DB, transferID int64, key string) error {
	_, err := tx.Exec(ctx, "UPDATE transfers SET idempotency_key = $2 WHERE id = $1", transferID, key)
	return err
}
