package scenarios

import (
	"context"
	"errors"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// A lock shorter than a healthy request. Server A is not dead, only slow:
// its transfer takes 8 s. With a 5 s lock, a retry at 6 s finds the lock
// expired, takes the key over and transfers; when A finishes, the fencing
// token refuses its answer and its transaction, transfer and all, rolls
// back. The money is safe, but A's work was wasted and the retry ran a
// second transfer attempt for nothing. With the lock well above the
// slowest healthy request (30 s), the same retry gets 409, and a later one
// the answer A stored.
var ShortLock = &lab.Scenario{
	Name:     "short-lock",
	Summary:  "a 5 s lock and an 8 s request: a retry takes over a healthy request, fencing saves the money, the work is wasted",
	Section:  "A server that crashes, and one that is only slow",
	Prevents: "takeovers of healthy requests, with a lock well above the slowest one",
	Explain: map[string]string{
		"a 5 s lock: Ada's ₦10,000 tap, a healthy request that takes 8 s": "Server A claims at 0 s and finishes its transfer at 8 s; the retry comes at 6 s, after the lock has expired.",
		"a 30 s lock: Ada's next tap, ₦5,000, on the same timing":         "A new tap, with a key of its own. The lock outlives the request: the retry is told to wait (409).",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		lab.Intent("Ada's ₦10,000 tap (5 s lock)", 1, 2, 1_000_000, 1)
		lab.Intent("Ada's ₦5,000 tap (30 s lock)", 1, 2, 500_000, 1)
		lab.Say("each tap carries an idempotency key, an id the app makes once and sends with every retry of that tap. A server claims the key before it works (a row in PostgreSQL, locked for a set time); once the lock expires, a retry on another server may take the key over, and the fencing token (a lock id per claim) then refuses the answer of the server that lost it. The clock is simulated.")
		for _, c := range []struct {
			part string
			ttl  time.Duration
			tap  string
			key  string
			body string
		}{
			{"a 5 s lock: Ada's ₦10,000 tap, a healthy request that takes 8 s", 5 * time.Second, "₦10,000", "short-lock-tap-000001", adaPaysBola},
			{"a 30 s lock: Ada's next tap, ₦5,000, on the same timing", 30 * time.Second, "₦5,000", "long-lock-tap-0000001", `{"from": 1, "to": 2, "amountKobo": 500000}`},
		} {
			lab.Part(c.part)
			if err := slowServer(ctx, lab, c.ttl, c.tap, c.key, []byte(c.body)); err != nil {
				return err
			}
		}
		if gone := rolledBack(ctx, lab); gone != "" {
			lab.Say("(%s: server A's, in the first part)", gone)
		}
		lab.Say("choose the lock well above the slowest healthy request (here 8 s): the fencing token keeps a takeover safe, but every takeover of a healthy request is work done twice")
		lab.Balances(ctx, "")
		return nil
	},
}

// slowServer: server A claims at 0 s and does its work at 8 s; a retry
// comes at 6 s, another at 9 s.
func slowServer(ctx context.Context, lab *lab.Lab, ttl time.Duration, tap, key string, body []byte) error {
	keys := lab.Keys(&idem.Store{LockTTL: ttl})
	session := lab.Session(ctx)
	serverA := &api.Transfers{DB: session, Keys: keys}
	serverB := lab.Server("server B", &api.Transfers{DB: lab.DB, Keys: keys})
	// A is held inside its transaction just after the claim, working
	// slowly (it holds no row yet, so the retry is not kept waiting).
	a := lab.Hold(&serverA.Hooks.AfterClaim, func() (idem.Response, error) {
		return lab.Server("server A", serverA).Handle(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(0)})
	})
	lab.Say("0 s: Ada's %s to Bola (key %s) reaches server A, which claims the key (lock %s) and starts its work, which takes 8 s; the app's retries go to server B, another copy of the server on the same database", tap, key, human(ttl))
	r := serverB.Send(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(6 * time.Second)})
	lab.Reply(r, "6 s: a retry on server B: %d %s%s", r.Status, transferLabel(r.Body), takeover(r))
	lab.Clock.At(8 * time.Second)
	done, err := a.Finish()
	switch {
	case errors.Is(err, idem.ErrLockLost):
		lab.Say("8 s: server A finishes its transfer: %v; its 8 s of work are thrown away", err)
	case err != nil:
		return err
	default:
		lab.Reply(done, "8 s: server A finishes: %d %s", done.Status, transferLabel(done.Body))
	}
	later := serverB.Send(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(9 * time.Second)})
	lab.Reply(later, "9 s: another retry: %d %s%s", later.Status, transferLabel(later.Body), replayedNote(later.Replayed))
	return nil
}

func takeover(r idem.Response) string {
	if r.TookOver {
		return " (it took the key over)"
	}
	return ""
}
