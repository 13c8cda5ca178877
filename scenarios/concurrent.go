package scenarios

import (
	"context"
	"errors"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
)

// A double tap: two copies of one request at the same moment. On
// PostgreSQL with a pool, the second copy looks at the key while the first
// is still inside its transaction, finds it in progress and gets 409 with
// Retry-After; a later retry gets the replay. The lab holds the first copy
// inside its transaction with a hook until the second has its answer, so
// the interleaving is the same on every run. Then a storm: 50 copies of
// one intent at once, and exactly one transfer.
var Concurrent = &Scenario{
	Name:     "concurrent",
	Summary:  "a double tap and a storm of 50 copies: one claims the key, the rest get 409, money moves once",
	Section:  "Two copies at the same moment",
	Prevents: "a double tap moving money twice: only one copy can claim the key",
	Explain: map[string]string{
		"a double tap": "Only one INSERT of (user, key) can succeed. The first copy is held after its transfer,\nbefore its commit; the second finds the key in progress and is told to retry.",
		"a storm":      "50 copies start together. The one that claims the key is held until the other 49 have\ntheir answer, so the counts below do not depend on timing.",
	},
	Run: func(ctx context.Context, lab *Lab) error {
		handler := &api.Transfers{DB: lab.DB, Keys: &idem.Store{}}
		tap := api.Call{UserID: 1, Key: "double-tap-0000000001", Body: []byte(adaPaysBola), Now: lab.Clock.Now()}
		lab.Intent("the double tap", 1, 2, 1_000_000, 1)
		lab.Intent("the storm's intent", 1, 2, 100_000, 1)

		lab.Step("a double tap")
		first := hold(&handler.Hooks.BeforeStore, func() (idem.Response, error) { return handler.Handle(ctx, tap) })
		second, err := handler.Handle(ctx, tap)
		r, ferr := first.finish()
		if err := errors.Join(err, ferr); err != nil {
			return err
		}
		lab.Reply(r, "first:  %d %s %s", r.Status, replayedWord(r.Replayed), errorOrOK(r.Body))
		lab.Reply(second, "second: %d %s %s (Retry-After: %s)", second.Status, replayedWord(second.Replayed), errorOrOK(second.Body), api.RetryAfter(second.Status))
		later, err := handler.Handle(ctx, tap)
		if err != nil {
			return err
		}
		lab.Reply(later, "later:  %d %s", later.Status, replayedWord(later.Replayed))
		if err := lab.Balances(ctx, ""); err != nil {
			return err
		}

		lab.Step("a storm")
		const copies = 50
		call := api.Call{UserID: 1, Key: "storm-of-copies-0000001", Body: []byte(`{"from": 1, "to": 2, "amountKobo": 100000}`), Now: lab.Clock.Now()}
		counts, err := storm(ctx, handler, call, copies)
		if err != nil {
			return err
		}
		lab.Say("storm of %d copies: %s", copies, counts)
		again, err := handler.Handle(ctx, call)
		if err != nil {
			return err
		}
		lab.Reply(again, "storm, later: %d %s", again.Status, replayedWord(again.Replayed))
		return lab.Balances(ctx, "after the storm:")
	},
}
