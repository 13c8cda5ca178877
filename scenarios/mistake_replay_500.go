package scenarios

import (
	"context"
	"net/http"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/wrong"
)

// Replay500: a brief outage (Ada's account row held by a maintenance job
// past the handler's lock timeout) makes the first delivery fail with
// 500. Stored as the key's answer, the 500 comes back on every retry, long
// after the outage is over.
var Replay500 = &lab.Mistake{
	Name:    "replay-500",
	Summary: "replaying stored 500s",
	Happens: "a temporary outage becomes a permanent failure for that key",
	Fix:     "an unexpected error releases the key; the retry runs and succeeds",
	Blind:   neverBlind,
	Steps: func(ctx context.Context, lab *lab.Lab, broken bool) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1).BrokenIf(broken)
		server := lab.Session(ctx, "SET lock_timeout = '200ms'")
		var h api.Handler = &api.Transfers{DB: server, Keys: lab.Keys(&idem.Store{})}
		if broken {
			h = &wrong.StoredKeys{DB: server, Mistake: wrong.Replay500}
		}
		h = lab.Server("server", h)
		send := func(label string) {
			r, err := h.Handle(ctx, api.Call{UserID: 1, Key: "outage-key-0000000001", Body: []byte(adaPaysBola), Now: lab.Clock.Now()})
			if err != nil {
				r = idem.Problem(http.StatusInternalServerError, "internal_error", "the transfer did not happen; retry with the same Idempotency-Key")
			}
			lab.Reply(r, "%s: %d %s%s", label, r.Status, transferLabel(r.Body), replayedNote(r.Replayed))
		}
		lab.Step("a brief outage")
		release := lab.HoldRow(ctx, 1)
		lab.Say("a maintenance job holds Ada's account row")
		send("attempt 1")
		release()
		lab.Say("the outage is over")
		send("attempt 2")
		send("attempt 3")
		lab.Balances(ctx, "")
		return nil
	},
}
