package scenarios

import (
	"context"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/wrong"
)

// UnscopedKeys: keys stored without their user. Another user who happens
// to send the same key string gets the first user's stored answer (her
// transfer, her balance), and his own transfer never happens.
var UnscopedKeys = &lab.Mistake{
	Name:    "unscoped-keys",
	Summary: "keys not scoped to the user",
	Happens: "another user sending the same key string gets the first user's stored response",
	Fix:     "keys stored under (user, key): Bola's key is his own",
	Why:     "keys are looked up by their string alone. Bola happens to send the string Ada used, so the server finds Ada's completed key and replays her answer to him: he is shown her transfer, and his own is never made.",
	Holds:   "the server looks a key up by user and key string together, so Bola's request finds no key of his: it is claimed, run and answered as his own.",
	Blind:   neverBlind,
	Explain: map[string]string{
		"two users, one key string": "Ada sends ₦10,000 to Bola; then Bola sends ₦1,000 to Ada, his app having made the same key string.",
	},
	Steps: func(ctx context.Context, lab *lab.Lab, broken bool) error {
		lab.Intent("Ada's ₦10,000", 1, 2, 1_000_000, 1)
		lab.Intent("Bola's ₦1,000", 2, 1, 100_000, 1).BrokenIf(broken)
		var h api.Handler = &api.Transfers{DB: lab.DB, Keys: lab.Keys(&idem.Store{})}
		if broken {
			h = &wrong.StoredKeys{DB: lab.DB, Mistake: wrong.Unscoped}
		}
		server := lab.Server("server", h)
		lab.Step("two users, one key string")
		for _, c := range []struct {
			who  string
			user int64
			body string
		}{{"Ada", 1, adaPaysBola}, {"Bola", 2, `{"from": 2, "to": 1, "amountKobo": 100000}`}} {
			r := server.Send(ctx, api.Call{UserID: c.user, Key: "tap-2026-09-24-0001", Body: []byte(c.body), Now: lab.Clock.Now()})
			lab.Reply(r, "%s sends key tap-2026-09-24-0001: %d%s %s", c.who, r.Status, replayedNote(r.Replayed), receiptText(r.Body))
		}
		lab.Balances(ctx, "")
		return nil
	},
}
