package scenarios

import (
	"context"
	"fmt"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// What a key protects against, and what it refuses: reordered JSON is the
// same request (a replay); the same key with another amount is a client
// bug (422); keys belong to their user, so Bola's identical key string is
// his own; no key at all is refused; and a refusal is an answer, stored
// and replayed like a success.
var KeyMisuse = &lab.Scenario{
	Name:     "key-misuse",
	Summary:  "reordered JSON, a reused key, another user's key, no key, a replayed refusal",
	Section:  "Misuse: a reused key, another user, no key",
	Prevents: "bank mistake no-fingerprint and bank mistake unscoped-keys",
	Explain: map[string]string{
		"misuse": "The fingerprint is a hash of the request written one canonical way (its JSON fields sorted by name), stored with the key. In the table, \"keys reordered\" means the request's JSON fields (from, to, amountKobo), not its idempotency key.\nIdempotency keys are stored per user: (user_id, key) is the primary key.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		handler := lab.Server("server", &api.Transfers{DB: lab.DB, Keys: lab.Keys(&idem.Store{})})
		const key, broke = "tap-2026-09-24-0001", "tap-2026-09-24-0002"
		lab.Intent("Ada's first request", 1, 2, 1_000_000, 1)
		lab.Intent("the reused key's ₦50,000", 1, 2, 5_000_000, 0)
		lab.Intent("Bola's own request", 2, 1, 100_000, 1)
		lab.Intent("Bola's ₦90,000", 2, 1, 9_000_000, 0)
		requests := []struct {
			label string
			user  int64
			key   string
			body  string
		}{
			{"first request", 1, key, adaPaysBola},
			{"same, keys reordered", 1, key, `{"amountKobo": 1000000, "to": 2, "from": 1}`},
			{"same key, other amount", 1, key, `{"from": 1, "to": 2, "amountKobo": 5000000}`},
			{"other user, same key", 2, key, `{"from": 2, "to": 1, "amountKobo": 100000}`},
			{"no key", 1, "", `{"from": 1, "to": 2, "amountKobo": 100}`},
			{"too much", 2, broke, `{"from": 2, "to": 1, "amountKobo": 9000000}`},
			{"too much, retried", 2, broke, `{"from": 2, "to": 1, "amountKobo": 9000000}`},
		}

		lab.Step("misuse")
		lab.Say("seven requests: Ada's ₦10,000 to Bola under the idempotency key %s; the same with its JSON fields in another order; the same key for ₦50,000; Bola's ₦1,000 to Ada under the same key string; a request with no key; and Bola's ₦90,000 (more than he has) under his key %s, sent twice.", key, broke)
		for _, r := range requests {
			resp, err := handler.Handle(ctx, api.Call{UserID: r.user, Key: r.key, Body: []byte(r.body), Now: lab.Clock.Now()})
			if err != nil {
				return fmt.Errorf("%s: %w", r.label, err)
			}
			lab.Reply(resp, "%-26s %d %s %s", r.label, resp.Status, replayedWord(resp.Replayed), errorOrOK(resp.Body))
		}
		lab.Say("a refusal is a final answer, as a success is: the server stored Bola's 422 with his key, in the same transaction a transfer would have used, and his retry got it replayed rather than checked again. One request gets one answer: a retry never turns into a transfer the first attempt was refused (after a deposit, say). Only an unexpected error releases the key, so that a retry runs afresh.")
		lab.Balances(ctx, "")
		return nil
	},
}
