package scenarios

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// A payment provider tells the bank, by webhook, that money arrived for a
// customer. Providers deliver at least once: the same event again, two
// copies at the same moment, and sometimes a second event (another id)
// for the same change. Crediting on every delivery credits four times.
// The safe handler records the event (by id, and by object and type) in
// the transaction that credits, and does nothing for one it has seen.
var Webhook = &lab.Scenario{
	Name:    "webhook",
	Summary: "a provider delivers one \"payment received\" event three times, two at once, plus a twin event",
	Section: "Inbound webhooks: dedupe on the provider's event id",
	Fix:     "the safe part above: the event's id recorded in the credit's transaction",
	Blind:   map[lab.Check]string{lab.TotalKept: "every credit was booked as a deposit", lab.LedgerAgrees: "every credit was booked as a deposit"},
	Explain: map[string]string{
		"broken: credit every delivery":          "Each delivery credits the account, records a deposit, and answers 200.",
		"safe: record the event with the credit": "processed_events has the provider's event id as its key, and (object, type) unique: object is the payment the event is about, type what happened to it (payment.succeeded).\nThe insert and the credit share one transaction; a copy arriving meanwhile waits for it.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		credits := func(source string) func(context.Context) (int, error) {
			return lab.Counting("SELECT count(*) FROM deposits WHERE source = $1", source)
		}

		lab.Say("a payment provider tells the bank that money arrived for a customer by webhook: an HTTP request it sends to the bank, once per event, each event with its own id. It delivers at least once: the same event again, two copies at once, and sometimes a second event, with another id, for the same payment.")
		lab.Part("broken: credit every delivery")
		lab.Effect("payment pay_77 (₦5,000 to Bola) credited", 1, credits("pay_77")).ShownBroken()
		broken := func(e providerEvent) (string, error) { return creditEveryDelivery(ctx, lab, e) }
		deliverFourWays(ctx, lab, broken, "evt_1001", "evt_1002", "pay_77", 2, 500_000)

		lab.Part("safe: record the event with the credit")
		lab.Say("the handler records each event in processed_events, by its id and by its payment and type, in the same transaction as the credit, and answers 200 without crediting an event already recorded.")
		lab.Effect("payment pay_78 (₦3,000 to Ada) credited", 1, credits("pay_78"))
		safe := func(e providerEvent) (outcome string, err error) {
			err = pgx.BeginFunc(ctx, lab.DB, func(tx pgx.Tx) error {
				first, err := idem.FirstDelivery(ctx, tx, idem.Delivery{Consumer: "provider-webhook", EventID: e.id, ObjectID: e.object, Type: "payment.succeeded", Now: lab.Clock.Now()})
				if err != nil || !first {
					outcome = "ignored"
					return err
				}
				outcome = "credited"
				return bank.Deposit(ctx, tx, e.account, e.amount, e.object)
			})
			return outcome, err
		}
		deliverFourWays(ctx, lab, safe, "evt_2001", "evt_2002", "pay_78", 1, 300_000)
		lab.Balances(ctx, "")
		return nil
	},
}

type providerEvent struct {
	id, object      string
	account, amount int64
}

// deliverFourWays delivers an event once, then twice at the same moment,
// then a twin event with another id for the same payment.
func deliverFourWays(ctx context.Context, lab *lab.Lab, handle func(providerEvent) (string, error), id, twin, object string, account, amount int64) {
	e := providerEvent{id, object, account, amount}
	what := fmt.Sprintf("%s, %s for %s", object, bank.Naira(amount), holder[account])
	lab.Arrow(provider, bankLane, fmt.Sprintf("POST %s (%s)", id, what), "")
	out, err := handle(e)
	lab.Must(err)
	lab.Arrow(bankLane, provider, "200 "+out, "")
	lab.Say("delivery 1 of %s (%s): %s", id, what, out)
	var wg sync.WaitGroup
	answers := make(chan string, 2)
	errs := make(chan error, 2)
	lab.Arrow(provider, bankLane, fmt.Sprintf("POST %s twice, at the same moment", id), "")
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := handle(e)
			answers <- out
			errs <- err
		}()
	}
	wg.Wait()
	close(answers)
	close(errs)
	for err := range errs {
		lab.Must(err)
	}
	tally := lab.Tally(answers)
	lab.Arrow(bankLane, provider, "200 "+tally, "")
	lab.Say("deliveries 2 and 3 of %s, at the same moment: %s", id, tally)
	lab.Arrow(provider, bankLane, fmt.Sprintf("POST %s (%s again)", twin, object), "")
	out, err = handle(providerEvent{twin, object, account, amount})
	lab.Must(err)
	lab.Arrow(bankLane, provider, "200 "+out, "")
	lab.Say("%s, a second event (another id) for the same payment %s: %s", twin, object, out)
}

// The webhook's lanes.
const provider, bankLane = "payment provider", "bank's webhook"

// creditEveryDelivery is BROKEN ON PURPOSE: it trusts every delivery to
// be the only one.
func creditEveryDelivery(ctx context.Context, lab *lab.Lab, e providerEvent) (string, error) {
	err := pgx.BeginFunc(ctx, lab.DB, func(tx pgx.Tx) error {
		return bank.Deposit(ctx, tx, e.account, e.amount, e.object)
	})
	return "credited", err
}
