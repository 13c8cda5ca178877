package scenarios

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// Server A claims the key and goes silent before its transfer commits.
// Its claim is committed, so the key says "in progress". Ten seconds on,
// the lock is still valid: the retry gets 409, since A might only be
// slow. At 31 seconds the lock has expired: the retry takes the key over
// with a new lock id and makes the transfer. Then A turns out to have
// been slow, not dead, and finishes: its transfer runs, but storing its
// response needs the lock id it no longer holds. The fencing token
// refuses it and A's whole transaction rolls back. The clock is moved by
// hand, as in the lesson.
var Crash = &lab.Scenario{
	Name:     "crash",
	Summary:  "a server goes silent holding the key; a retry takes over; the fencing token stops the late one",
	Section:  "A server that crashes, and one that is only slow",
	Prevents: "bank mistake no-lock-expiry and bank mistake no-fencing",
	Explain: map[string]string{
		"server A claims the key": "Server A is one copy of the server, with its own connection to PostgreSQL. It claims the key at 0 s (lock valid until 30 s) and stops inside its transaction, before the transfer.",
		"retry after 10 s":        "The lock is still valid: A may only be slow. The retry must not start a second transfer.",
		"retry after 31 s":        "The lock has expired. The retry takes the key over with a new lock id (the fencing token).",
		"server A wakes up":       "A runs its transfer, then tries to store its response under its old lock id.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		body := []byte(adaPaysBola)
		const key = "crash-demo-00000000001"
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1)
		keys := lab.Keys(&idem.Store{LockTTL: lessonLock})
		sessionA := lab.Session(ctx)
		serverA := &api.Transfers{DB: sessionA, Keys: keys}
		serverB := &api.Transfers{DB: lab.DB, Keys: keys}
		A, B := lab.Server("server A", serverA), lab.Server("server B", serverB)
		// Drawn only if A's transfer really ran: the hook comes after it.
		serverA.Hooks.BeforeStore = func(context.Context) {
			lab.Arrow("server A", postgres, "its transfer runs, inside its transaction, not yet committed", "")
		}

		lab.Step("server A claims the key")
		lab.Say("Ada's ₦10,000 to Bola reaches server A with its idempotency key, the id the app sends with every retry of the tap; the retries go to server B, another copy of the server on the same database. Claiming the key marks it in progress in the key store, a table in PostgreSQL.")
		lab.Say("(the clock is simulated: server A claims the key at 0 s, which locks it for %s; until the lock expires, no other request may take the key over.)", human(keys.LockTTL))
		a := lab.Hold(&serverA.Hooks.AfterClaim, func() (idem.Response, error) {
			return A.Handle(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(0)})
		})
		// The hook runs only once the claim succeeded: the lesson's "proceed".
		lab.Say("the key store answers a claim that succeeded with \"proceed\": go ahead and transfer. In the lesson's words:")
		lab.Say("server A claimed the key: proceed and then went silent")

		lab.Step("retry after 10 s")
		early := B.Send(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(10 * time.Second)})
		lab.Reply(early, "retry after 10 s: %d %s", early.Status, errorOrOK(early.Body))

		lab.Step("retry after 31 s")
		late := B.Send(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(31 * time.Second)})
		lab.Reply(late, "retry after 31 s: %d %s", late.Status, transferLabel(late.Body))

		lab.Step("server A wakes up")
		_, err := a.Finish()
		if !errors.Is(err, idem.ErrLockLost) {
			return fmt.Errorf("server A should have lost its lock, got %w", gotten(err))
		}
		lab.Say("server A wakes up: %v", err)
		lab.Say("each claim gets a lock id of its own, the fencing token, and storing an answer needs the current one: A's was replaced at 31 s, so its answer was refused.")
		// A sequence is not rolled back: the id A's transfer took is the
		// trace that it really ran before its transaction was undone.
		lastID := lab.Count(ctx, "SELECT last_value FROM transfers_id_seq")
		lab.Say("server A's own transfer had run (it took id %d); the rollback undid it with the rest", lastID)
		lab.Say("without the fencing token both transfers would stand (bank mistake no-fencing shows it).")
		lab.Balances(ctx, "")
		return nil
	},
}
