package scenarios

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
)

// SecondTransaction: the transfer commits, then the response is stored in
// a transaction of its own. The server crashes between the two commits:
// the key still says "in progress", and once its lock expires the retry
// takes it over and transfers again. In one transaction, the crash takes
// the transfer down with it.
var SecondTransaction = &Mistake{
	Name:    "second-transaction",
	Summary: "storing the response in a second transaction",
	Happens: "a crash between the two commits leaves a done transfer with no stored response; the retry transfers again",
	Fix:     "the transfer and the stored response commit in one transaction",
	Steps: crashStory(secondTransaction, "a crash between the transfer and the stored response",
		func(crash func(context.Context)) api.Hooks { return api.Hooks{BeforeStore: crash} },
		10*time.Second, 31*time.Second),
}

// NoLockExpiry: the server that claimed the key crashed, and a lock that
// never expires keeps every retry out, for ever: the user can never make
// this transfer.
var NoLockExpiry = &Mistake{
	Name:    "no-lock-expiry",
	Summary: "a lock with no expiry",
	Happens: "one crash blocks that key for ever: the user can never complete that transfer",
	Fix:     "the lock expires (30 s) and a retry takes the key over",
	Steps: crashStory(noExpiry, "the server crashes holding the key",
		func(crash func(context.Context)) api.Hooks { return api.Hooks{AfterClaim: crash} },
		10*time.Second, 31*time.Second, 24*time.Hour),
}

// crashStory: server A's session is killed at the hook's point; then a
// retry arrives at each of the times given. The broken half uses the
// leaky store with the mistake, the fixed half the real one.
func crashStory(mistake lockMistake, step string, at func(crash func(context.Context)) api.Hooks, retries ...time.Duration) func(context.Context, *Lab, bool) error {
	return func(ctx context.Context, lab *Lab, broken bool) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1).BrokenIf(broken)
		server, err := lab.Session(ctx)
		if err != nil {
			return err
		}
		hooks := at(func(ctx context.Context) { lab.Kill(ctx, server) })
		keys := &idem.Store{LockTTL: 30 * time.Second}
		var first, retry api.Handler = &api.Transfers{DB: server, Keys: keys, Hooks: hooks}, &api.Transfers{DB: lab.DB, Keys: keys}
		if broken {
			first = &leakyStore{db: server, mistake: mistake, ttl: 30 * time.Second, hooks: hooks}
			retry = &leakyStore{db: lab.DB, mistake: mistake, ttl: 30 * time.Second}
		}
		lab.Step(step)
		return crashThenRetry(ctx, lab, first, retry, retries...)
	}
}

// crashThenRetry: the first delivery dies at its hook; retries follow at
// the given times after it.
func crashThenRetry(ctx context.Context, lab *Lab, first, retry api.Handler, at ...time.Duration) error {
	body := []byte(adaPaysBola)
	const key = "crash-demo-00000000001"
	_, err := first.Handle(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(0)})
	if err == nil {
		return errors.New("the first delivery should have crashed")
	}
	lab.Say("server A claimed the key and crashed")
	for _, d := range at {
		r, err := retry.Handle(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(d)})
		if err != nil {
			return err
		}
		lab.Reply(r, "retry after %s: %d %s%s", human(d), r.Status, transferLabel(r.Body), replayedNote(r.Replayed))
	}
	return lab.Balances(ctx, "")
}

// NoFencing: the lock expires, a retry takes the key over and transfers;
// then the first server, only slow, finishes too. Without a fencing token
// nothing stops it, and both transfers commit.
var NoFencing = &Mistake{
	Name:    "no-fencing",
	Summary: "a lock expiry but no fencing token",
	Happens: "a slow server and the retry that took over both commit their transfer",
	Fix:     "storing the response needs the current lock id; the slow server's transaction rolls back",
	Steps: func(ctx context.Context, lab *Lab, broken bool) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1).BrokenIf(broken)
		body := []byte(adaPaysBola)
		const key = "crash-demo-00000000001"
		claimed, wake := make(chan struct{}), make(chan struct{})
		slow := api.Hooks{AfterClaim: func(context.Context) { close(claimed); <-wake }}
		keys := &idem.Store{LockTTL: 30 * time.Second}
		var a, b api.Handler = &api.Transfers{DB: lab.DB, Keys: keys, Hooks: slow}, &api.Transfers{DB: lab.DB, Keys: keys}
		if broken {
			a = &leakyStore{db: lab.DB, mistake: noFencing, ttl: 30 * time.Second, hooks: slow}
			b = &leakyStore{db: lab.DB, mistake: noFencing, ttl: 30 * time.Second}
		}
		lab.Step("a slow server and a takeover")
		done := make(chan error, 1)
		go func() {
			_, err := a.Handle(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(0)})
			done <- err
		}()
		<-claimed
		lab.Say("server A claimed the key and went quiet")
		r, err := b.Handle(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(31 * time.Second)})
		if err != nil {
			return err
		}
		lab.Reply(r, "retry after 31 s: %d %s", r.Status, transferLabel(r.Body))
		close(wake)
		if err := <-done; err != nil {
			lab.Say("server A wakes up: %v", err)
		} else {
			lab.Say("server A wakes up: its transfer committed too")
		}
		return lab.Balances(ctx, "")
	},
}

// Replay500: a brief outage (Ada's account row held by a maintenance job
// past the handler's lock timeout) makes the first delivery fail with
// 500. Stored as the key's answer, the 500 comes back on every retry, long
// after the outage is over.
var Replay500 = &Mistake{
	Name:    "replay-500",
	Summary: "replaying stored 500s",
	Happens: "a temporary outage becomes a permanent failure for that key",
	Fix:     "an unexpected error releases the key; the retry runs and succeeds",
	Steps: func(ctx context.Context, lab *Lab, broken bool) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1).BrokenIf(broken)
		server, err := lab.Session(ctx)
		if err != nil {
			return err
		}
		if _, err := server.Exec(ctx, "SET lock_timeout = '200ms'"); err != nil {
			return err
		}
		var h api.Handler = &api.Transfers{DB: server, Keys: &idem.Store{}}
		if broken {
			h = &storedKeys{db: server, mistake: replay500}
		}
		send := func(label string) error {
			r, err := h.Handle(ctx, api.Call{UserID: 1, Key: "outage-key-0000000001", Body: []byte(adaPaysBola), Now: lab.Clock.Now()})
			if err != nil {
				r = idem.Problem(http.StatusInternalServerError, "internal_error", "the transfer did not happen; retry with the same Idempotency-Key")
			}
			lab.Reply(r, "%s: %d %s%s", label, r.Status, transferLabel(r.Body), replayedNote(r.Replayed))
			return nil
		}
		lab.Step("a brief outage")
		maintenance, err := lab.Session(ctx)
		if err != nil {
			return err
		}
		tx, err := maintenance.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE"); err != nil {
			return err
		}
		lab.Say("a maintenance job holds Ada's account row")
		send("attempt 1")
		if err := tx.Rollback(ctx); err != nil {
			return err
		}
		lab.Say("the outage is over")
		send("attempt 2")
		send("attempt 3")
		return lab.Balances(ctx, "")
	},
}
