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
		"retry with one key": "What to watch: the retry carries the first attempt's key, so the server finds it completed and replays the stored answer; nothing runs twice.\nThe key is made once per intent, outside the retry loop: a new key per attempt protects nothing (bank mistake new-key-per-attempt).",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1)
		server := lab.Server("server", &api.Transfers{DB: lab.DB, Keys: lab.Keys(&idem.Store{})})
		server.LoseNext(1) // the first answer is lost after the commit
		intent := api.Call{UserID: 1, Key: lab.NewKey(), Body: []byte(adaPaysBola), Now: lab.Clock.Now()}

		lab.Say("Ada taps Send once: ₦10,000 to Bola. As in bank scenario lost-response, the server makes the transfer and its answer is lost on the way back; but now the app sends an idempotency key, an id it makes once, when Ada taps, and sends with every retry.")
		lab.Say("the server keeps keys in its key store, a table in PostgreSQL: it stores its answer under the key in the transfer's own transaction, and answers a later request with that key from it (a replay) instead of transferring again.")
		lab.Step("retry with one key")
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
			lab.Say("%s", nodeObjectNote(resp.Body))
			break
		}
		lab.Balances(ctx, "")
		return nil
	},
}
