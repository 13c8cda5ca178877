package scenarios

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/scenarios/lab"
)

// Ada pays someone at another bank through a payment rail. The rail takes
// the payment and then its answer times out. Retrying with a new
// reference looks like a new payment to the rail, which pays again. The
// safe way keeps one reference per attempt family, asks the rail about it
// before retrying, and retries only a reference the rail never saw; and
// the ledger's unique reference refuses a second payout row for it.
var Rails = &lab.Scenario{
	Name:    "rails",
	Summary: "a payout to another bank times out after the rail accepted it: a new reference pays twice",
	Section: "Outbound to rails: one reference per attempt family",
	Fix:     "the safe part above: one reference per payout, and a status enquiry before retrying",
	Blind:   map[lab.Check]string{lab.TotalKept: "the second payment happened at the rail, outside the bank's books", lab.LedgerAgrees: "the bank recorded the payout once"},
	Explain: map[string]string{
		"broken: a new reference per retry, for Ada's ₦10,000 payout":       "The rail pays, then its answer is lost. The retry carries a fresh reference.",
		"safe: one reference and a status enquiry, for Ada's ₦5,000 payout": "The reference is stored with the payout before the first call. After a timeout the bank asks the rail whether it has that reference, and retries only if it has not.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		rail := lab.Rail()
		paid := func(prefix string) func(context.Context) (int, error) {
			return func(context.Context) (int, error) { return rail.Payments(prefix), nil }
		}
		lab.Say("Ada pays money out to accounts at other banks: the bank debits her, records the payout, and sends the money through a payment rail, the network that moves money between banks. The rail names each payment by a reference and pays a reference once.")

		lab.Part("broken: a new reference per retry, for Ada's ₦10,000 payout")
		lab.Effect("Ada's ₦10,000 payout, paid by the rail", 1, paid("naive-")).ShownBroken()
		rail.LoseAnswers(1)
		payoutNewReferenceEachTry(ctx, lab, rail)
		lab.Say("the rail paid %s for one payout", bank.Times(rail.Payments("naive-")))

		lab.Part("safe: one reference and a status enquiry, for Ada's ₦5,000 payout")
		lab.Effect("Ada's ₦5,000 payout, paid by the rail", 1, paid("po-0002"))
		rail.LoseAnswers(1)
		lab.Say("the bank debits Ada ₦5,000 and records the payout with reference po-0002, then calls the rail")
		res, err := bank.Payout(ctx, lab.DB, rail, 1, 500_000, "po-0002", 3)
		lab.Must(err)
		lab.Say("the bank called the rail %s and, when the answer was lost, asked it %s whether it had po-0002 (a status enquiry): it had, so the bank did not call again", bank.Times(res.Attempts), bank.Times(res.Enquiries))
		lab.Say("the rail paid %s for one payout", bank.Times(rail.Payments("po-0002")))

		// A second code path (a resend job) records the same payout again.
		lab.Arrow("resend job", postgres, "INSERT payout po-0002 again", "")
		_, err = lab.DB.Exec(ctx, "INSERT INTO payouts (account_id, amount_kobo, reference) VALUES (1, 500000, 'po-0002')")
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			return fmt.Errorf("a second payout row for po-0002 should be refused, got %w", gotten(err))
		}
		lab.Arrow(postgres, "resend job", "refused: "+pgErr.Code+" unique reference", "refused")
		lab.Say("a resend job, a second code path, tries to record payout po-0002 again: %s (SQLSTATE %s): the ledger's unique reference is the last line of defence", pgErr.Message, pgErr.Code)
		var recorded int64
		lab.Query(ctx, "SELECT COALESCE(sum(amount_kobo), 0) FROM payouts", nil, &recorded)
		lab.Say("the bank recorded %s of payouts, so its total is now %s less; the rail paid out %s, %s more than the bank recorded", bank.Naira(recorded), bank.Naira(recorded), bank.Naira(rail.Paid()), bank.Naira(rail.Paid()-recorded))
		lab.Balances(ctx, "")
		return nil
	},
}

// payoutNewReferenceEachTry is BROKEN ON PURPOSE: the debit and payout row
// are written once, but every retry of the rail call gets a fresh
// reference, so the rail cannot know it is the same payment.
func payoutNewReferenceEachTry(ctx context.Context, lab *lab.Lab, rail *lab.Rail) {
	lab.Say("the bank debits Ada ₦10,000 and records the payout once, then calls the rail with a new reference on each try")
	lab.Exec(ctx, `BEGIN;
		UPDATE accounts SET balance_kobo = balance_kobo - 1000000 WHERE id = 1;
		INSERT INTO payouts (account_id, amount_kobo, reference) VALUES (1, 1000000, 'naive-1');
		COMMIT`)
	for attempt := 1; attempt <= 3; attempt++ {
		ref := fmt.Sprintf("naive-%d", attempt)
		lab.Exec(ctx, "UPDATE payouts SET reference = $1 WHERE reference LIKE 'naive-%'", ref)
		if err := rail.Pay(ctx, ref, 1_000_000); err != nil {
			lab.Say("attempt %d with reference %s: %v", attempt, ref, err)
			continue
		}
		lab.Say("attempt %d with reference %s: paid", attempt, ref)
		break
	}
}
