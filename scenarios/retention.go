package scenarios

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/zudojs/bank/bank"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// Keys cannot be kept for ever, so a clean-up job deletes old ones. It may
// delete completed keys and in-progress keys whose lock has expired, never
// one whose lock is still valid: Bola's first key, as old as Ada's, is
// kept because his retry holds its lock while the clean-up runs. And a retry that comes after its key was
// deleted is a new request. Here a phone that never saw its answer comes
// back 25 hours later, three times: with keys kept 24 hours (the usual
// choice) the retry moves the money a second time; with 48 hours it is
// replayed; and keys kept 30 days (the outline's longest) cover a phone
// that stays off for ten days. The window must outlast every realistic
// retry.
var Retention = &lab.Scenario{
	Name:    "retention",
	Summary: "old keys are deleted; a retry that outlives its key moves money again",
	Section: "Key retention",
	Fix:     "keeping keys longer than the longest retry, as the 48-hour and 30-day parts above did",
	Blind:   twiceBlind,
	Explain: map[string]string{
		"broken: keys kept 24 hours, a retry 25 hours late": "24 hours is the usual choice. Ada's answer is lost and her phone goes offline for a day; Bola's server crashes in the middle of his ₦2,000 tap. A day later the clean-up job runs, while Bola's retry is at work.",
		"safe: keys kept 48 hours, the same late retry":     "The same story for Bola, with the clean-up keeping keys 48 hours: longer than his phone stays offline.",
		"safe: keys kept 30 days, a phone off for ten days": "Some phones stay off for days: the clean-up keeps keys 30 days, the top of the range public payment APIs use (24 hours to 30 days).",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		store := lab.Keys(&idem.Store{LockTTL: lessonLock})
		h := lab.Server("server", &api.Transfers{DB: lab.DB, Keys: store})
		lab.Intent("Ada's ₦10,000 intent", 1, 2, 1_000_000, 1).ShownBroken()
		lab.Intent("Bola's ₦1,000 intent", 2, 1, 100_000, 1)
		lab.Intent("Bola's ₦500 intent", 2, 1, 50_000, 1)
		lab.Intent("Bola's ₦2,000 intent", 2, 1, 200_000, 1)
		at := func() string { return lab.Clock.Now().Format("Jan 2 15:04") }
		// lost: the tap's transfer is made, and its answer lost on the way.
		lost := func(who string, c api.Call) {
			c.Now = lab.Clock.Now()
			h.LoseNext(1)
			r, err := h.Handle(ctx, c)
			if !errors.Is(err, errLostResponse) {
				lab.Must(fmt.Errorf("the answer should have been lost, got %w", gotten(err)))
			}
			lab.Say("%s %s: the bank answers %d %s, but the answer is lost on the way and the phone goes offline", at(), who, r.Status, transferLabel(r.Body))
		}
		retry := func(who string, c api.Call) {
			c.Now = lab.Clock.Now()
			r := h.Send(ctx, c)
			lab.Reply(r, "%s %s: %d %s%s", at(), who, r.Status, transferLabel(r.Body), replayedNote(r.Replayed))
		}
		// cleanUp deletes the keys older than window, and says which it
		// deleted and which it kept, each with why.
		cleanUp := func(window string, d time.Duration) {
			now := lab.Clock.Now()
			why := keyStates(ctx, lab, now)
			gone, err := idem.Prune(ctx, lab.DB, now.Add(-d), now)
			lab.Must(err)
			lab.Arrow("server", postgres, fmt.Sprintf("clean-up job: delete keys older than %s, unless in progress with a valid lock: %d deleted", window, len(gone)), "")
			deleted := make([]string, len(gone))
			for i, k := range gone {
				deleted[i] = k + " (" + why[k] + ")"
			}
			var kept []string
			for _, k := range keys(ctx, lab) {
				kept = append(kept, k+" ("+why[k]+")")
			}
			lab.Say("%s the clean-up, keeping keys %s: deleted %s; kept %s", at(), window, list(deleted), list(kept))
		}
		ada := api.Call{UserID: 1, Key: "ada-offline-tap-1", Body: []byte(adaPaysBola)}
		bola := api.Call{UserID: 2, Key: "bola-offline-tap-1", Body: []byte(`{"from": 2, "to": 1, "amountKobo": 100000}`)}
		crashed := api.Call{UserID: 2, Key: "bola-crashed-tap-1", Body: []byte(`{"from": 2, "to": 1, "amountKobo": 200000}`)}
		bola2 := api.Call{UserID: 2, Key: "bola-offline-tap-2", Body: []byte(`{"from": 2, "to": 1, "amountKobo": 50000}`)}
		lab.Say("the bank keeps each idempotency key (the id an app sends with every retry of a tap), with its stored answer, for a while; then a clean-up job deletes it. It may delete a completed key, or one in progress whose lock has expired, never one whose lock is still valid. A retry that comes after its key was deleted looks like a new request.")

		lab.Part("broken: keys kept 24 hours, a retry 25 hours late")
		lab.Clock.At(0)
		lost("Ada's tap, ₦10,000 to Bola", ada)
		// Bola's server crashes once it has claimed his key: PostgreSQL
		// ends its session, and the key stays in progress, its lock
		// running out 30 s later.
		session := lab.Session(ctx)
		crashing := &api.Transfers{DB: session, Keys: store}
		crashing.Hooks.AfterClaim = func(ctx context.Context) {
			lab.Arrow("server", postgres, "crash: its session ends, and what it had open rolls back", "error")
			lab.Must(lab.KillSession(ctx, session))
		}
		first := crashed
		first.Now = lab.Clock.Now()
		if _, err := lab.Server("server", crashing).Handle(ctx, first); err == nil {
			lab.Must(errors.New("Bola's server should have crashed"))
		}
		lab.Say("%s Bola's tap, ₦2,000 to Ada: the server claims his key, which locks it for 30 s, then crashes before it transfers; the key stays in progress, no answer comes, and his phone goes offline too", at())
		// His retry, a day later, takes the key over and is held at work
		// while the clean-up runs.
		retrying := &api.Transfers{DB: lab.DB, Keys: store}
		again := crashed
		again.Now = lab.Clock.At(25 * time.Hour)
		working := lab.Hold(&retrying.Hooks.AfterClaim, func() (idem.Response, error) {
			return lab.Server("server", retrying).Handle(ctx, again)
		})
		lab.Say("%s Bola's phone is back and retries: his key's lock expired long ago, so the retry takes the key over, with a new lock valid 30 s, and starts his transfer, which is still at work when the clean-up runs, a moment later", at())
		cleanUp("24 h", 24*time.Hour)
		lab.Say("Bola's key is as old as Ada's, but his retry holds its lock: had the clean-up deleted it, another retry of his would find no key and transfer a second time while this one still works.")
		retry("Ada's phone is back and retries", ada)
		lab.Say("her key was deleted before her retry came, so the bank took the retry for a new request: a second ₦10,000 left her account, and the retry made her key afresh, as of %s.", at())
		r, err := working.Finish()
		lab.Must(err)
		moved := lab.Count(ctx, "SELECT count(*) FROM transfers WHERE from_account = 2 AND amount_kobo = 200000")
		lab.Reply(r, "%s Bola's retry finishes: %d %s; his ₦2,000 has moved %s", at(), r.Status, transferLabel(r.Body), bank.Times(int(moved)))

		lab.Part("safe: keys kept 48 hours, the same late retry")
		lab.Clock.At(49 * time.Hour)
		lost("Bola's tap, ₦1,000 to Ada", bola)
		lab.Clock.At(74 * time.Hour)
		cleanUp("48 h", 48*time.Hour)
		retry("Bola's phone is back and retries", bola)

		lab.Part("safe: keys kept 30 days, a phone off for ten days")
		lost("Bola's tap, ₦500 to Ada", bola2)
		lab.Clock.At(74*time.Hour + 10*24*time.Hour)
		cleanUp("30 days", 30*24*time.Hour)
		retry("Bola's phone, off for ten days, retries", bola2)
		lab.Balances(ctx, "")
		return nil
	},
}

// keyStates says, for each key the bank holds, what the clean-up looks
// at: completed or in progress (and its lock), and its age.
func keyStates(ctx context.Context, lab *lab.Lab, now time.Time) map[string]string {
	rows, err := lab.DB.Query(ctx, "SELECT key, status, locked_until, created_at FROM idempotency_keys ORDER BY key")
	lab.Must(err)
	states := map[string]string{}
	for rows.Next() {
		var key, status string
		var until *time.Time
		var created time.Time
		lab.Must(rows.Scan(&key, &status, &until, &created))
		state := "completed"
		switch {
		case status != "in_progress":
		case until != nil && until.After(now):
			state = "in progress, lock valid"
		default:
			state = "in progress, lock expired"
		}
		states[key] = state + ", made " + created.Format("Jan 2 15:04") + ", " + age(now.Sub(created)) + " old"
	}
	lab.Must(rows.Err())
	return states
}

// age is a key's age as a clean-up line says it: hours, or whole days
// from three days on.
func age(d time.Duration) string {
	if d >= 72*time.Hour {
		return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
	}
	return human(d)
}

// keys are the idempotency keys the bank holds, in order.
func keys(ctx context.Context, lab *lab.Lab) []string {
	rows, err := lab.DB.Query(ctx, "SELECT key FROM idempotency_keys ORDER BY key")
	lab.Must(err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	lab.Must(err)
	return out
}
