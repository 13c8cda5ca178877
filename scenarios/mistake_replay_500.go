package scenarios

import (
	"context"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
	"github.com/zudojs/bank/scenarios/lab/mistakes/onpurpose"
)

// Replay500: a brief outage (Ada's account row held by a maintenance job
// past the handler's lock timeout) makes the first delivery fail with
// 500. Stored as the key's answer, the 500 comes back on every retry, long
// after the outage is over.
var Replay500 = &lab.Mistake{
	Mistake: mistakes.Must("replay-500"),
	Happens: "a temporary outage becomes a permanent failure for that key",
	Fix:     "an unexpected error releases the key; the retry runs and succeeds",
	Why:     "a 500 says the server failed, not that the request was wrong. Stored under the key as if it were the answer, it is replayed to every retry: the transfer can never be made with this key, long after the outage is over.",
	Holds:   "an unexpected error releases the key (its row is deleted) instead of storing an answer, so the retry after the outage claims the key again and makes the transfer. Only final answers, a success or a refusal, are stored and replayed.",
	Blind:   neverBlind,
	Steps: func(ctx context.Context, lab *lab.Lab, broken bool) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1).BrokenIf(broken)
		session := lab.Session(ctx, "SET lock_timeout = '"+serverLockTimeout+"'")
		var h api.Handler = &api.Transfers{DB: session, Keys: lab.Keys(&idem.Store{})}
		if broken {
			h = &onpurpose.StoredKeys{DB: session, Mistake: onpurpose.Replay500, Observe: lab.KeySteps()}
		}
		var failed error
		server := lab.Server("server", answersErrors(h, &failed))
		send := func(label string) {
			r := server.Send(ctx, api.Call{UserID: 1, Key: "outage-key-0000000001", Body: []byte(adaPaysBola), Now: lab.Clock.Now()})
			lab.Reply(r, "%s: %d %s%s", label, r.Status, transferLabel(r.Body), replayedNote(r.Replayed))
		}
		lab.Step("a brief outage")
		lab.Say("Ada's app sends ₦10,000 to Bola, and tries again with the same key after a failure.")
		release := lab.HoldRow(ctx, 1)
		var timeout string
		lab.Must(session.QueryRow(ctx, "SHOW lock_timeout").Scan(&timeout))
		lab.Say("a maintenance job holds Ada's account row; the server waits %s for a row lock (its lock_timeout), then gives up and answers 500.", timeout)
		send("attempt 1")
		release()
		lab.Say("the outage is over")
		send("attempt 2")
		send("attempt 3")
		lab.Balances(ctx, "")
		return nil
	},
}
