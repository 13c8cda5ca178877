package bank

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zudojs/bank/idem"
)

// DB is what the bank's functions need: a pool, a connection or a
// transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Request is a validated transfer request: whole kobo, account numbers.
type Request struct {
	From, To, AmountKobo int64
}

// Receipt is the body of a successful transfer (201).
type Receipt struct {
	TransferID  int64 `json:"transferId"`
	From        int64 `json:"from"`
	To          int64 `json:"to"`
	AmountKobo  int64 `json:"amountKobo"`
	BalanceKobo int64 `json:"balanceKobo"`
}

// Problem is the body of a refusal: a machine-readable code and a
// message, the same type as idem's own refusals.
type Problem = idem.ProblemBody

// Outcome is the answer to a transfer request. A refusal is an ordinary
// outcome, not an error: errors are for things that went wrong.
type Outcome struct {
	Status  int
	Receipt *Receipt // when Status is 201
	Problem *Problem // otherwise
}

// Body is the outcome as JSON, the way the API sends it.
func (o Outcome) Body() []byte {
	var v any = o.Problem
	if o.Receipt != nil {
		v = o.Receipt
	}
	b, _ := json.Marshal(v)
	return b
}

// Label is the short form scenarios print: "transfer 1" or the error code.
func (o Outcome) Label() string {
	if o.Receipt != nil {
		return fmt.Sprintf("transfer %d", o.Receipt.TransferID)
	}
	return o.Problem.Code
}

func refuse(status int, code, format string, args ...any) Outcome {
	return Outcome{Status: status, Problem: &Problem{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// ParseRequest reads a JSON body such as {"from":1,"to":2,"amountKobo":1000000}.
// Accounts must be whole numbers and the amount a whole number of kobo
// above zero that fits in int64: 10.5, "100", 1e400 and 2^63 are all
// refused, never rounded or wrapped.
func ParseRequest(body []byte) (Request, *Outcome) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil || fields == nil || dec.More() {
		o := refuse(http.StatusBadRequest, "invalid_json", "the body must be one JSON object such as {\"from\":1,\"to\":2,\"amountKobo\":1000000}")
		return Request{}, &o
	}
	var r Request
	var okFrom, okTo, okAmount bool
	r.From, okFrom = wholeNumber(fields["from"], 1<<53-1)
	r.To, okTo = wholeNumber(fields["to"], 1<<53-1)
	r.AmountKobo, okAmount = wholeNumber(fields["amountKobo"], 1<<63-1)
	switch {
	case !okFrom || !okTo:
		o := refuse(http.StatusBadRequest, "invalid_account", "from and to must be account numbers")
		return r, &o
	case !okAmount || r.AmountKobo <= 0:
		o := refuse(http.StatusBadRequest, "invalid_amount", "amountKobo must be a whole number of kobo above 0")
		return r, &o
	case r.From == r.To:
		o := refuse(http.StatusUnprocessableEntity, "same_account", "an account cannot send money to itself")
		return r, &o
	}
	return r, nil
}

// wholeNumber accepts a JSON number (not a string) that is an integer of
// magnitude at most limit.
func wholeNumber(raw json.RawMessage, limit int64) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, false
	}
	if len(raw) > 400 { // far past any int64, in any notation
		return 0, false
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(n.String())
	if !ok || !r.IsInt() || r.Num().CmpAbs(big.NewInt(limit)) > 0 {
		return 0, false
	}
	return r.Num().Int64(), true
}

// Transfer moves money for the authenticated user, checking everything it
// can before the first write. Run it inside a transaction: if anything
// after the first write fails, the caller's rollback undoes it all.
func Transfer(ctx context.Context, tx DB, userID int64, body []byte) (Outcome, error) {
	r, refused := ParseRequest(body)
	if refused != nil {
		return *refused, nil
	}
	return Execute(ctx, tx, userID, r)
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

// Execute runs a validated request. See Transfer.
func Execute(ctx context.Context, tx DB, userID int64, r Request) (Outcome, error) {
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
		return refuse(http.StatusNotFound, "account_not_found", "account %d was not found", r.From), nil
	}
	if sender.Status != "active" {
		return refuse(http.StatusUnprocessableEntity, "account_not_active", "account %d is %s", r.From, sender.Status), nil
	}
	if recipient == nil || recipient.Status != "active" {
		return refuse(http.StatusUnprocessableEntity, "recipient_unavailable", "account %d cannot receive transfers", r.To), nil
	}

	// The balance check and the debit are one statement.
	var balance int64
	err = tx.QueryRow(ctx, DebitSQL, r.AmountKobo, r.From).Scan(&balance)
	if errors.Is(err, pgx.ErrNoRows) {
		return refuse(http.StatusUnprocessableEntity, "insufficient_funds", "the balance is too low for this transfer"), nil
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
	return Outcome{Status: http.StatusCreated, Receipt: &Receipt{
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
