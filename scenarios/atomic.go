package scenarios

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/zudojs/bank/scenarios/lab"
)

// The same three statements and the same typo, now inside one
// transaction. The foreign key still fails, and the rollback undoes the
// debit with it: all or nothing, the A in ACID.
var Atomic = &lab.Scenario{
	Name:     "atomic",
	Summary:  "the same three statements in one transaction: the failure undoes the debit",
	Section:  "Partial failure",
	Prevents: "the vanished ₦10,000 of bank scenario naive",
	Explain: map[string]string{
		"one transaction": "What to watch: the INSERT will fail on its foreign key inside the transaction, and PostgreSQL then undoes every statement since BEGIN, the debit included: all or nothing, the A (atomicity) of ACID.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		lab.Intent("Ada's ₦10,000 to account 99", 1, 99, 1_000_000, 0)

		lab.Step("one transaction")
		lab.Say("Ada sends the same ₦10,000 to account 99, which does not exist, now in one transaction: BEGIN, the same three statements (debit Ada, credit account 99, record the transfer), COMMIT.")
		err := pgx.BeginFunc(ctx, lab.DB, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "UPDATE accounts SET balance_kobo = balance_kobo - $1 WHERE id = $2", 1_000_000, 1); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2", 1_000_000, 99); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES ($1, $2, $3)", 1, 99, 1_000_000)
			return err
		})
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			lab.SayVerbatim("failed: %s", pgErr.Message)
			lab.Say("  (PostgreSQL's own message, SQLSTATE %s: the foreign key, the rule that a transfer's accounts must exist, refused account 99)", pgErr.Code)
		} else if err != nil {
			return err
		}
		lab.Balances(ctx, "after:")
		return nil
	},
}
