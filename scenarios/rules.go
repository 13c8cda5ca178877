package scenarios

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// The correct transfer, bank.Transfer, against every rule the lesson
// reasons through: ownership, frozen accounts on either side, a missing
// recipient, too little money, and half a kobo. Each request gets its own
// transaction. One goes through; six are refused, each for its own reason.
var Rules = &lab.Scenario{
	Name:     "rules",
	Summary:  "the correct transfer against every rule: one succeeds, six are refused",
	Section:  "The transfer, done properly",
	Prevents: "transfers the bank's rules forbid: each refusal is an answer, not a crash",
	Explain: map[string]string{
		"seven requests": "Refusals are answers (a status and a code), not errors: every check runs before the first write, so a refused request writes nothing.\nAn account that is not yours gets 404, as one that does not exist would: a stranger learns nothing of which accounts exist.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		requests := []struct {
			label string
			user  int64
			body  string
		}{
			{"ok", 1, adaPaysBola},
			{"not your account", 2, `{"from": 1, "to": 2, "amountKobo": 100}`},
			{"frozen sender", 3, `{"from": 3, "to": 1, "amountKobo": 100}`},
			{"frozen recipient", 1, `{"from": 1, "to": 3, "amountKobo": 100}`},
			{"no such recipient", 1, `{"from": 1, "to": 99, "amountKobo": 100}`},
			{"too much", 2, `{"from": 2, "to": 1, "amountKobo": 9000000}`},
			{"half a kobo", 1, `{"from": 1, "to": 2, "amountKobo": 10.5}`},
		}
		lab.Intent("ok", 1, 2, 1_000_000, 1)
		lab.Intent("not your account", 1, 2, 100, 0)
		lab.Intent("too much", 2, 1, 9_000_000, 0)

		lab.Step("seven requests")
		lab.Say("seven requests, each in its own transaction. Accounts: 1 Ada's, 2 Bola's, 3 Chidi's (frozen); there is no account 99. Amounts are in kobo: 100 kobo = ₦1.")
		lab.Say("who sends what: ok, Ada ₦10,000 to Bola; not your account, Bola ₦1 from Ada's account; frozen sender, Chidi ₦1 from his own; frozen recipient, Ada ₦1 to Chidi; no such recipient, Ada ₦1 to account 99; too much, Bola ₦90,000, having ₦5,000; half a kobo, Ada 10.5 kobo to Bola.")
		for _, r := range requests {
			var resp idem.Response
			err := pgx.BeginFunc(ctx, lab.DB, func(tx pgx.Tx) (err error) {
				resp, err = api.Transfer(ctx, tx, r.user, []byte(r.body))
				return err
			})
			if err != nil {
				return fmt.Errorf("%s: %w", r.label, err)
			}
			lab.Reply(resp, "%-18s %d %s", r.label, resp.Status, transferLabel(resp.Body))
		}
		lab.Balances(ctx, "")
		return nil
	},
}
