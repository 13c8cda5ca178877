package scenarios

import (
	"context"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
	"github.com/zudojs/bank/scenarios/lab/mistakes/onpurpose"
)

// NoFencing: the lock expires, a retry takes the key over and transfers;
// then the first server, only slow, finishes too. Without a fencing token
// nothing stops it, and both transfers commit.
var NoFencing = &lab.Mistake{
	Mistake: mistakes.Must("no-fencing"),
	Happens: "a slow server and the retry that took over both commit their transfer",
	Fix:     "storing the response needs the current lock id; the slow server's transaction rolls back",
	Why:     "server A's lock expired while it was only slow, and a retry took the key over and made the transfer. When A wakes up it stores its answer without checking that the lock is still its own, so its transfer commits too.",
	Holds:   "each claim gets its own lock id, the fencing token, and storing the answer needs the current one: A's lock id no longer matches, the store refuses, and A's whole transaction, its transfer included, rolls back.",
	Blind:   twiceBlind,
	Steps: func(ctx context.Context, lab *lab.Lab, broken bool) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1).BrokenIf(broken)
		body := []byte(adaPaysBola)
		const key = "crash-demo-00000000001"
		keys := lab.Keys(&idem.Store{LockTTL: lessonLock})
		var a, b api.Handler
		var slow *func(context.Context) // the hook where server A goes quiet
		if broken {
			storeA := &onpurpose.LockStore{DB: lab.DB, Mistake: onpurpose.NoFencing, TTL: lessonLock, Observe: lab.KeySteps()}
			a, b, slow = storeA, &onpurpose.LockStore{DB: lab.DB, Mistake: onpurpose.NoFencing, TTL: lessonLock, Observe: lab.KeySteps()}, &storeA.Hooks.AfterClaim
		} else {
			fenced := &api.Transfers{DB: lab.DB, Keys: keys}
			a, b, slow = fenced, &api.Transfers{DB: lab.DB, Keys: keys}, &fenced.Hooks.AfterClaim
		}
		A, B := lab.Server("server A", a), lab.Server("server B", b)
		lab.Step("a slow server and a takeover")
		lab.Say("Ada's ₦10,000 to Bola reaches server A, which claims its key: a lock of 30 s. A stalls; the app's retry reaches server B at 31 s, when the lock has expired.")
		held := lab.Hold(slow, func() (idem.Response, error) {
			return A.Handle(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(0)})
		})
		lab.Say("server A claimed the key and went quiet")
		r := B.Send(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(31 * time.Second)})
		lab.Reply(r, "retry after 31 s: %d %s", r.Status, transferLabel(r.Body))
		if _, err := held.Finish(); err != nil {
			lab.Say("server A wakes up: %v", err)
		} else {
			lab.Say("server A wakes up: its transfer committed too")
		}
		lab.Balances(ctx, "")
		return nil
	},
}
