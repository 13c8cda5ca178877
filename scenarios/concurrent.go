package scenarios

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
)

// A double tap: two copies of one request at the same moment. On
// PostgreSQL with a pool, the second copy looks at the key while the first
// is still inside its transaction, finds it in progress and gets 409 with
// Retry-After; a later retry gets the replay. The lab holds the first copy
// inside its transaction with a hook until the second has its answer, so
// the interleaving is the same on every run. Then a storm: 50 copies of
// one intent at once, and exactly one transfer.
var Concurrent = &Scenario{
	Name:    "concurrent",
	Summary: "a double tap and a storm of 50 copies: one claims the key, the rest get 409, money moves once",
	Section: "Two copies at the same moment",
	Explain: map[string]string{
		"a double tap": "Only one INSERT of (user, key) can succeed. The first copy is held after its transfer,\nbefore its commit; the second finds the key in progress and is told to retry.",
		"a storm":      "50 copies start together. The one that claims the key is held until the other 49 have\ntheir answer, so the counts below do not depend on timing.",
	},
	Run: func(ctx context.Context, lab *Lab) error {
		handler := &api.Transfers{DB: lab.DB, Keys: &idem.Store{}}
		tap := api.Call{UserID: 1, Key: "double-tap-0000000001", Body: []byte(`{"from": 1, "to": 2, "amountKobo": 1000000}`), Now: lab.Clock.Now()}
		lab.Intent("the double tap", 1, 2, 1_000_000, 1)
		lab.Intent("the storm's intent", 1, 2, 100_000, 1)

		lab.Step("a double tap")
		inside, release := make(chan struct{}), make(chan struct{})
		handler.Hooks.BeforeStore = func(context.Context) { close(inside); <-release }
		first := make(chan idem.Response, 1)
		errs := make(chan error, 1)
		go func() {
			r, err := handler.Handle(ctx, tap)
			first <- r
			errs <- err
		}()
		<-inside
		second, err := handler.Handle(ctx, tap)
		close(release)
		if err := errors.Join(err, <-errs); err != nil {
			return err
		}
		handler.Hooks.BeforeStore = nil
		r := <-first
		lab.Reply(r.Status, r.Replayed, r.Body, "first:  %d %s %s", r.Status, replayedWord(r.Replayed), errorOrOK(r.Body))
		lab.Reply(second.Status, second.Replayed, second.Body, "second: %d %s %s (Retry-After: %s)", second.Status, replayedWord(second.Replayed), errorOrOK(second.Body), api.RetryAfter(second.Status))
		later, err := handler.Handle(ctx, tap)
		if err != nil {
			return err
		}
		lab.Reply(later.Status, later.Replayed, later.Body, "later:  %d %s", later.Status, replayedWord(later.Replayed))
		if err := lab.Balances(ctx, ""); err != nil {
			return err
		}

		lab.Step("a storm")
		const copies = 50
		storm := api.Call{UserID: 1, Key: "storm-of-copies-0000001", Body: []byte(`{"from": 1, "to": 2, "amountKobo": 100000}`), Now: lab.Clock.Now()}
		answered := make(chan struct{}, copies)
		handler.Hooks.BeforeStore = func(ctx context.Context) {
			// The copy that won the key waits for the other 49 answers.
			timeout := time.After(30 * time.Second)
			for i := 0; i < copies-1; i++ {
				select {
				case <-answered:
				case <-timeout:
					return // a copy is missing: the checks will say so
				}
			}
		}
		statuses := make(chan string, copies)
		var wg sync.WaitGroup
		var failures []error
		var mu sync.Mutex
		for i := 0; i < copies; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := handler.Handle(ctx, storm)
				if err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
				statuses <- fmt.Sprintf("%d %s", r.Status, errorOrOK(r.Body))
				answered <- struct{}{}
			}()
		}
		wg.Wait()
		close(statuses)
		if err := errors.Join(failures...); err != nil {
			return err
		}
		lab.Say("storm of %d copies: %s", copies, tally(statuses))
		again, err := handler.Handle(ctx, storm)
		if err != nil {
			return err
		}
		lab.Reply(again.Status, again.Replayed, again.Body, "storm, later: %d %s", again.Status, replayedWord(again.Replayed))
		return lab.Balances(ctx, "after the storm:")
	},
}

// tally counts answers, in a fixed order: "201 ok x1, 409 request_in_progress x49".
func tally(answers <-chan string) string {
	counts := map[string]int{}
	for a := range answers {
		counts[a]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x%d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}
