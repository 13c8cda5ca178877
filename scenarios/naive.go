package scenarios

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/zudojs/bank/scenarios/lab"
)

// The lesson opens with a transfer written the obvious way: three
// statements, one after the other, no transaction. The recipient is a
// typo, account 99. The credit matches no row and that is not an error;
// only the transfer record fails, on its foreign key, and by then the
// debit has happened. ₦10,000 leaves the bank.
var Naive = &lab.Scenario{
	Name:        "naive",
	Summary:     "three statements and no transaction: a failed transfer loses ₦10,000",
	Section:     "Partial failure",
	Fix:         "bank scenario atomic (the same three statements in one transaction)",
	ShowsBroken: []lab.Check{lab.TotalKept, lab.LedgerAgrees},
	Explain: map[string]string{
		"three statements": "What to watch: an UPDATE that matches no row is not an error in SQL, and with no transaction nothing undoes the debit when a later statement fails.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		lab.Say("Ada sends ₦10,000 to account 99, a typo: there is no account 99. Three statements, each committed on its own: debit Ada, credit account 99, record the transfer.")
		lab.Balances(ctx, "before:")
		lab.Intent("Ada's ₦10,000 to account 99", 1, 99, 1_000_000, 0)

		lab.Step("three statements")
		if err := naiveTransfer(ctx, lab, 1, 99, 1_000_000); err != nil {
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) {
				return err
			}
			lab.SayVerbatim("failed: %s", pgErr.Message)
			lab.Say("  (PostgreSQL's own message, SQLSTATE %s: the foreign key, the rule that a transfer's accounts must exist, refused account 99)", pgErr.Code)
		}
		lab.Balances(ctx, "after: ")
		return nil
	},
}

// naiveTransfer is BROKEN ON PURPOSE: each statement autocommits, so a
// failure after the debit leaves the money gone. The correct transfer is
// bank.Transfer, run in a transaction.
func naiveTransfer(ctx context.Context, lab *lab.Lab, from, to, amount int64) error {
	lab.Exec(ctx, "UPDATE accounts SET balance_kobo = balance_kobo - $1 WHERE id = $2", amount, from)
	credit, err := lab.DB.Exec(ctx, "UPDATE accounts SET balance_kobo = balance_kobo + $1 WHERE id = $2", amount, to)
	if err != nil {
		return err
	}
	lab.Say("credit changed %d rows, and did not fail", credit.RowsAffected())
	_, err = lab.DB.Exec(ctx, "INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES ($1, $2, $3)", from, to, amount)
	return err
}
