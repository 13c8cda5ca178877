package scenarios

import (
	"context"
	"errors"
	"fmt"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// A double tap: two copies of one request at the same moment, first on a
// database like the lesson's, which runs one query at a time: the second
// copy waits until the first has committed, then finds the key completed
// and gets the stored answer. Then on PostgreSQL with a pool, where the
// second copy looks at the key while the first is still inside its
// transaction, finds it in progress and gets 409 with Retry-After; a later
// retry gets the replay. The lab holds the first copy inside its
// transaction with a hook until the second has been sent, so the
// interleaving is the same on every run. Then a storm: 50 copies of one
// intent at once, and exactly one transfer.
var Concurrent = &lab.Scenario{
	Name:     "concurrent",
	Summary:  "a double tap and a storm of 50 copies: one claims the key, the others wait for its answer or get 409, money moves once",
	Section:  "Two copies at the same moment",
	Prevents: "a double tap moving money twice: only one copy can claim the key",
	Explain: map[string]string{
		"a database that runs one query at a time: a double tap of ₦10,000": "Some databases run one query at a time: one built into the program (PGlite, say) makes every other query wait while a transaction is open. The first copy is held after its transfer, before its commit; the second copy cannot even look at the key until the first has committed.",
		"PostgreSQL with a pool of connections: a double tap of ₦5,000":     "The realistic case: a server with a pool of connections to PostgreSQL runs both copies at once. Only one copy can insert the key's row, since (user, key) is its primary key. The first copy is held after its transfer, before its commit; the second finds the key in progress and is told to retry.",
		"a storm: 50 copies of one ₦1,000 transfer":                         "50 copies start together. The one that claims the key is held until the other 49 have their answer, so the counts below do not depend on timing.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		handler := &api.Transfers{DB: lab.DB, Keys: lab.Keys(&idem.Store{})}
		server := lab.Server("server", handler)
		lab.Intent("the double tap, one query at a time", 1, 2, 1_000_000, 1)
		lab.Intent("the double tap of ₦5,000, with a pool", 1, 2, 500_000, 1)
		lab.Intent("the storm's intent", 1, 2, 100_000, 1)
		// double sends two copies of tap through h: the first is held
		// inside its transaction while the second is sent. Behind a gate
		// (one query at a time) the second has arrived, and waits, before
		// the first goes on.
		double := func(tap api.Call, h api.Handler, gate interface {
			Arrived() <-chan struct{}
			Next()
		}) (first, second idem.Response, err error) {
			held := lab.Hold(&handler.Hooks.BeforeStore, func() (idem.Response, error) { return h.Handle(ctx, tap) })
			var err2 error
			sent := lab.Go(func() { second, err2 = h.Handle(ctx, tap) })
			if gate == nil {
				<-sent // with a pool, the second copy is answered while the first is held
			} else {
				<-gate.Arrived() // the first copy's
				<-gate.Arrived() // the second's: it waits for the first to commit
				lab.Arrow("server", postgres, "second copy waits: one query at a time, and the first copy's transaction is open", "in-progress")
			}
			first, err = held.Finish()
			if gate != nil {
				gate.Next() // one query at a time: only now can the second copy run
			}
			<-sent
			return first, second, errors.Join(err, err2)
		}

		lab.Say("a double tap sends one request twice at the same moment, with the same idempotency key (the id the app makes once per tap and sends with every copy); a storm sends it many times. Each part below is a new tap, with a key of its own.")
		lab.Part("a database that runs one query at a time: a double tap of ₦10,000")
		tap := api.Call{UserID: 1, Key: "double-tap-0000000001", Body: []byte(adaPaysBola), Now: lab.Clock.Now()}
		gate := lab.OneAtATime(handler)
		r, second, err := double(tap, lab.Server("server", gate), gate)
		lab.Must(err)
		lab.Reply(r, "first:  %d %s %s", r.Status, replayedWord(r.Replayed), errorOrOK(r.Body))
		lab.Reply(second, "second: %d %s %s", second.Status, replayedWord(second.Replayed), errorOrOK(second.Body))
		later := server.Send(ctx, tap)
		lab.Reply(later, "later:  %d %s", later.Status, replayedWord(later.Replayed))
		lab.Balances(ctx, "")

		lab.Part("PostgreSQL with a pool of connections: a double tap of ₦5,000")
		tap = api.Call{UserID: 1, Key: "double-tap-0000000002", Body: []byte(`{"from": 1, "to": 2, "amountKobo": 500000}`), Now: lab.Clock.Now()}
		r, second, err = double(tap, server, nil)
		lab.Must(err)
		lab.Reply(r, "first:  %d %s %s", r.Status, replayedWord(r.Replayed), errorOrOK(r.Body))
		lab.Reply(second, "second: %d %s %s (Retry-After: %s)", second.Status, replayedWord(second.Replayed), errorOrOK(second.Body), api.RetryAfter(second.Status))
		later = server.Send(ctx, tap)
		lab.Reply(later, "later:  %d %s", later.Status, replayedWord(later.Replayed))
		lab.Say("why the second copies differ: a database that runs one query at a time could not look at the key until the first copy had committed; with a pool the second copy looks while the first is still inside its transaction.")
		handler.Hooks.BeforeStore = nil
		lab.Balances(ctx, "")

		lab.Part("a storm: 50 copies of one ₦1,000 transfer")
		const copies = 50
		call := api.Call{UserID: 1, Key: "storm-of-copies-0000001", Body: []byte(`{"from": 1, "to": 2, "amountKobo": 100000}`), Now: lab.Clock.Now()}
		counts, err := lab.Storm(ctx, handler, call, copies)
		lab.Must(err)
		lab.Say("storm of %d copies: %s", copies, counts)
		lab.Burst("server", fmt.Sprintf("%d copies at once", copies), counts)
		again := server.Send(ctx, call)
		lab.Reply(again, "storm, later: %d %s", again.Status, replayedWord(again.Replayed))
		lab.Balances(ctx, "after the storm:")
		return nil
	},
}
