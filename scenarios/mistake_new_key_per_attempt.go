package scenarios

import (
	"context"
	"errors"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// NewKeyPerAttempt: the client makes a new key for every attempt, so every
// retry looks new to the server, exactly as if there were no keys.
var NewKeyPerAttempt = &lab.Mistake{
	Name:    "new-key-per-attempt",
	Summary: "a new key for every attempt",
	Happens: "every retry looks new; a lost response leads to two transfers",
	Fix:     "one key per intent, made before the first attempt and reused on every retry",
	Blind:   twiceBlind,
	Steps: func(ctx context.Context, lab *lab.Lab, broken bool) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1).BrokenIf(broken)
		h := lab.Server("server", &api.Transfers{DB: lab.DB, Keys: lab.Keys(&idem.Store{})})
		h.LoseNext(1) // the first answer is lost after the commit
		lab.Step("a lost response, then a retry")
		key := lab.NewKey()
		for attempt := 1; attempt <= 2; attempt++ {
			if broken {
				key = lab.NewKey() // BROKEN ON PURPOSE: the key is made per attempt
			}
			r, err := h.Handle(ctx, api.Call{UserID: 1, Key: key, Body: []byte(adaPaysBola), Now: lab.Clock.Now()})
			if errors.Is(err, errLostResponse) {
				lab.Say("attempt %d: %v", attempt, err)
				continue
			}
			if err != nil {
				return err
			}
			lab.Reply(r, "attempt 2: %d %s%s", r.Status, transferLabel(r.Body), replayedNote(r.Replayed))
		}
		lab.Balances(ctx, "")
		return nil
	},
}
