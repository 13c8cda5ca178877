package scenarios

import (
	"context"
	"errors"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// The same lost response, now with an idempotency key that the phone makes
// once, before the first attempt, and sends with every retry. The second
// delivery finds the key completed and replays the first answer, transfer
// id included. The body comes back as PostgreSQL's jsonb keeps it, with
// its own key order (to, from, amountKobo, ...), as the lesson points out.
var RetrySafe = &lab.Scenario{
	Name:     "retry-safe",
	Summary:  "the same lost response with an idempotency key: the retry is replayed, money moves once",
	Section:  "The lost response, again",
	Prevents: "the second ₦10,000 of bank scenario lost-response",
	Explain: map[string]string{
		"retry with one key": "The key is made once per intent, outside the retry loop.\nThe server stores the response with the transfer, in the same transaction, and replays it.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1)
		server := lab.Server("server", &api.Transfers{DB: lab.DB, Keys: lab.Keys(&idem.Store{})})
		server.LoseNext(1) // the first answer is lost after the commit
		intent := api.Call{UserID: 1, Key: lab.NewKey(), Body: []byte(adaPaysBola), Now: lab.Clock.Now()}

		lab.Step("retry with one key")
		lab.Say("the same tap and lost answer, now with an idempotency key: an id the app makes once, when Ada taps Send, and sends with every retry. The server stores its answer under the key, in the transfer's own transaction")
		for attempt := 1; attempt <= 3; attempt++ {
			resp, err := server.Handle(ctx, intent)
			if errors.Is(err, errLostResponse) {
				lab.Say("attempt %d: %v", attempt, err)
				continue
			}
			if err != nil {
				return err
			}
			lab.Reply(resp, "attempt %d: %d%s %s", attempt, resp.Status, replayedNote(resp.Replayed), nodeObject(resp.Body))
			break
		}
		lab.Balances(ctx, "")
		return nil
	},
}
