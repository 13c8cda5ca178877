package scenarios

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
)

// Keys cannot be kept for ever, so a clean-up job deletes old ones. It may
// delete completed keys and in-progress keys whose lock has expired, never
// one whose lock is still valid. And a retry that comes after its key was
// deleted is a new request: here Ada's phone, offline for a day, retries
// after 25 hours. With a 48-hour window the retry is replayed; with a
// 24-hour window the same retry moves her money a second time. The
// window must outlast every realistic retry.
var Retention = &lab.Scenario{
	Name:    "retention",
	Summary: "old keys are deleted; a retry that outlives its key moves money again",
	Section: "Key retention",
	Fix:     "keeping keys longer than the longest retry, as the 48-hour clean-up above did",
	Blind:   twiceBlind,
	Explain: map[string]string{
		"day one":      "Two intents complete; their phones never see the answers.",
		"next day":     "25 hours later: a key in progress whose lock a retry took over seconds ago, and the clean-up.",
		"late retries": "The phones come back online and retry with their keys.",
		"keys kept 30 days, for a phone that stays off for days": "A phone off for ten days, and a clean-up that keeps 30 days of keys.",
	},
	Run: func(ctx context.Context, lab *lab.Lab) error {
		h := lab.Server("server", &api.Transfers{DB: lab.DB, Keys: lab.Keys(&idem.Store{})})
		ada := api.Call{UserID: 1, Key: "ada-offline-0000000001", Body: []byte(adaPaysBola)}
		bola := api.Call{UserID: 2, Key: "bola-offline-000000001", Body: []byte(`{"from": 2, "to": 1, "amountKobo": 100000}`)}
		lab.Intent("Ada's ₦10,000 intent", 1, 2, 1_000_000, 1).ShownBroken()
		lab.Intent("Bola's ₦1,000 intent", 2, 1, 100_000, 1)
		send := func(who string, c api.Call) {
			c.Now = lab.Clock.Now()
			r := h.Send(ctx, c)
			lab.Reply(r, "%s %s: %d %s%s", lab.Clock.Now().Format("Jan 2 15:04"), who, r.Status, transferLabel(r.Body), replayedNote(r.Replayed))
		}
		// cleanUp deletes the keys older than window: which it deleted,
		// and which are kept.
		cleanUp := func(window time.Duration) (deleted, kept string) {
			now := lab.Clock.Now()
			gone, err := idem.Prune(ctx, lab.DB, now.Add(-window), now)
			lab.Must(err)
			return list(gone), list(keys(ctx, lab))
		}

		lab.Step("day one")
		lab.Clock.At(0)
		send("Ada's key (₦10,000 to Bola)", ada)
		send("Bola's key (₦1,000 to Ada)", bola)

		lab.Step("next day")
		now := lab.Clock.At(25 * time.Hour)
		lab.Exec(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, lock_id, locked_until, created_at)
			VALUES (3, 'chidi-slow-000000000001', 'h', 'in_progress', 'taken-over', $1, $2)`, now.Add(20*time.Second), now.Add(-30*time.Hour))
		lab.Say("Chidi's key: a request of his still in progress since yesterday, its lock taken over 10 s ago by a retry (the clean-up must not delete it)")
		deleted, kept := cleanUp(48 * time.Hour)
		lab.Say("clean-up, keeping 48 h: deleted %s; kept %s", deleted, kept)
		lab.Step("late retries")
		send("Bola's phone retries", bola)
		deleted, kept = cleanUp(24 * time.Hour)
		lab.Say("clean-up, keeping 24 h: deleted %s; kept %s", deleted, kept)
		send("Ada's phone retries", ada)

		// The outline keeps keys from 24 hours to 30 days: the longer end
		// covers a phone that stays off for days.
		lab.Part("keys kept 30 days, for a phone that stays off for days")
		bola2 := api.Call{UserID: 2, Key: "bola-offline-000000002", Body: []byte(`{"from": 2, "to": 1, "amountKobo": 50000}`)}
		lab.Intent("Bola's ₦500 intent", 2, 1, 50_000, 1)
		send("Bola's key (₦500 to Ada)", bola2)
		lab.Clock.At(25*time.Hour + 10*24*time.Hour)
		deleted, kept = cleanUp(30 * 24 * time.Hour)
		lab.Say("ten days on, clean-up keeping 30 days: deleted %s; kept %s", deleted, kept)
		send("Bola's phone, off for ten days, retries", bola2)
		lab.Balances(ctx, "")
		return nil
	},
}

// keys are the idempotency keys the bank holds, in order.
func keys(ctx context.Context, lab *lab.Lab) []string {
	rows, err := lab.DB.Query(ctx, "SELECT key FROM idempotency_keys ORDER BY key")
	lab.Must(err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	lab.Must(err)
	return out
}
