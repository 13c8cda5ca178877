package scenarios

import (
	"context"
	"errors"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
)

// NewKeyPerAttempt: the client makes a new key for every attempt, so every
// retry looks new to the server, exactly as if there were no keys.
var NewKeyPerAttempt = &lab.Mistake{
	Mistake: mistakes.Must("new-key-per-attempt"),
	Happens: "every retry looks new; a lost response leads to two transfers",
	Fix:     "one key per intent, made before the first attempt and reused on every retry",
	Why:     "the server tells a retry from a new request only by its key. With a new key on each attempt, the retry after the lost answer is a new intent to it, and it runs the transfer again.",
	Holds:   "the app makes the key once, when Ada taps Send, and sends it with every attempt: the retry finds the key completed and gets the stored answer back instead of a second transfer.",
	Blind:   twiceBlind,
	Explain: map[string]string{
		"a lost response, then a retry": "The server commits Ada's ₦10,000 transfer to Bola, and its answer is lost on the way back to the phone. The app retries.",
	},
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
			sent := "key " + keyName(key)
			switch {
			case attempt == 1:
			case broken:
				sent += ", a new one"
			default:
				sent += ", the same"
			}
			if errors.Is(err, errLostResponse) {
				lab.Say("attempt %d (%s): %v", attempt, sent, err)
				continue
			}
			if err != nil {
				return err
			}
			lab.Reply(r, "attempt %d (%s): %d %s%s", attempt, sent, r.Status, transferLabel(r.Body), replayedNote(r.Replayed))
		}
		lab.Balances(ctx, "")
		return nil
	},
}
