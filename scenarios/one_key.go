package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// One key from the phone to the rail. Ada pays ₦10,000 to an account at
// another bank. The app makes the key once, when the confirm screen opens;
// the API stores it with its answer; the payout's ledger row carries a
// rail reference derived from it; and the rail, asked about that
// reference after a failed call, tells the bank whether to call again. A
// retry at any hop moves the money once. Two branches of the rail: it
// paid but its answer was lost (the enquiry says so: no retry), or the
// request never reached it (the enquiry says so: retry, same reference).
var OneKey = &lab.Scenario{
	Name:     "one-key",
	Summary:  "one key from the phone through the API and the ledger to the rail: a retry at any hop pays once",
	Section:  "Idempotency, end to end: one key from the phone to the rail",
	Prevents: "a payout made twice when an answer is lost between any two hops",
	Explain: map[string]string{
		"the rail paid, but its answer was lost": "The enquiry finds the reference: the bank does not call again.",
		"the request never reached the rail":     "The enquiry does not find it: the bank calls again with the same reference.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		rail := lab.Rail()
		keys := lab.Keys(&idem.Store{})
		lab.Say("Ada pays money out to accounts at other banks: the bank debits her and sends the money through a rail, the network that moves money between banks, which names each payment by a reference and pays a reference once.")
		var total int64
		var paid []string
		for _, c := range []struct {
			part       string
			amount     int64
			lose, drop int
		}{
			{"the rail paid, but its answer was lost", 1_000_000, 1, 0},
			{"the request never reached the rail", 500_000, 0, 1},
		} {
			lab.Part(c.part)
			lab.Say("Ada pays %s out to an account at another bank.", bank.Naira(c.amount))
			key := lab.NewKey()
			ref := "rail-" + key[:8]
			lab.Effect(fmt.Sprintf("Ada's %s payout, paid by the rail", bank.Naira(c.amount)), 1, func(context.Context) (int, error) { return rail.Payments(ref), nil })
			lab.Say("the app makes the key when the confirm screen opens, once for the payment, so that tapping Send and every retry carry the same key: %s", key)
			rail.LoseAnswers(c.lose)
			rail.DropRequests(c.drop)
			body := []byte(fmt.Sprintf(`{"from": 1, "amountKobo": %d, "reference": %q}`, c.amount, ref))
			server := lab.Server("server", api.HandlerFunc(func(ctx context.Context, call api.Call) (idem.Response, error) {
				req := idem.Request{UserID: call.UserID, Key: call.Key, Method: "POST", Path: "/payouts", Body: call.Body, Now: call.Now}
				return keys.Do(ctx, lab.DB, req, func(ctx context.Context, tx pgx.Tx) (idem.Response, error) {
					lab.Say("the API claims the key; the payout's ledger row gets reference %s, made from the key, so a retry of the key makes the same reference even before the row commits (bank scenario rails stores its reference first instead)", ref)
					res, err := bank.Payout(ctx, tx, rail, 1, c.amount, ref, 3)
					if err != nil {
						return idem.Response{}, err
					}
					switch {
					case res.Enquiries == 0:
						lab.Say("the bank calls the rail with %s: paid", ref)
					case res.Attempts == 1:
						lab.Say("the bank calls the rail with %s: no answer; a status enquiry (asking the rail whether it has that reference) finds it, so no second call", ref)
					default:
						lab.Say("the bank calls the rail with %s: no answer; a status enquiry (asking the rail whether it has that reference) does not find it, so it calls again with the same reference: %d calls, paid", ref, res.Attempts)
					}
					return idem.Response{Status: 201, Body: []byte(fmt.Sprintf(`{"reference": %q, "paid": true}`, ref))}, nil
				})
			})).At("/payouts")
			call := api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.Now()}
			server.LoseNext(1)
			if _, err := server.Handle(ctx, call); !errors.Is(err, errLostResponse) {
				return fmt.Errorf("the API's first answer should have been lost, got %w", gotten(err))
			}
			lab.Say("the API's answer is lost on the way to the phone")
			r := server.Send(ctx, call)
			lab.Reply(r, "the app retries with the same key: %d%s %s", r.Status, replayedNote(r.Replayed), r.Body)
			lab.Say("the rail paid %s %s", ref, bank.Times(rail.Payments(ref)))
			total += c.amount
			paid = append(paid, bank.Naira(c.amount))
		}
		lab.Say("%s left the bank through the rail (%s), so its total is now %s less.", bank.Naira(total), strings.Join(paid, " + "), bank.Naira(total))
		lab.Balances(ctx, "")
		return nil
	},
}
