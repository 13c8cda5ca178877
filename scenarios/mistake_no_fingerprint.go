package scenarios

import (
	"context"
	"strings"

	"github.com/zudojs/bank/bank/api"
	"github.com/zudojs/bank/idem"
	"github.com/zudojs/bank/scenarios/lab"
	"github.com/zudojs/bank/scenarios/lab/mistakes"
	"github.com/zudojs/bank/scenarios/lab/mistakes/onpurpose"
)

// NoFingerprint: the key is reused with a different amount, and the
// server, not comparing requests, replays the first answer: the app is
// told a ₦50,000 transfer succeeded when none was made.
var NoFingerprint = &lab.Mistake{
	Mistake: mistakes.Must("no-fingerprint"),
	Happens: "a key reused for a different amount is told the earlier transfer succeeded",
	Fix:     "the request's fingerprint is stored with the key; a different request gets 422",
	Why:     "the server replays whatever answer is stored under the key without comparing the request with the one that stored it. The key sent again with ₦50,000 instead of ₦10,000 gets the ₦10,000 transfer's 201, and the app believes a ₦50,000 transfer was made.",
	Holds:   "a fingerprint (a hash of the request, its JSON keys sorted) is stored with the key; a request with another fingerprint is refused with 422 idempotency_key_reused, and nothing is replayed to it.",
	Blind:   falseBlind,
	Steps: func(ctx context.Context, lab *lab.Lab, broken bool) error {
		lies := 0
		lab.Intent("Ada's ₦10,000", 1, 2, 1_000_000, 1)
		lab.Effect("a success reported for the ₦50,000 request", 0, func(context.Context) (int, error) { return lies, nil }).BrokenIf(broken)
		var h api.Handler = &api.Transfers{DB: lab.DB, Keys: lab.Keys(&idem.Store{})}
		if broken {
			h = &onpurpose.StoredKeys{DB: lab.DB, Mistake: onpurpose.NoFingerprint, Observe: lab.KeySteps()}
		}
		server := lab.Server("server", h)
		lab.Step("one key, two amounts")
		lab.Say("Ada's app sends ₦10,000 to Bola under the key tap-2026-09-24-0001, then, by a bug, ₦50,000 under the same key:")
		for _, body := range []string{adaPaysBola, `{"from": 1, "to": 2, "amountKobo": 5000000}`} {
			r := server.Send(ctx, api.Call{UserID: 1, Key: "tap-2026-09-24-0001", Body: []byte(body), Now: lab.Clock.Now()})
			if strings.HasSuffix(body, ": 5000000}") && r.Status/100 == 2 {
				lies++
			}
			lab.Reply(r, "%-42s %d%s %s", body, r.Status, replayedNote(r.Replayed), transferLabel(r.Body))
		}
		lab.Balances(ctx, "")
		return nil
	},
}
