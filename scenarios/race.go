package scenarios

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// The balance race. "Read the balance, compare, then write" has a gap:
// two transfers from Bola's ₦15,000 both read ₦15,000, both decide
// ₦10,000 is fine, and both debit. The second debit would leave ₦-5,000;
// the CHECK constraint on the balance is the net that refuses it. The
// lesson's transfer closes the gap instead: it locks the sender's row
// (FOR UPDATE), so the second transfer waits for the first, and it checks
// and debits in one statement, so the second is refused as insufficient.
var Race = &lab.Scenario{
	Name:     "race",
	Summary:  "two transfers read the same balance: the CHECK constraint catches the overdraft; FOR UPDATE makes them take turns",
	Section:  "Think before you move money: enough money, atomically",
	Prevents: "a balance below zero from two transfers that both read ₦15,000",
	Explain: map[string]string{
		"broken: read, check, then write":            "Two sessions each read Bola's balance, decide, and then debit. Nothing stops both from reading the same ₦15,000.",
		"safe: lock the row, check and debit as one": "The lab's transfer code (bank.Transfer, a Go function) locks the sender's row with SELECT ... FOR UPDATE, then debits with UPDATE ... WHERE balance_kobo >= amount.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		lab.Intent("Ada's two top-ups of Bola, ₦10,000 each", 1, 2, 1_000_000, 2)
		lab.Intent("the two races' ₦10,000 from Bola: one each gets through", 2, 1, 1_000_000, 2)
		a, b := lab.Session(ctx), lab.Session(ctx)
		topUp := func() { transferOnItsOwn(ctx, lab, bank.Request{From: 1, To: 2, AmountKobo: 1_000_000}, nil) }

		lab.Part("broken: read, check, then write")
		topUp()
		lab.Say("to set the race up, Ada tops Bola's account up with ₦10,000: Bola has %s", bolaHas(ctx, lab))
		lab.Say("then two transfers of ₦10,000 from Bola to Ada, A and B, run at once:")
		txA, txB := begin(ctx, lab, a), begin(ctx, lab, b)
		for _, s := range []struct {
			name string
			tx   pgx.Tx
		}{{"A", txA}, {"B", txB}} {
			var balance int64
			lab.Arrow("transfer "+s.name, postgres, "BEGIN; read Bola's balance", "")
			lab.Must(s.tx.QueryRow(ctx, "SELECT balance_kobo FROM accounts WHERE id = 2").Scan(&balance))
			lab.Arrow(postgres, "transfer "+s.name, bank.Naira(balance), "")
			lab.Say("transfer %s reads Bola's balance: %s; sending Ada ₦10,000 is fine", s.name, bank.Naira(balance))
		}
		lab.Arrow("transfer A", postgres, "debit Bola ₦10,000, credit Ada, record; COMMIT", "")
		lab.Must(checkedDebit(ctx, txA))
		lab.Must(txA.Commit(ctx))
		lab.Arrow(postgres, "transfer A", "committed", "")
		lab.Say("transfer A debits ₦10,000 and commits: Bola has %s", bolaHas(ctx, lab))
		lab.Arrow("transfer B", postgres, "debit Bola ₦10,000", "")
		err := checkedDebit(ctx, txB)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			return fmt.Errorf("the second debit should have been refused, got %w", gotten(err))
		}
		txB.Rollback(ctx)
		lab.Arrow(postgres, "transfer B", "refused: "+pgErr.Code+", the CHECK on the balance: ROLLBACK", "refused")
		lab.Say("transfer B debits ₦10,000 too, which would leave %s: %s", bank.Naira(balanceOf(ctx, lab, 2)-1_000_000), pgErr.Message)
		lab.Say("  (SQLSTATE %s: the CHECK constraint is the last line of defence)", pgErr.Code)
		lab.Say("the harm: the code let both transfers through its own check, and only the CHECK constraint stopped the overdraft; without it Bola would now have %s. And transfer B ends in a database error, not a clean 422 insufficient_funds (behind an API, a 500).", bank.Naira(balanceOf(ctx, lab, 2)-1_000_000))

		lab.Part("safe: lock the row, check and debit as one")
		topUp()
		lab.Say("Ada tops Bola up with ₦10,000 again: Bola has %s; the same two transfers run.", bolaHas(ctx, lab))
		txA, txB = begin(ctx, lab, a), begin(ctx, lab, b)
		bolaPaysAda := []byte(`{"from": 2, "to": 1, "amountKobo": 1000000}`)
		lab.Arrow("transfer A", postgres, "BEGIN; lock Bola's row (FOR UPDATE); debit if ₦10,000 is there", "")
		first, err := api.Transfer(ctx, txA, 2, bolaPaysAda)
		lab.Must(err)
		lab.Arrow(postgres, "transfer A", "debited: "+transferLabel(first.Body)+", not committed", "")
		lab.Say("transfer A locks Bola's row and debits, inside its transaction: %s, not yet committed", transferLabel(first.Body))
		type result struct {
			resp idem.Response
			err  error
		}
		second := make(chan result, 1)
		lab.Arrow("transfer B", postgres, "BEGIN; lock Bola's row (FOR UPDATE)", "")
		lab.Go(func() {
			resp, err := api.Transfer(ctx, txB, 2, bolaPaysAda)
			second <- result{resp, err}
		})
		lab.WaitBlocked(ctx, b, a)
		lab.Arrow(postgres, "transfer B", "wait: A holds Bola's row", "in-progress")
		lab.Say("transfer B waits for Bola's row (pg_blocking_pids, PostgreSQL's list of the sessions blocking one, shows B blocked by A)")
		lab.Arrow("transfer A", postgres, "COMMIT", "")
		lab.Must(txA.Commit(ctx))
		r := <-second
		lab.Must(r.err)
		lab.Must(txB.Commit(ctx))
		lab.Arrow(postgres, "transfer B", fmt.Sprintf("A committed; B reads the new balance: %d %s", r.resp.Status, transferLabel(r.resp.Body)), "refused")
		lab.Reply(r.resp, "A commits; B runs on the new balance: %d %s", r.resp.Status, transferLabel(r.resp.Body))
		lab.Balances(ctx, "")
		return nil
	},
}

// begin opens a transaction on a session.
func begin(ctx context.Context, lab *lab.Lab, session *pgx.Conn) pgx.Tx {
	tx, err := session.Begin(ctx)
	lab.Must(err)
	return tx
}

// checkedDebit is BROKEN ON PURPOSE: it writes on a decision made from an
// earlier read (the CHECK constraint is all that stands in its way).
func checkedDebit(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, "UPDATE accounts SET balance_kobo = balance_kobo - 1000000 WHERE id = 2"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "UPDATE accounts SET balance_kobo = balance_kobo + 1000000 WHERE id = 1"); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, "INSERT INTO transfers (from_account, to_account, amount_kobo) VALUES (2, 1, 1000000)")
	return err
}

// balanceOf reads an account's committed balance.
func balanceOf(ctx context.Context, lab *lab.Lab, id int64) int64 {
	return lab.Count(ctx, "SELECT balance_kobo FROM accounts WHERE id = $1", id)
}

func bolaHas(ctx context.Context, lab *lab.Lab) string { return bank.Naira(balanceOf(ctx, lab, 2)) }
