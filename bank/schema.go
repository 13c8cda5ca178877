// Package bank is the lesson's bank, written correctly: the schema and
// seed, naira formatting, the balances line, and the transfer with every
// rule of the lesson. Code that is wrong on purpose lives in the scenario
// that teaches it, never here. The bank knows no HTTP: it takes a Request
// and answers with a Receipt or a Refusal; bank/api owns the wire.
package bank

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Schema is the lesson's database. Amounts are whole kobo (100 kobo = ₦1);
// the CHECK constraints are the last line of defence against a bug.
const Schema = `
CREATE TABLE accounts (
  id integer PRIMARY KEY,
  owner_id integer NOT NULL,
  holder text NOT NULL,
  status text NOT NULL CHECK (status IN ('active', 'frozen', 'closed')),
  balance_kobo bigint NOT NULL CHECK (balance_kobo >= 0)
);
CREATE TABLE transfers (
  id serial PRIMARY KEY,
  from_account integer NOT NULL REFERENCES accounts (id),
  to_account integer NOT NULL REFERENCES accounts (id),
  amount_kobo bigint NOT NULL CHECK (amount_kobo > 0)
);
`

// Flows is the money that crosses the bank's edge, and what it owes
// outside: deposits arrive (a provider's "payment received"), payouts
// leave through a payment rail, and messages wait in the outbox.
const Flows = `
CREATE TABLE deposits (
  id serial PRIMARY KEY,
  account_id integer NOT NULL REFERENCES accounts (id),
  amount_kobo bigint NOT NULL CHECK (amount_kobo > 0),
  source text NOT NULL
);
CREATE TABLE payouts (
  id serial PRIMARY KEY,
  account_id integer NOT NULL REFERENCES accounts (id),
  amount_kobo bigint NOT NULL CHECK (amount_kobo > 0),
  reference text NOT NULL UNIQUE,
  status text NOT NULL DEFAULT 'sending' CHECK (status IN ('sending', 'paid'))
);
CREATE TABLE outbox (
  id serial PRIMARY KEY,
  transfer_id integer NOT NULL REFERENCES transfers (id),
  recipient text NOT NULL,
  message text NOT NULL,
  sent boolean NOT NULL DEFAULT false
);
CREATE TABLE rewards (
  account_id integer PRIMARY KEY REFERENCES accounts (id),
  points bigint NOT NULL
);
`

// Account is one row of the seed.
type Account struct {
	ID, Owner   int64
	Holder      string
	Status      string
	BalanceKobo int64
}

// Seed is the bank every scenario starts from: ₦75,000 in total.
var Seed = []Account{
	{1, 1, "Ada Obi", "active", 5_000_000},
	{2, 2, "Bola Ade", "active", 500_000},
	{3, 3, "Chidi Eze", "frozen", 2_000_000},
}

// SeedTotal is the money in the bank; no transfer may change it.
func SeedTotal() int64 {
	var total int64
	for _, a := range Seed {
		total += a.BalanceKobo
	}
	return total
}

// SchemaText is the text of everything SetupAll makes, tables and seed:
// a template database built from other text is never reused.
func SchemaText() string { return Schema + Flows + fmt.Sprint(Seed) }

// SetupAll creates the bank's tables, the lesson's two and those of the
// flows around them (outbox, payouts, rewards, ...), and the seed. (The
// idempotency keys are idem's: whoever needs both composes them, as
// bank/api does.)
func SetupAll(ctx context.Context, db *pgx.Conn) error {
	if err := SetupCore(ctx, db); err != nil {
		return err
	}
	if _, err := db.Exec(ctx, Flows); err != nil {
		return fmt.Errorf("creating schema: %w", err)
	}
	return nil
}

// CoreSchemaText is the text of what SetupCore makes.
func CoreSchemaText() string { return Schema + fmt.Sprint(Seed) }

// SetupCore creates the lesson's two tables, accounts and transfers,
// seeded with Ada, Bola and Chidi, and nothing else: the database a
// learner's own server starts from (bank grade), where the server makes
// its own key table.
func SetupCore(ctx context.Context, db *pgx.Conn) error {
	if _, err := db.Exec(ctx, Schema); err != nil {
		return fmt.Errorf("creating schema: %w", err)
	}
	for _, a := range Seed {
		if _, err := db.Exec(ctx, "INSERT INTO accounts VALUES ($1, $2, $3, $4, $5)",
			a.ID, a.Owner, a.Holder, a.Status, a.BalanceKobo); err != nil {
			return fmt.Errorf("seeding %s: %w", a.Holder, err)
		}
	}
	return nil
}

// AddAccounts adds n accounts for load runs (bench, torture): ids 4 and
// up, all owned by user 1, so that token-ada may send from any of them,
// each with plenty of money. Ada, Bola and Chidi (1 to 3) are untouched.
func AddAccounts(ctx context.Context, db DB, n int) error {
	_, err := db.Exec(ctx, `INSERT INTO accounts (id, owner_id, holder, status, balance_kobo)
		SELECT g, 1, 'Bench ' || g, 'active', 1000000000000 FROM generate_series(4, $1::int + 3) g`, n)
	return err
}
