package scenarios

import (
	"context"
	"errors"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/mistakes/onpurpose"
)

// Mistakes, in the order of the lesson's table.
var Mistakes = []*lab.Mistake{
	NewKeyPerAttempt,
	MemoryKeys,
	SecondTransaction,
	UnscopedKeys,
	NoFingerprint,
	Replay500,
	NoLockExpiry,
	NoFencing,
}

// LookupMistake finds a mistake by name.
func LookupMistake(name string) (*lab.Mistake, bool) {
	for _, m := range Mistakes {
		if m.Name == name {
			return m, true
		}
	}
	return nil, false
}

// MistakeNames lists the mistakes' names in order.
func MistakeNames() []string {
	names := make([]string, len(Mistakes))
	for i, m := range Mistakes {
		names[i] = m.Name
	}
	return names
}

// Why the money checks hold while a mistake does its damage: every
// mistake of the lesson's table breaks "once each", in one of three ways.
var (
	twiceBlind = map[lab.Check]string{
		lab.TotalKept:    "a transfer made twice still conserves money",
		lab.LedgerAgrees: "both transfers are recorded, so the books agree",
	}
	neverBlind = map[lab.Check]string{
		lab.TotalKept:    "a transfer that never happens moves no money",
		lab.LedgerAgrees: "nothing moved, so the books agree",
	}
	falseBlind = map[lab.Check]string{
		lab.TotalKept:    "the false success moved no money",
		lab.LedgerAgrees: "nothing moved for it, so the books agree",
	}
)

// crashStory: server A's session is killed at the hook's point; then a
// retry arrives at each of the times given. The broken half uses the
// lock store made with the mistake, the fixed half the real one.
func crashStory(mistake onpurpose.LockMistake, step string, at func(crash func(context.Context)) api.Hooks, retries ...time.Duration) func(context.Context, *lab.Lab, bool) error {
	return func(ctx context.Context, lab *lab.Lab, broken bool) error {
		lab.Intent("Ada's one tap", 1, 2, 1_000_000, 1).BrokenIf(broken)
		server := lab.Session(ctx)
		hooks := at(func(ctx context.Context) {
			lab.Arrow("server A", postgres, "crash: its session ends, and what it had open rolls back", "error")
			lab.KillSession(ctx, server)
		})
		keys := lab.Keys(&idem.Store{LockTTL: lessonLock})
		var first, retry api.Handler = &api.Transfers{DB: server, Keys: keys, Hooks: hooks}, &api.Transfers{DB: lab.DB, Keys: keys}
		if broken {
			first = &onpurpose.LockStore{DB: server, Mistake: mistake, TTL: lessonLock, Hooks: hooks, Observe: lab.KeySteps()}
			retry = &onpurpose.LockStore{DB: lab.DB, Mistake: mistake, TTL: lessonLock, Observe: lab.KeySteps()}
		}
		lab.Step(step)
		lock := "which locks the key for 30 s: until the lock expires, no other request may take the key over"
		if broken && mistake == onpurpose.NoExpiry {
			lock = "which locks the key with no expiry: no other request may ever take it over"
		}
		lab.Say("Ada's ₦10,000 to Bola reaches server A, %s; the app retries through server B.", lock)
		return crashThenRetry(ctx, lab, first, retry, retries...)
	}
}

// crashThenRetry: the first delivery dies at its hook; retries follow at
// the given times after it.
func crashThenRetry(ctx context.Context, lab *lab.Lab, first, retry api.Handler, at ...time.Duration) error {
	body := []byte(adaPaysBola)
	const key = "crash-demo-00000000001"
	A, B := lab.Server("server A", first), lab.Server("server B", retry)
	_, err := A.Handle(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(0)})
	if err == nil {
		return errors.New("the first delivery should have crashed")
	}
	lab.Say("server A claimed the key and crashed")
	var status string
	lab.Query(ctx, "SELECT status FROM idempotency_keys WHERE user_id = 1 AND key = $1", []any{key}, &status)
	if id := lab.Count(ctx, "SELECT COALESCE(max(id), 0) FROM transfers"); id > 0 {
		lab.Say("  it crashed after transfer %d had committed; the key still says %s, with no answer stored", id, status)
	} else {
		lab.Say("  its transaction went with it: no transfer committed; the key says %s", status)
	}
	for _, d := range at {
		r := B.Send(ctx, api.Call{UserID: 1, Key: key, Body: body, Now: lab.Clock.At(d)})
		lab.Reply(r, "retry after %s: %d %s%s", human(d), r.Status, transferLabel(r.Body), replayedNote(r.Replayed))
	}
	if gone := rolledBack(ctx, lab); gone != "" {
		lab.Say("(%s: server A's, undone by the crash)", gone)
	}
	lab.Balances(ctx, "")
	return nil
}
